// Extension points of a scheduling profile, after kube-scheduler's framework.
//
// A plugin is stateless and const: it holds only its validated args, so one
// instance serves every request thread at once. It implements one or more of
// the extension points below; the profile discovers which at construction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu_request.h"

namespace tessera {

/// Highest score a ScorePlugin may return (kube-scheduler's MaxNodeScore).
inline constexpr int64_t kMaxPluginScore = 100;
/// Highest score on the extender wire (kube-scheduler's MaxExtenderPriority).
inline constexpr int64_t kMaxWireScore = 10;

/// Why a node was rejected, in kube-scheduler's vocabulary.
enum class FilterCode {
  kSuccess,
  kUnschedulable,              ///< Not now: freeing capacity (preemption) may help -> FailedNodes.
  kUnschedulableUnresolvable,  ///< Never for this pod -> FailedAndUnresolvableNodes.
};

/// A plugin's verdict on one node.
struct FilterVerdict {
  FilterCode code = FilterCode::kSuccess;
  /// Stable, low-cardinality label for metrics ("insufficient_gpu_compute").
  std::string_view reason_code;
  /// The sentence kube-scheduler shows the user ("GPU 3 has 120/1000 milli free, pod needs 250").
  std::string message;

  static FilterVerdict Success() { return {}; }
  static FilterVerdict NotNow(std::string_view code, std::string message) {
    return {FilterCode::kUnschedulable, code, std::move(message)};
  }
  static FilterVerdict Never(std::string_view code, std::string message) {
    return {FilterCode::kUnschedulableUnresolvable, code, std::move(message)};
  }
  [[nodiscard]] bool ok() const { return code == FilterCode::kSuccess; }
};

/// The GPUs a pod would get on one node: device indices, in the order chosen.
struct GpuChoice {
  absl::InlinedVector<int32_t, 8> gpu_indices;
  /// The chooser's own Score of these GPUs, when the chooser is also a score
  /// plugin and worked it out while choosing (fgd scores every GPU a share
  /// could take to pick one). The profile then takes it instead of asking
  /// Score again: it must be exactly what Score would return. Not part of
  /// what was chosen: choices of the same GPUs are equal.
  std::optional<int64_t> chooser_score;
  bool operator==(const GpuChoice& other) const { return gpu_indices == other.gpu_indices; }
};

/// A GPU that can take the pod now, in a GPU chooser's order of preference.
struct RankedGpu {
  int32_t index = 0;  ///< Device index.
  /// Equal tiers: the chooser likes the GPUs equally, and only its last
  /// resort (the lower index) orders them. Tiers never decrease down a list.
  int32_t tier = 0;
  bool operator==(const RankedGpu&) const = default;
};
using RankedGpus = absl::InlinedVector<RankedGpu, 16>;

class Plugin {
 public:
  virtual ~Plugin() = default;
  /// The name the policy file uses for this plugin ("gpu-share").
  [[nodiscard]] virtual std::string_view Name() const = 0;
  /// Whether every answer of this plugin (filter verdict, GPU choice, raw
  /// score) is a function of the request (salt included) and the node's
  /// state (NodeView::version) alone: not of the clock, live telemetry or
  /// other nodes. Then a caller may keep the answers while the node's
  /// version stays the same (scheduler/memo/score_memo.h). Normalising
  /// across nodes is always redone. False, the safe default, is never wrong.
  [[nodiscard]] virtual bool Memoizable() const { return false; }
};

/// Decides whether the pod can run on a node at all.
class FilterPlugin : public virtual Plugin {
 public:
  [[nodiscard]] virtual FilterVerdict Filter(const PodGpuRequest& request,
                                             const NodeView& node) const = 0;
};

/// Picks which GPUs of a node the pod would get. A profile has exactly one.
class GpuChooserPlugin : public virtual Plugin {
 public:
  /// \return nullopt when the pod does not fit on the node now.
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpus(const PodGpuRequest& request,
                                                            const NodeView& node) const = 0;
  /// What the pod holds on each GPU of `choice` (one share per index, same
  /// order): what bind records in the pod's assignment annotation.
  [[nodiscard]] virtual std::vector<GpuShare> SharesFor(const PodGpuRequest& request, const NodeView& node,
                                                        const GpuChoice& choice) const = 0;
  /// Every GPU of `node` that can take the pod now, the most preferred first,
  /// for a GpuSetPlugin to choose among; ChooseGpus must be its first
  /// `request.count`. The default, nullopt, means this chooser cannot rank:
  /// its ChooseGpus then stands and no GpuSetPlugin is consulted.
  [[nodiscard]] virtual std::optional<RankedGpus> RankGpus(const PodGpuRequest& request,
                                                           const NodeView& node) const {
    (void)request;
    (void)node;
    return std::nullopt;
  }
};

/// Picks which of the GPUs the chooser ranked a pod gets, for a concern the
/// chooser does not know (how the GPUs are linked). A profile has at most
/// one; without one, the chooser's choice is final. The profile asks it on
/// every node, so that filter, prioritize and bind see one and the same set.
class GpuSetPlugin : public virtual Plugin {
 public:
  /// \param ranked what RankGpus returned; at least `request.count` GPUs.
  /// \return `request.count` GPUs of `ranked`, or nullopt for no opinion (the
  ///   chooser's first `count` then stand).
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpuSet(const PodGpuRequest& request, const NodeView& node,
                                                              const RankedGpus& ranked) const = 0;
  /// Whether FilterGpuSet can reject anything with these args. When false the
  /// profile does not choose GPUs while filtering.
  [[nodiscard]] virtual bool FiltersGpuSets() const { return false; }
  /// Rejects the node when the set the pod would get there is not good enough.
  /// Runs after every FilterPlugin passed. \param choice what the profile's
  /// ChooseGpus gives on `node`.
  [[nodiscard]] virtual FilterVerdict FilterGpuSet(const PodGpuRequest& request, const NodeView& node,
                                                   const GpuChoice& choice) const {
    (void)request;
    (void)node;
    (void)choice;
    return FilterVerdict::Success();
  }
};

/// The device indices of one node's GPUs that a pod must not get.
using GpuIndexList = absl::InlinedVector<int32_t, 8>;

/// Rules out single GPUs of a node for a pod, for a concern the GPU chooser
/// does not know (what the GPUs are measured doing). The profile ranks the
/// GPUs without them, so filter, prioritize and bind all steer around them:
/// the node is rejected only when too few GPUs remain, and then with this
/// plugin's explanation.
class GpuFilterPlugin : public virtual Plugin {
 public:
  /// Appends to `excluded` the device index of every GPU of `node` the pod
  /// must not get. Runs on every node of every request: keep it cheap, and
  /// append nothing when nothing is ruled out.
  virtual void ExcludeGpus(const PodGpuRequest& request, const NodeView& node,
                           GpuIndexList& excluded) const = 0;
  /// The rejection when the pod fits on `node` by what pods reserved but not
  /// on the GPUs this plugin left: names the GPUs ruled out and why ("GPU 2 at
  /// 97% utilisation (5m avg) above the 90% threshold"). Called only then.
  [[nodiscard]] virtual FilterVerdict ExplainExcluded(const PodGpuRequest& request,
                                                      const NodeView& node) const = 0;
};

/// Ranks nodes that passed filtering.
class ScorePlugin : public virtual Plugin {
 public:
  /// \param choice the GPUs the chooser picked on this node.
  /// \return 0..kMaxPluginScore, higher is better.
  [[nodiscard]] virtual int64_t Score(const PodGpuRequest& request, const NodeView& node,
                                      const GpuChoice& choice) const = 0;
  /// Rescales this plugin's raw scores over all nodes of one request, in place,
  /// into 0..kMaxPluginScore. The default leaves them as they are.
  virtual void NormalizeScores(absl::Span<int64_t> scores) const { (void)scores; }
};

}  // namespace tessera
