// nvlink-topology: the best-connected GPUs for multi-GPU pods.
//
// Assumptions
//   - A node's GPU links come from its `tessera.io/gpu-topology` annotation
//     (k8s/gpu_topology.h). A node without a usable one is "topology
//     unknown": the plugin never takes it for NVLink-connected.
//   - A multi-GPU job is as fast as its slowest link: a ring all-reduce
//     waits on every hop. Hence the bottleneck first, then the total.
//   - The profile's GPU chooser (gpu-share) decides which GPUs can take the
//     pod's share, fractional multi-GPU pods included, and in which order it
//     likes them; this plugin picks among exactly those (GpuSetChooserPlugin), so
//     filter, prioritize and bind agree on one set.
//
// Algorithm, per node
//   1. Choose, k ≥ 2 GPUs: the best k of the GPUs the chooser ranked
//      (FindBestGpuSet: bottleneck, then total, then the chooser's order —
//      so on an NVSwitch node, where every set is as good, the pod gets what
//      gpu-share alone would give it). Exact, see scheduler/model/gpu_set_search.h.
//      k = 1 (with protectFreeSets): among the GPUs the chooser likes best,
//      all equally (its first tier), the one whose use leaves the free GPUs'
//      best pair, then quad, then set of 8 least damaged (LeastDamagingGpu);
//      the chooser's order on a tie. Other GPUs are left to the chooser.
//      Topology unknown: no opinion, the chooser's choice stands.
//   2. Filter (requireNvlink, off by default), k ≥ 2: reject a node where the
//      chosen set has no NVLink between any two of its GPUs — "never" when
//      even the idle node's best set has none or the topology is unknown,
//      "not now" when other pods hold the GPUs that would have it.
//   3. Score, k ≥ 2: the chosen set against the best set an idle node of
//      the same topology offers, 4/5 by bottleneck and 1/5 by total (each a
//      ratio in per-mille, the total's capped at 1): 100 = as good as this
//      node ever gets. Topology unknown: 0 (nothing to vouch for).
//      k = 1: 100 everywhere (one GPU has no link to rate).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

/// The validated args of nvlink-topology.
struct NvlinkTopologyArgs {
  /// Reject nodes where a multi-GPU pod's set would have no NVLink at all.
  bool require_nvlink = false;
  /// Single-GPU pods take, among the GPUs gpu-share likes equally, the one
  /// that damages the remaining best sets least.
  bool protect_free_sets = true;
};

/// Chooses and scores GPU sets. With requireNvlink the factory makes the
/// RequiredNvlinkTopologyPlugin below, which filters sets too: a profile
/// without that requirement never pays for choosing a set at filter.
class NvlinkTopologyPlugin : public Plugin, public GpuSetChooserPlugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "nvlink-topology";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "GPU-set choice, filter and score: the best-connected GPUs for multi-GPU pods.";

  /// Reads requireNvlink and protectFreeSets (booleans) from `args`.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Chooses GPU sets and scores nodes; reads only the request and the
  /// node's state (memoizable).
  explicit NvlinkTopologyPlugin(NvlinkTopologyArgs args) : Plugin(/*memoizable=*/true), args_(args) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] std::optional<GpuChoice> ChooseGpuSet(const CycleState& cycle, const NodeView& node,
                                                      const RankedGpus& ranked) const override;
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;

  [[nodiscard]] const NvlinkTopologyArgs& args() const { return args_; }

  /// Rejects a multi-GPU pod's set with no NVLink between any two of its GPUs.
  [[nodiscard]] FilterVerdict JudgeSet(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const;

 private:
  NvlinkTopologyArgs args_;
};

/// nvlink-topology with requireNvlink: also filters the sets it chooses.
class RequiredNvlinkTopologyPlugin final : public NvlinkTopologyPlugin, public GpuSetFilterPlugin {
 public:
  explicit RequiredNvlinkTopologyPlugin(NvlinkTopologyArgs args) : NvlinkTopologyPlugin(args) {}
  [[nodiscard]] FilterVerdict FilterGpuSet(const CycleState& cycle, const NodeView& node,
                                           const GpuChoice& choice) const override {
    return JudgeSet(cycle, node, choice);
  }
};

}  // namespace tessera
