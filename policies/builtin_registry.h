// The registry of every plugin Tessera ships. The one place a new plugin is added.
#pragma once

#include <vector>

#include "scheduler/framework/registry.h"

namespace tessera {

/// Every built-in plugin, one line each: the list a new plugin joins.
std::vector<PluginRegistry::Entry> BuiltinPlugins();

/// A registry holding every built-in plugin (gpu-share, ...). A name listed
/// twice in BuiltinPlugins() stops the program with a message naming it.
PluginRegistry NewBuiltinRegistry();

}  // namespace tessera
