#include "policies/host_stranding.h"

#include <algorithm>

#include "scheduler/framework/plugin_args.h"
#include "policies/fgd.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> HostStrandingPlugin::New(PluginArgs& args) {
  std::optional<TargetWorkload> workload = ReadWorkloadArg(args, "workload");
  const MeasureArgs measure = ReadMeasureArgs(args);
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<HostStrandingPlugin>(*std::move(workload), measure);
}

int64_t HostStrandingPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  // Unknown host resources strand nothing: the measure would be fgd's own,
  // and repeating fgd's score orders nothing fgd has not.
  if (node.host == nullptr) return 0;
  const int64_t score =
      PlacementFragmentationScore(*workload_, FragmentationOptions{.host_stranding = true, .gpu_memory = measure_.gpu_memory},
                                  cycle.request(), node, choice);
  return std::min(score, kMaxPluginScore - 1);
}

}  // namespace tessera
