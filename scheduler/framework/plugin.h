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
#include "absl/status/status.h"
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

/// One placement plugin: a name and its validated args. It is stateless
/// and const, so one instance serves every request thread at once.
///
/// What it decides, it says by implementing the extension points' small
/// interfaces below (one per point, as kube-scheduler's framework has
/// FilterPlugin, ScorePlugin, ReservePlugin): `class GpuSharePlugin final :
/// public Plugin, public GpuChooserPlugin, public ScorePlugin`. The profile
/// finds them once, when it is built (Profile::Create), by asking the
/// plugin whether it is one; it then asks each plugin only the points it
/// implements. Adding a point never touches a plugin that does not need it.
///
/// Every method reads the request through the request's CycleState,
/// computed once. The profile routes a request by its kind
/// (CycleState::kind): a pod that asks for no GPU gets none on every node,
/// and no GPU point (choice, exclusion, set choice, set filter) is asked
/// about it; a pod that asks for shares or whole GPUs goes to the chooser
/// that places shares, a pod that asks for a MIG instance to the one that
/// places instances, and no GPU set chooser is asked about it (it gets one
/// instance of one GPU).
class Plugin {
 public:
  virtual ~Plugin() = default;
  /// The name the policy file uses for this plugin ("gpu-share").
  [[nodiscard]] virtual std::string_view Name() const = 0;
  /// Whether every answer of this plugin (filter verdict, GPU choice, raw
  /// score) is a function of the request (salt included) and the node's
  /// state (NodeView::version) alone: not of the clock, live telemetry or
  /// other nodes. Then a caller may keep the answers while the node's
  /// version stays the same (NodeAnswerCache in profile_run.h). Normalising
  /// across nodes is always redone.
  [[nodiscard]] bool Memoizable() const { return memoizable_; }

 protected:
  explicit Plugin(bool memoizable) : memoizable_(memoizable) {}

 private:
  bool memoizable_;
};

/// Node filter: can the pod run on the node at all (host CPU and memory).
class NodeFilterPlugin {
 public:
  virtual ~NodeFilterPlugin() = default;
  /// The profile asks the node filters and the request's chooser's
  /// FilterGpus in the profile's order; the first rejection wins and says why.
  [[nodiscard]] virtual FilterVerdict FilterNode(const CycleState& cycle, const NodeView& node) const = 0;
};

/// GPU choice: which of a node's GPUs the pod gets, and why none can. A
/// profile has exactly one chooser placing GpuRequestKind::kShares and at
/// most one placing kMigInstance; each is asked only about its kind.
class GpuChooserPlugin {
 public:
  virtual ~GpuChooserPlugin() = default;
  /// The kind of request this chooser places (never kNone).
  [[nodiscard]] virtual GpuRequestKind Places() const { return GpuRequestKind::kShares; }
  /// Whether `node` has the GPUs the pod asks for now; when not, why, and
  /// whether freeing capacity could help (the precise reason the rejection
  /// carries).
  [[nodiscard]] virtual FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const;
  /// Appends to `ranked` every GPU of `node` that can take the pod now, the
  /// most preferred first (`ranked` comes empty). The profile drops the
  /// GPUs ruled out and lets a GPU set chooser pick among the rest; without
  /// those, the chooser's first `gpu_count()` are the choice.
  virtual void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const = 0;
  /// The GPUs the pod gets on `node` when nothing is ruled out and there is
  /// no GPU set chooser; nullopt when the pod does not fit now. Must be the
  /// first `gpu_count()` of RankGpus; the default takes them from it, and a
  /// chooser overrides it only to be quicker or to give the choice's score.
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const;
  /// What the pod holds on each GPU of `choice` (one share per index, same
  /// order): what bind records in the pod's assignment annotation. The
  /// default: its guarantee, limit and memory per GPU.
  [[nodiscard]] virtual std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                        const GpuChoice& choice) const;
};

/// GPU exclusion: single GPUs the pod must not get, for a concern the
/// chooser does not know (what the GPUs are measured doing). Asked only
/// about pods that ask for shares or whole GPUs: a MIG instance is isolated
/// in hardware from the rest of its GPU.
class GpuExclusionPlugin {
 public:
  virtual ~GpuExclusionPlugin() = default;
  /// Appends to `excluded` the device index of every GPU of `node` the pod
  /// must not get. The profile ranks the GPUs without them, so filter,
  /// prioritize and bind all steer around them. Runs on every node of every
  /// request: keep it cheap, and append nothing when nothing is ruled out.
  virtual void ExcludeGpus(const CycleState& cycle, const NodeView& node, GpuIndexList& excluded) const = 0;
  /// The rejection when the pod fits on `node` by what pods reserved but not
  /// on the GPUs this plugin left: names the GPUs ruled out and why ("GPU 2
  /// at 97 percent utilisation (5m avg) above the 90 percent threshold").
  /// Asked only then.
  [[nodiscard]] virtual FilterVerdict ExplainExcluded(const CycleState& cycle, const NodeView& node) const = 0;
};

