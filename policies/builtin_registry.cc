#include "policies/builtin_registry.h"

#include "policies/best_fit.h"
#include "policies/dot_product.h"
#include "policies/fgd.h"
#include "policies/gpu_clustering.h"
#include "policies/gpu_fit.h"
#include "policies/gpu_packing.h"
#include "policies/gpu_share.h"
#include "policies/load_aware.h"
#include "policies/nvlink_topology.h"
#include "policies/host_resources_fit.h"
#include "policies/host_stranding.h"
#include "policies/random_score.h"

namespace tessera {

PluginRegistry NewBuiltinRegistry() {
  PluginRegistry registry;
  // Names are unique by construction here; a duplicate is a programming error
  // caught by the registry test.
  (void)registry.Register(std::string(GpuSharePlugin::kName), &GpuSharePlugin::New);
  (void)registry.Register(std::string(LoadAwarePlugin::kName), &LoadAwarePlugin::New);
  (void)registry.Register(std::string(NvlinkTopologyPlugin::kName), &NvlinkTopologyPlugin::New);
  // Placement-quality plugins (the FGD paper's baselines and FGD itself;
  // config/examples/placement/ pairs them into policies).
  (void)registry.Register(std::string(HostResourcesFitPlugin::kName), &HostResourcesFitPlugin::New);
  (void)registry.Register(std::string(GpuFitPlugin::kName), &GpuFitPlugin::New);
  (void)registry.Register(std::string(RandomScorePlugin::kName), &RandomScorePlugin::New);
  (void)registry.Register(std::string(DotProductPlugin::kName), &DotProductPlugin::New);
  (void)registry.Register(std::string(GpuClusteringPlugin::kName), &GpuClusteringPlugin::New);
  (void)registry.Register(std::string(GpuPackingPlugin::kName), &GpuPackingPlugin::New);
  (void)registry.Register(std::string(BestFitPlugin::kName), &BestFitPlugin::New);
  (void)registry.Register(std::string(FgdPlugin::kName), &FgdPlugin::New);
  (void)registry.Register(std::string(HostStrandingPlugin::kName), &HostStrandingPlugin::New);
  return registry;
}

}  // namespace tessera
