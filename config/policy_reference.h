// docs/reference/policy-file.md, generated from the code: every plugin the
// registry builds, with its summary and each arg's type, range, default and
// meaning exactly as its factory's getters declare them
// (PluginArgs::described()); then every top-level section (pools, tenants,
// telemetry, ...) with each field as its reader's getters declare it
// (DescribePolicySections()). scripts/generate-reference.sh writes the page; a
// ctest test fails when the page and the code disagree.
#pragma once

#include <string>

#include "scheduler/framework/registry.h"

namespace tessera {

/// The page's markdown. Each factory runs once on empty args to declare its
/// args; a factory that requires an arg (fgd's `workload`) fails that run,
/// which is expected and still declares every arg it reads. Each section's
/// reader runs once on an empty map the same way.
std::string PolicyFileReferenceMarkdown(const PluginRegistry& registry);

}  // namespace tessera
