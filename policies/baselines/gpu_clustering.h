// gpu-clustering: keep pods of one shape together on a node.
//
// The FGD paper's GpuClustering baseline (gpu_clustering_score.go). A GPU
// pod's shape is its GPU count and whether it takes whole GPUs or a share
// ("share-gpu", "1-gpu", "8-gpu", ...); NodeView::pod_shapes lists the shapes
// already on a node. A pod that asks for no GPU scores 0 everywhere.
//
// Algorithm, per node
//   base = 25 · (8000 − gpu_free) / 8000, integer division   (fuller nodes score higher)
//   node holds only the pod's shape           base + 75
//   node holds the pod's shape among others   base + 50
//   node holds no GPU pod                     base + 25
//   node holds only other shapes              base
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class GpuClusteringPlugin final : public Plugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "gpu-clustering";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: keep pods of one shape together on a node (the FGD paper's GpuClustering baseline).";

  /// Takes no args.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request and the node's state (memoizable).
  GpuClusteringPlugin() : Plugin(/*memoizable=*/true) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
};

}  // namespace tessera
