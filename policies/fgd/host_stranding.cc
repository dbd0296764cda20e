#include "policies/fgd/host_stranding.h"

#include <algorithm>

#include "scheduler/framework/plugin_args.h"
#include "policies/fgd/fgd.h"
#include "policies/node_resources.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> HostStrandingPlugin::New(PluginArgs& args) {
  std::optional<TargetWorkload> workload = ReadWorkloadArg(args, "workload");
  const MeasureArgs measure = ReadMeasureArgs(args);
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<HostStrandingPlugin>(*std::move(workload), measure);
}

int64_t HostStrandingPlugin::IdleNodeLoss(const PodGpuRequest& r, const NodeView& node, const GpuChoice& choice) const {
  if (node.gpu_states.empty() || node.gpus.empty()) return 0;
  for (const GpuState& g : node.gpu_states) {
    if (g.free_milli() < kOneGpu.value()) return 0;  // broken already: nothing left to keep
  }
  const int64_t gpus = static_cast<int64_t>(node.gpu_states.size());
  const int64_t cpu_free = node.host->cpu_free().value();
  const std::string& model = node.gpus[0].model;
  // A pod that takes every GPU whole is itself what the node is kept for:
  // it places a whole-node pod, and costs the node only to the reserved
  // kinds asking more CPU than it, which fit fewer nodes (an 8-GPU pod
  // asking 64 cores on the only nodes with the 88 another kind asks). One
  // GPU's worth per such kind: enough to rank the idle nodes it may take by
  // how many bigger kinds each keeps out, small enough that all of a node's
  // GPUs (which would saturate the score for every one of them) do not
  // hide that ranking, nor the stranding it resolves on a CPU-poor node.
  const bool takes_the_node =
      r.count == gpus && PerGpuMilli(r) >= kOneGpu.value() && static_cast<int64_t>(choice.gpu_indices.size()) == gpus;
  if (takes_the_node) {
    return kOneGpu.value() * workload_->reserved_kinds_fitting(gpus, cpu_free, model, r.host.cpu.value());
  }
  const int64_t before = workload_->idle_node_reserve(gpus, cpu_free, model);
  if (before == 0) return 0;
  // A pod that takes GPUs breaks it; one that takes CPU alone may leave it
  // too little for the kinds that need it.
  const int64_t after =
      choice.gpu_indices.empty() ? workload_->idle_node_reserve(gpus, cpu_free - r.host.cpu.value(), model) : 0;
  return before - after;
}

int64_t HostStrandingPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  // Unknown host resources strand nothing: the measure would be fgd's own,
  // and repeating fgd's score orders nothing fgd has not.
  if (node.host == nullptr) return 0;
  const PodGpuRequest& r = cycle.request();
  const int64_t weight = workload_->total_weight();
  const int64_t decrease =
      PlacementFragmentationDecrease(*workload_,
                                     FragmentationOptions{.host_stranding = true, .gpu_memory = measure_.gpu_memory}, r,
                                     node, choice) -
      IdleNodeLoss(r, node, choice) * weight;
  return std::min(FragmentationScore(decrease, 0, weight), kMaxPluginScore - 1);
}

}  // namespace tessera
