// What a placement must keep, whatever the policy: checked by the replay on
// every placement before the cluster records it (sim/replay.h), so a policy
// or a cluster bug that puts a pod where it cannot run shows up as a counted
// violation that fails the run (RunExperiment), never as a quietly better
// Alloc %.
#pragma once

#include <optional>
#include <string>

#include "absl/types/span.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_request.h"

namespace tessera::sim {

/// Why a pod asking `request` may not hold `shares` on `node` (as the node
/// is before it does); nullopt when it may:
///  - a pod asking for no GPU holds none; any other one GPU per GPU asked
///    (one for a MIG instance), each a distinct, healthy GPU of the node;
///  - a MIG pod holds an instance of its profile that its GPU, in MIG mode,
///    lists and no pod holds yet (GpuUsage::mig_held_starts): an instance
///    is never given twice;
///  - any other pod holds no GPU in MIG mode and names no instance;
///  - a pod selecting vendors holds only GPUs of those vendors.
std::optional<std::string> PlacementViolation(const PodGpuRequest& request, const NodeView& node,
                                              absl::Span<const GpuShare> shares);

/// Violations over a run: how many, and the first one's words.
struct PlacementViolations {
  int64_t count = 0;
  std::string first;  ///< "pod <position> on <node>: <why>"; empty when count is 0.

  void Record(size_t position, const NodeView& node, std::string why);
};

}  // namespace tessera::sim