/// GPU set choice: which of the GPUs the chooser ranked, taken together
/// (how they are linked). At most one per profile.
class GpuSetChooserPlugin {
 public:
  virtual ~GpuSetChooserPlugin() = default;
  /// Picks `gpu_count()` GPUs of `ranked` (what the chooser ranked, less the
  /// GPUs ruled out; at least `gpu_count()`), or nullopt for no opinion
  /// (the chooser's first ones then stand). The profile asks it on every
  /// node, so that filter, prioritize and bind see one and the same set.
  [[nodiscard]] virtual std::optional<GpuChoice> ChooseGpuSet(const CycleState& cycle, const NodeView& node,
                                                              const RankedGpus& ranked) const = 0;
};

/// GPU set filter: whether the set the pod would get is good enough. Only
/// the GPU set chooser may filter its sets (Profile::Create checks).
class GpuSetFilterPlugin {
 public:
  virtual ~GpuSetFilterPlugin() = default;
  /// Rejects the node when `choice`, the set the pod would get there, is not
  /// good enough. Asked after every filter passed.
  [[nodiscard]] virtual FilterVerdict FilterGpuSet(const CycleState& cycle, const NodeView& node,
                                                   const GpuChoice& choice) const = 0;
};

/// Score: how good a node is for the pod.
class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  /// Whether this plugin scores requests of `kind`; the others it scores 0
  /// everywhere (which changes no order). By default every kind but a MIG
  /// instance: most scores weigh shares and would misread an instance. A
  /// score that reads nothing of the GPU request (a random draw) scores
  /// every kind; the MIG chooser's scores only instances.
  [[nodiscard]] virtual bool Scores(GpuRequestKind kind) const { return kind != GpuRequestKind::kMigInstance; }
  /// How good `node` is for the pod, given `choice`, the GPUs it would get
  /// there (none for a pod that asks for none). \return 0..kMaxPluginScore,
  /// higher is better.
  [[nodiscard]] virtual int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                          const GpuChoice& choice) const = 0;
};

/// Score normalisation: rescales one score plugin's raw scores over all
/// nodes of one request (kube-scheduler's ScoreExtensions). Only a score
/// plugin may normalise (Profile::Create checks); without it the raw scores
/// stand.
class NormalizeScorePlugin {
 public:
  virtual ~NormalizeScorePlugin() = default;
  /// Rescales this plugin's raw scores of the nodes where the pod fits, in
  /// place, into 0..kMaxPluginScore.
  virtual void NormalizeScores(absl::Span<int64_t> scores) const = 0;
};

/// Reserve and Unreserve: the pod is about to hold `shares` on `node`
/// (its bind, or its filter assuming it on the one node kube-scheduler
/// will bind it to). The framework's own bookkeeping (the cluster model's
/// reservation, which guards capacity) is not a plugin's; a plugin that
/// keeps state of its own about pods, or must veto a placement at the last
/// moment, implements this. Reserve runs in profile order after the
/// profile chose the GPUs; the first error stops it, and every plugin
/// already reserved is unreserved in reverse order. Unreserve runs when
/// the reservation is given up (the bind failed or never came); it must
/// be idempotent and must not fail.
class ReservePlugin {
 public:
  virtual ~ReservePlugin() = default;
  /// OK to go on; an error (its message is what the bind reports) refuses the placement.
  [[nodiscard]] virtual absl::Status Reserve(const CycleState& cycle, const NodeView& node,
                                             absl::Span<const GpuShare> shares) const = 0;
  /// Undoes what Reserve did for the pod on `node_name`.
  virtual void Unreserve(const CycleState& cycle, std::string_view node_name,
                         absl::Span<const GpuShare> shares) const = 0;
};

/// `plugin` as the interface `Point` (GpuChooserPlugin, ScorePlugin, …), or
/// null when it does not implement that point.
template <typename Point>
const Point* As(const Plugin& plugin) {
  return dynamic_cast<const Point*>(&plugin);
}

}  // namespace tessera
