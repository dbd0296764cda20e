// host-resources: a node must have the CPU and memory the pod requests.
//
// kube-scheduler's NodeResourcesFit for the two host resources: the placement
// simulator has no kube-scheduler in front of it; in the extender it answers
// from Tessera's model (allocatable, bound pods, binds in flight), which
// kube-scheduler's own check repeats. A node whose host resources are
// unknown (NodeView::host null: no allocatable) passes.
//
// Algorithm, per node
//   1. Host unknown, or the pod asks for no CPU and no memory: passes.
//   2. The request exceeds the node's capacity: never.
//   3. The request exceeds what is free now: not now.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class HostResourcesFitPlugin final : public Plugin, public NodeFilterPlugin {
 public:
  static constexpr std::string_view kName = "host-resources";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Filter: the node has the CPU and memory the pod requests (kube-scheduler's NodeResourcesFit, for the simulator).";

  /// Takes no args.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Filters nodes; reads only the request and the node's state (memoizable).
  HostResourcesFitPlugin() : Plugin(/*memoizable=*/true) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] FilterVerdict FilterNode(const CycleState& cycle, const NodeView& node) const override;
};

}  // namespace tessera
