#include "policies/baselines/dot_product.h"

#include "scheduler/framework/plugin_args.h"
#include "policies/node_resources.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> DotProductPlugin::New(PluginArgs& args) {
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<DotProductPlugin>();
}

int64_t DotProductPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice&) const {
  const PodGpuRequest& r = cycle.request();
  const double node_cpu = static_cast<double>(FreeCpuMilli(node)) / kMaxSpecCpuMilli;
  const double node_gpu = static_cast<double>(TotalFreeMilli(node)) / kMaxSpecGpuMilli;
  const double pod_cpu = static_cast<double>(RequestedCpuMilli(r, node)) / kMaxSpecCpuMilli;
  const double pod_gpu = static_cast<double>(RequestedGpuMilli(r)) / kMaxSpecGpuMilli;
  double alignment = 0;
  alignment += node_cpu * pod_cpu;
  alignment += node_gpu * pod_gpu;
  alignment /= 2;
  return static_cast<int64_t>(static_cast<double>(kMaxPluginScore) * (1 - alignment));
}

}  // namespace tessera
