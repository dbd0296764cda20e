// dot-product: prefer the node whose free resources align least with the pod.
//
// The FGD paper's DotProd baseline (its simulator's dot_product_score.go with
// dimext=merge, norm=max). Despite the Tetris citation there, it *minimises*
// the alignment: a node with little of what the pod asks for left free wins,
// which packs.
//
// Algorithm, per node
//   node vector  n = [cpu_free / 128000, gpu_free / 8000]   (gpu_free: Σ free milli-GPU)
//   pod vector   p = [cpu      / 128000, gpu      / 8000]   (gpu: count × milli)
//   score = trunc(100 · (1 − (n · p) / 2)), in float64 as the paper's code.
// CPU terms are 0 where the node's host resources are unknown.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class DotProductPlugin final : public Plugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "dot-product";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: the node whose free resources align least with the pod (the FGD paper's DotProd baseline).";

  /// Takes no args.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request and the node's state (memoizable).
  DotProductPlugin() : Plugin(/*memoizable=*/true) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
};

}  // namespace tessera
