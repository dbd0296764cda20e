#include "policies/builtin_registry.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "policies/baselines/best_fit.h"
#include "policies/baselines/dot_product.h"
#include "policies/fgd/fgd.h"
#include "policies/baselines/gpu_clustering.h"
#include "policies/baselines/gpu_fit.h"
#include "policies/baselines/gpu_packing.h"
#include "policies/gpu_share/gpu_share.h"
#include "policies/load_aware/load_aware.h"
#include "policies/mig_partition/mig_partition.h"
#include "policies/nvlink_topology/nvlink_topology.h"
#include "policies/baselines/host_resources_fit.h"
#include "policies/fgd/host_stranding.h"
#include "policies/baselines/random_score.h"

namespace tessera {

std::vector<PluginRegistry::Entry> BuiltinPlugins() {
  return {
      {GpuSharePlugin::kName, &GpuSharePlugin::New, GpuSharePlugin::kSummary},
      {LoadAwarePlugin::kName, &LoadAwarePlugin::New, LoadAwarePlugin::kSummary},
      {NvlinkTopologyPlugin::kName, &NvlinkTopologyPlugin::New, NvlinkTopologyPlugin::kSummary},
      {MigPartitionPlugin::kName, &MigPartitionPlugin::New, MigPartitionPlugin::kSummary},
      // Placement-quality plugins (the FGD paper's baselines and FGD itself;
      // config/examples/placement/ pairs them into policies).
      {HostResourcesFitPlugin::kName, &HostResourcesFitPlugin::New, HostResourcesFitPlugin::kSummary},
      {GpuFitPlugin::kName, &GpuFitPlugin::New, GpuFitPlugin::kSummary},
      {RandomScorePlugin::kName, &RandomScorePlugin::New, RandomScorePlugin::kSummary},
      {DotProductPlugin::kName, &DotProductPlugin::New, DotProductPlugin::kSummary},
      {GpuClusteringPlugin::kName, &GpuClusteringPlugin::New, GpuClusteringPlugin::kSummary},
      {GpuPackingPlugin::kName, &GpuPackingPlugin::New, GpuPackingPlugin::kSummary},
      {BestFitPlugin::kName, &BestFitPlugin::New, BestFitPlugin::kSummary},
      {FgdPlugin::kName, &FgdPlugin::New, FgdPlugin::kSummary},
      {HostStrandingPlugin::kName, &HostStrandingPlugin::New, HostStrandingPlugin::kSummary},
  };
}

PluginRegistry NewBuiltinRegistry() {
  absl::StatusOr<PluginRegistry> registry = PluginRegistry::FromList(BuiltinPlugins());
  if (!registry.ok()) {
    // A name listed twice above: a programming error every test run hits at
    // once, so it stops the program rather than picking one of the two.
    std::fprintf(stderr, "tessera: built-in plugin registry: %s\n", std::string(registry.status().message()).c_str());
    std::abort();
  }
  return *std::move(registry);
}

}  // namespace tessera
