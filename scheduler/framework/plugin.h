// The placement plugin interface: the extension points of a scheduling
// profile, after kube-scheduler's framework, and the values they pass.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu_request.h"

namespace tessera {

/// Highest score ScoreNode may return (kube-scheduler's MaxNodeScore).
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
  /// The chooser's own ScoreNode of these GPUs, when the chooser also
  /// scores nodes and its ChooseGpus worked it out while choosing (fgd
  /// scores every GPU a share could take to pick one). The profile then
  /// takes it instead of asking ScoreNode again: it must be exactly what
  /// ScoreNode would return. Not part of what was chosen: choices of the
  /// same GPUs are equal.
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

/// The device indices of one node's GPUs that a pod must not get.
using GpuIndexList = absl::InlinedVector<int32_t, 8>;

/// The extension points, each named for what it decides. A plugin declares
/// those it implements (Plugin::points()); the profile asks it those only.
enum class Point : uint32_t {
  /// FilterNode: can the pod run on the node at all (host CPU and memory).
  kNodeFilter = 1u << 0,
  /// The chooser, exactly one per profile: FilterGpus, RankGpus, ChooseGpus,
  /// SharesFor. Which of a node's GPUs the pod gets, and why none can.
  kGpuChoice = 1u << 1,
  /// ExcludeGpus, ExplainExcluded: single GPUs the pod must not get, for a
  /// concern the chooser does not know (what the GPUs are measured doing).
  kGpuExclusion = 1u << 2,
  /// ChooseGpuSet: which of the GPUs the chooser ranked, taken together (how
  /// they are linked). At most one per profile.
  kGpuSetChoice = 1u << 3,
  /// FilterGpuSet: whether the set the pod would get is good enough. Only
  /// the GPU set chooser may filter its sets.
  kGpuSetFilter = 1u << 4,
  /// ScoreNode and NormalizeScores: how good a node is for the pod.
  kNodeScore = 1u << 5,
  /// The MIG chooser, at most one per profile: FilterGpus, RankGpus,
  /// ChooseGpus and SharesFor for a pod that asks for a MIG instance
  /// (CycleState::wants_mig_instance), which the chooser above is never
  /// asked about. It places the pod on one free instance of a GPU in MIG mode.
  kMigChoice = 1u << 6,
  /// ScoreNode and NormalizeScores for pods that ask for a MIG instance.
  /// kNodeScore alone scores the other pods only: most scores weigh shares
  /// and would misread an instance. A plugin whose score reads nothing of
  /// the GPU request (measured load, a random draw) declares both.
  kMigNodeScore = 1u << 7,
};

/// A set of extension points: `Point::kGpuChoice | Point::kNodeScore`.
class Points {
 public:
  constexpr Points() = default;
  constexpr Points(Point p) : bits_(static_cast<uint32_t>(p)) {}  // NOLINT: a point is a set of one
  [[nodiscard]] constexpr bool has(Point p) const { return (bits_ & static_cast<uint32_t>(p)) != 0; }
  friend constexpr Points operator|(Points a, Points b) { return Points(a.bits_ | b.bits_); }
  constexpr bool operator==(const Points&) const = default;

 private:
  constexpr explicit Points(uint32_t bits) : bits_(bits) {}
  uint32_t bits_ = 0;
};
constexpr Points operator|(Point a, Point b) { return Points(a) | Points(b); }

/// One placement plugin. It is stateless and const: it holds only its
/// validated args, so one instance serves every request thread at once.
/// It implements the extension points it declares (the methods below, in
/// groups by point); the others keep their defaults and are never called.
///
/// Every method reads the request through the request's CycleState,
/// computed once. A pod that asks for no GPU is decided by the profile, at
/// the top: it gets no GPUs, and the GPU points (choice, exclusion, set
/// choice and set filter) are never asked about it. A pod that asks for a
/// MIG instance goes to the MIG chooser instead of the chooser, and no GPU
/// set chooser is asked about it (it gets one instance of one GPU).
class Plugin {
 public:
  virtual ~Plugin() = default;
  /// The name the policy file uses for this plugin ("gpu-share").
  [[nodiscard]] virtual std::string_view Name() const = 0;
  /// The extension points this plugin implements.
  [[nodiscard]] Points points() const { return points_; }
  /// Whether every answer of this plugin (filter verdict, GPU choice, raw
  /// score) is a function of the request (salt included) and the node's
  /// state (NodeView::version) alone: not of the clock, live telemetry or
  /// other nodes. Then a caller may keep the answers while the node's
  /// version stays the same (scheduler/memo/score_memo.h). Normalising
  /// across nodes is always redone.
  [[nodiscard]] bool Memoizable() const { return memoizable_; }

