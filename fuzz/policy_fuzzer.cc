// The policy file (config/policy_loader.h) with every built-in plugin: the
// YAML parser underneath, the schema, each plugin's args and the telemetry
// section. A policy file is reloaded while Tessera serves, from whatever a
// ConfigMap holds.
#include "config/policy_loader.h"
#include "fuzz/fuzz_input.h"
#include "policies/builtin_registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static const PluginRegistry* const registry = new PluginRegistry(NewBuiltinRegistry());
  absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(fuzz::AsText(data, size), "policy.yaml", *registry);
  if (policy.ok() && policy->profile == nullptr) fuzz::Violated("an accepted policy has no profile");
  if (policy.ok() && (policy->profiles == nullptr || policy->profiles->default_profile() != policy->profile)) {
    fuzz::Violated("an accepted policy's profile set is not its profile and pools");
  }
  if (!policy.ok() && policy.status().message().empty()) fuzz::Violated("a refused policy says nothing");
  return 0;
}
