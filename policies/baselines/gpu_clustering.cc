#include "policies/baselines/gpu_clustering.h"

#include <algorithm>

#include "scheduler/framework/plugin_args.h"
#include "policies/node_resources.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> GpuClusteringPlugin::New(PluginArgs& args) {
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuClusteringPlugin>();
}

int64_t GpuClusteringPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice&) const {
  const PodGpuRequest& r = cycle.request();
  const int64_t milli = PerGpuMilli(r);
  if (milli <= 0) return 0;
  const GpuPodShape shape{.gpus = r.count, .whole_gpu = milli >= kOneGpu.value(), .pods = 1};
  const int64_t quarter = kMaxPluginScore / 4;
  const int64_t base = quarter * (kMaxSpecGpuMilli - TotalFreeMilli(node)) / kMaxSpecGpuMilli;
  const bool has_shape = std::any_of(node.pod_shapes.begin(), node.pod_shapes.end(),
                                     [&](const GpuPodShape& s) { return s.SameShape(shape); });
  if (has_shape) return base + (node.pod_shapes.size() == 1 ? 3 * quarter : 2 * quarter);
  return base + (node.pod_shapes.empty() ? quarter : 0);
}

}  // namespace tessera
