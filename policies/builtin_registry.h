// The registry of every plugin Tessera ships. The one place a new plugin is added.
#pragma once

#include "scheduler/framework/registry.h"

namespace tessera {

/// A registry holding every built-in plugin (gpu-share, ...).
PluginRegistry NewBuiltinRegistry();

}  // namespace tessera
