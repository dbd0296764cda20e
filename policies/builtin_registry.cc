#include "policies/builtin_registry.h"

#include "policies/gpu_share.h"

namespace tessera {

PluginRegistry NewBuiltinRegistry() {
  PluginRegistry registry;
  // Names are unique by construction here; a duplicate is a programming error
  // caught by the registry test.
  (void)registry.Register(std::string(GpuSharePlugin::kName), &GpuSharePlugin::New);
  return registry;
}

}  // namespace tessera
