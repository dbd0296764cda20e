// gpu-packing: fill shared GPUs first, then idle GPUs of used nodes, then
// empty nodes, smallest first.
//
// The FGD paper's GpuPacking baseline (gpu_packing_score.go). Integer
// scores, highest first; a pod that asks for no GPU scores 0 everywhere.
//
// Algorithm, per node
//   1. Every GPU idle (an empty node, whatever its CPU use):
//        max(33 − #GPUs, #GPUs)                       1 GPU → 32, 8 GPUs → 25
//   2. Else take the GPUs the pod fits on (free ≥ its milli) in ascending
//      order of free milli until it has its count:
//        any taken GPU idle:  max(50 − #idle taken, 33)
//        only shared GPUs:    max(100 − Σ ⌊free·100/1000⌋ / 10, 50)  a tighter fit scores higher
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class GpuPackingPlugin final : public Plugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "gpu-packing";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: fill shared GPUs first, then idle GPUs of used nodes, then empty nodes (the FGD paper's GpuPacking baseline).";

  /// Takes no args.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request and the node's state (memoizable).
  GpuPackingPlugin() : Plugin(/*memoizable=*/true) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
};

}  // namespace tessera