  // --- Point::kNodeFilter -------------------------------------------------

  /// Whether the pod can run on `node` at all. The profile asks the node
  /// filters and the chooser's FilterGpus in the profile's order; the first
  /// rejection wins and says why.
  [[nodiscard]] virtual FilterVerdict FilterNode(const CycleState& cycle, const NodeView& node) const;

  // --- Point::kGpuChoice (the chooser) ------------------------------------

  /// Whether `node` has the GPUs the pod asks for now; when not, why, and
  /// whether freeing capacity could help (the precise reason the rejection
  /// carries).
  [[nodiscard]] virtual FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const;
  /// Appends to `ranked` every GPU of `node` that can take the pod now, the
  /// most preferred first (`ranked` comes empty). The profile drops the
  /// GPUs ruled out and lets a GPU set chooser pick among the rest; without
  /// those, the chooser's first `gpu_count()` are the choice.
  virtual void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const;
  /// The GPUs the pod gets on `node` when nothing is ruled out and there is
  /// no GPU set chooser; nullopt when the pod does not fit now. Must be the
  /// first `gpu_count()` of RankGpus; the default takes them from it, and a
  /// chooser overrides it only to be quicker or to give the choice's score.
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const;
  /// What the pod holds on each GPU of `choice` (one share per index, same
  /// order): what bind records in the pod's assignment annotation.
  [[nodiscard]] virtual std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                        const GpuChoice& choice) const;

  // --- Point::kGpuExclusion -----------------------------------------------

  /// Appends to `excluded` the device index of every GPU of `node` the pod
  /// must not get. The profile ranks the GPUs without them, so filter,
  /// prioritize and bind all steer around them. Runs on every node of every
  /// request: keep it cheap, and append nothing when nothing is ruled out.
  virtual void ExcludeGpus(const CycleState& cycle, const NodeView& node, GpuIndexList& excluded) const;
  /// The rejection when the pod fits on `node` by what pods reserved but not
  /// on the GPUs this plugin left: names the GPUs ruled out and why ("GPU 2
  /// at 97 percent utilisation (5m avg) above the 90 percent threshold").
  /// Asked only then.
  [[nodiscard]] virtual FilterVerdict ExplainExcluded(const CycleState& cycle, const NodeView& node) const;

  // --- Point::kGpuSetChoice and Point::kGpuSetFilter ----------------------

  /// Picks `gpu_count()` GPUs of `ranked` (what the chooser ranked, less the
  /// GPUs ruled out; at least `gpu_count()`), or nullopt for no opinion
  /// (the chooser's first ones then stand). The profile asks it on every
  /// node, so that filter, prioritize and bind see one and the same set.
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpuSet(const CycleState& cycle, const NodeView& node,
                                                              const RankedGpus& ranked) const;
  /// Rejects the node when `choice`, the set the pod would get there, is not
  /// good enough. Asked after every filter passed.
  [[nodiscard]] virtual FilterVerdict FilterGpuSet(const CycleState& cycle, const NodeView& node,
                                                   const GpuChoice& choice) const;

  // --- Point::kNodeScore --------------------------------------------------

  /// How good `node` is for the pod, given `choice`, the GPUs it would get
  /// there (none for a pod that asks for none). \return 0..kMaxPluginScore,
  /// higher is better.
  [[nodiscard]] virtual int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                          const GpuChoice& choice) const;
  /// Rescales this plugin's raw scores over all nodes of one request, in
  /// place, into 0..kMaxPluginScore. The default leaves them as they are.
  virtual void NormalizeScores(absl::Span<int64_t> scores) const { (void)scores; }

 protected:
  /// \param points what the plugin implements; \param memoizable see Memoizable().
  Plugin(Points points, bool memoizable) : points_(points), memoizable_(memoizable) {}

 private:
  Points points_;
  bool memoizable_;
};

}  // namespace tessera
