// host-stranding: among nodes FGD finds equally good, prefer the one where
// the pod strands the least GPU behind short CPU.
//
// FGD's score (policies/fgd/fgd.h) is an integer 0..100 and many nodes share
// the best one; kube-scheduler and the placement simulator then take any of
// them. This plugin scores the same placement with FGD's measure extended
// by host stranding (policies/fgd/fragmentation.h): GPU on a node that the
// node's free CPU cannot serve at the workload's CPU-to-GPU ratio counts as
// fragment too. Its scores stay below 100, so that at weight 1 beside fgd at
// weight 100 it only orders nodes fgd scores equal (the shipped default
// policy gives it 20: there it also outweighs a one-point fgd difference
// where its own scores differ by more than 5, which is where the pod
// strands noticeably more GPU behind CPU on one node than on the other;
// docs/experiments/2026-11-26-where-cpu-binds.md):
//
//   plugins:
//     - name: fgd
//       weight: 100
//       args: {workload: [...]}
//     - name: host-stranding
//       weight: 1
//       args: {workload: [...]}      # the same workload
//
// An idle node's CPU shortfall is no stranding where a pod that takes the
// whole node is what it waits for; yet the measure counts it, and rewards
// any pod asking less CPU per GPU than the mix for lowering it: breaking
// idle nodes. Where the kinds that take whole nodes are short of idle ones
// (TargetWorkload::idle_node_reserve: their expected need is a quarter or
// more of the idle nodes they fit, as the learned mix was told the
// cluster), breaking one also counts as a fragment of all its GPUs: the
// whole-node pod it would have placed (docs/experiments/2026-11-27-cpu-0.9-and-0.6.md). A
// pod that takes the whole node places such a pod itself: it is charged one
// GPU per reserved kind asking more CPU than it that fits the node, so that
// of the idle nodes it may take it takes one the fewest bigger kinds need.
//
// It scores the GPUs the profile's chooser picked (fgd's). Where host
// resources are unknown (a node without allocatable) it scores 0 and so
// adds nothing to fgd.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "policies/fgd/fgd.h"
#include "policies/fgd/fragmentation.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/workload_aware.h"

namespace tessera {

class PluginArgs;

class HostStrandingPlugin final : public Plugin, public ScorePlugin, public WorkloadAware {
 public:
  static constexpr std::string_view kName = "host-stranding";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: among nodes fgd finds equally good, the one where the pod strands the least GPU behind short CPU.";

  /// Reads `workload` (required; see fragmentation.h), and `kindWeights`
  /// and `gpuMemory` as fgd does (policies/fgd/fgd.h): give it fgd's.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request and the node's state (memoizable).
  /// `workload` as the arrivals' mix: the plugin weighs it as `measure` says.
  explicit HostStrandingPlugin(TargetWorkload workload, MeasureArgs measure = {})
      : HostStrandingPlugin(std::make_shared<const TargetWorkload>(std::move(workload)), measure) {}
  /// `prior`: the policy file's list, which learned mixes are blended with
  /// (WithWorkload); null: `workload` is that list.
  explicit HostStrandingPlugin(std::shared_ptr<const TargetWorkload> workload, MeasureArgs measure = {},
                               std::shared_ptr<const TargetWorkload> prior = nullptr)
      : Plugin(/*memoizable=*/true), prior_(prior != nullptr ? std::move(prior) : workload),
        workload_(Weighed(std::move(workload), measure)), measure_(measure) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  /// FGD's score under the extended measure, at most kMaxPluginScore − 1;
  /// 0 where the node's host resources are unknown.
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  /// host-stranding measuring against `workload` (a learned mix) with its
  /// own list blended in (MixedWithPrior).
  [[nodiscard]] std::shared_ptr<const Plugin> WithWorkload(
      std::shared_ptr<const TargetWorkload> workload) const override {
    return std::make_shared<const HostStrandingPlugin>(MixedWithPrior(*workload, *prior_), measure_, prior_);
  }
  /// The workload it measures against (weighed).
  [[nodiscard]] const TargetWorkload& workload() const { return *workload_; }
  [[nodiscard]] const TargetWorkload& MeasuredWorkload() const override { return *workload_; }

 private:
  // What placing the pod on `node` costs the kinds that take whole nodes,
  // milli-GPU: the reserve the node loses if it is idle (TargetWorkload::
  // idle_node_reserve); 0 on a node some pod holds already.
  [[nodiscard]] int64_t IdleNodeLoss(const PodGpuRequest& r, const NodeView& node, const GpuChoice& choice) const;

  std::shared_ptr<const TargetWorkload> prior_;     // the policy file's list, by arrivals
  std::shared_ptr<const TargetWorkload> workload_;  // never null; weighed
  MeasureArgs measure_;
};

}  // namespace tessera
