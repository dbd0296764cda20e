// A policy document loaded with the built-in plugins: the tests of the
// loader's sections and of what the services do with a loaded policy.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"

namespace tessera::testing {

/// LoadPolicyDocument with the built-in registry; `file` names the document
/// in the positions of its errors.
inline absl::StatusOr<LoadedPolicy> LoadWithBuiltins(std::string_view yaml, std::string_view file = "policy.yaml") {
  static const PluginRegistry registry = NewBuiltinRegistry();
  return LoadPolicyDocument(yaml, file, registry);
}

}  // namespace tessera::testing
