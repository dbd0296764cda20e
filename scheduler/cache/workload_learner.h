// The workload a cluster expects, learned from the pods it is asked to place.
//
// fgd and host-stranding measure fragmentation against the kinds of pod the
// cluster expects (scheduler/model/target_workload.h). A list written in the
// policy file is a guess about the future; the pods kube-scheduler hands
// Tessera are the evidence. So the expected mix is the mix of the last
// `window_pods` arrivals (a sliding window: each arrival counts 1 while it
// is among the last window_pods, then 0), its most common kinds covering
// `coverage_percent` of the window (at most `max_kinds`, so that the measure
// stays cheap), each weighted by its count. The policy file's list is the
// prior: the plugins blend it into every mix learned. Until `warmup_pods`
// arrivals were seen it fades out, from all of the mix to `prior_percent`
// of it in proportion to the arrivals (mixes learned at 1, 2, 4, 8, ...
// arrivals): the first kinds seen count at once, a little (a prior that
// lacks them, such as pods taking whole nodes, would let the first pods
// break the nodes they need), and every mix carries the cluster as it is.
//
// A kind is what the measure distinguishes: CPU, GPU count, per-GPU share,
// GPU memory (of a share of a GPU) and accepted models. Pods asking for a MIG instance are no kind (fgd does
// not place them); they are not counted.
//
// Why a window of arrivals and not of time: the mix must follow the
// arrivals' composition, not their rate. When the workload shifts
// (inference by day, training by night), the learned mix follows once about
// half a window of the new kind has arrived, whatever the hour; a quiet
// night does not empty the window and hand the cluster back to the prior.
//
// Cost: ArrivalWindow is single-threaded and O(1) per arrival (a ring of
// kind ids and a count per kind); Mix() sorts the kinds (at most
// window_pods of them). WorkloadLearner puts request threads in front of it:
// Observe() appends to a bounded buffer under a lock, and one thread folds
// the buffer in (Learn()), off the request path. Memory: the ring (4 bytes
// an arrival), the kinds seen in the window, the pods' UIDs of the last two
// windows (a pod retried by kube-scheduler counts once), and the buffer.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/model/gpu_request.h"
#include "scheduler/model/target_workload.h"

namespace tessera {

/// How the expected workload is learned: the policy file's
/// `workloadLearning:` section (config/policy_loader.h), these defaults when
/// it is absent.
struct WorkloadLearning {
  bool enabled = true;
  /// The mix is that of the last this many arrivals.
  int64_t window_pods = 5000;
  /// Arrivals over which the policy file's list fades from all of the mix
  /// to prior_percent of it.
  int64_t warmup_pods = 500;
  /// New arrivals between two learned mixes (each is a new profile, and
  /// the score memo starts over: not every pod).
  int64_t publish_every_pods = 200;
  /// The most common kinds are kept until they cover this share of the window.
  int64_t coverage_percent = 95;
  /// And at most this many kinds.
  int64_t max_kinds = 64;
  /// How much of each plugin's own `workload:` list (the prior) stays mixed
  /// into the learned mix it measures against, in percent (0..100). A
  /// floor, so that kinds the window lacks (whole GPUs while only shares
  /// arrived) still count: pods then keep whole GPUs and nodes free for them
  /// rather than spreading over equally good ones.
  int64_t prior_percent = 5;

  bool operator==(const WorkloadLearning&) const = default;
};

/// The workload kind of a pod asking `request` (weight 1), or nullopt for a
/// pod asking for a MIG instance.
std::optional<WorkloadPod> WorkloadKindOf(const PodGpuRequest& request);

/// The kinds of the last `capacity` arrivals, counted. Single-threaded.
class ArrivalWindow {
 public:
  explicit ArrivalWindow(size_t capacity);

  /// Counts one arrival of `kind` (its weight is ignored); the arrival
  /// `capacity` arrivals ago leaves the window.
  void Add(const WorkloadPod& kind);
  /// Arrivals in the window (at most the capacity).
  [[nodiscard]] size_t size() const { return filled_; }
  /// Arrivals ever added.
  [[nodiscard]] int64_t arrivals() const { return arrivals_; }
  /// Distinct kinds in the window.
  [[nodiscard]] size_t kinds() const { return slot_of_.size(); }
  /// The window's most common kinds, weight = count, most common first
  /// (ties: more GPUs, then larger share, then more CPU, GPU memory, models),
  /// taken until they cover `coverage_percent` of the window or
  /// `max_kinds` were taken. Empty when the window is.
  [[nodiscard]] std::vector<WorkloadPod> Mix(int64_t coverage_percent, size_t max_kinds) const;

 private:
  struct Kind {
    WorkloadPod pod;  // weight unused
    int64_t count = 0;
  };
  std::vector<uint32_t> ring_;  // kind slot per arrival, oldest at next_ once full
  size_t next_ = 0;
  size_t filled_ = 0;
  int64_t arrivals_ = 0;
  absl::flat_hash_map<std::string, uint32_t> slot_of_;  // kind key -> slot in kinds_
  std::vector<Kind> slots_;
  std::vector<uint32_t> free_slots_;
};

/// The window plus the rule of when a mix is due (WorkloadLearning): what
/// the server and the placement simulator share. Single-threaded.
class MixLearner {
 public:
  explicit MixLearner(const WorkloadLearning& settings);

  void Add(const WorkloadPod& kind) { window_.Add(kind); }
  /// Whether a mix is due: during warm-up, at the first arrival and
  /// whenever the arrivals have doubled since the last mix (1, 2, 4, 8, ...
  /// one by one); at warm-up; and every publish_every_pods arrivals after.
  [[nodiscard]] bool due() const;
  /// The learned mix when one is due, null otherwise and when the window's
  /// mix is not a valid workload. Its prior_percent: 100 − (100 −
  /// prior_percent) · arrivals ÷ warmup_pods during warm-up (integer), the
  /// setting's after. The mix carries
  /// `cluster`, the cluster's CPU per GPU and GPUs by model
  /// (TargetWorkload::WithCluster; scheduler/framework/cluster_supply.h sums
  /// them): host stranding asks whether CPU is what the cluster runs out
  /// of, and whether some GPU model is scarce. It carries `prior_percent`
  /// too, for the plugins that blend their prior into it.
  [[nodiscard]] std::shared_ptr<const TargetWorkload> DueMix(TargetWorkload::ClusterSupply cluster = {});
  /// The last mix given out, told `cluster` anew (null before the first).
  /// The cluster changes with every bind and every pod that ends, and a mix
  /// is learned only every so many arrivals: on a quiet cluster the measure
  /// would judge by the cluster of an hour ago. Whoever measures puts it in
  /// force where that changes a verdict (Profile::WithRetoldWorkload).
  [[nodiscard]] std::shared_ptr<const TargetWorkload> Retold(TargetWorkload::ClusterSupply cluster) const;
  [[nodiscard]] const ArrivalWindow& window() const { return window_; }
  [[nodiscard]] const WorkloadLearning& settings() const { return settings_; }

 private:
  [[nodiscard]] int64_t PriorPercentAt(int64_t arrivals) const;

  WorkloadLearning settings_;
  ArrivalWindow window_;
  int64_t published_at_ = -1;  // arrivals() at the last mix given out
  std::shared_ptr<const TargetWorkload> last_;  // the last mix given out
};

/// What /debug and the metrics show of a learner.
struct WorkloadLearnerStatus {
  WorkloadLearning settings;
  int64_t arrivals = 0;        ///< Distinct pods observed and counted.
  int64_t dropped = 0;         ///< Observations lost to a full buffer.
  int64_t window_pods = 0;     ///< Arrivals in the window now.
  int64_t window_kinds = 0;    ///< Distinct kinds in it.
  int64_t publications = 0;    ///< Mixes learned so far.
  int64_t retellings = 0;      ///< Times the mix in force was told the cluster anew (MixLearner::Retold).
  /// The last mix learned (null before the first arrival).
  std::shared_ptr<const TargetWorkload> learned;
};

/// Thread-safe: request threads Observe, one thread Learns.
class WorkloadLearner {
 public:
  /// Observations kept between two Learn() calls at most; beyond, dropped
  /// (counted): a burst must not grow memory without bound.
  static constexpr size_t kMaxPending = 65536;

  explicit WorkloadLearner(const WorkloadLearning& settings);

  /// A pod kube-scheduler asks about (filter). Cheap: a copy of the kind
  /// and the UID into a buffer, under a lock. `uid` empty: always counted.
  void Observe(std::string_view uid, const PodGpuRequest& request);

  /// Folds the buffer into the window (a UID seen in the last two windows
  /// counts once) and returns the learned mix when one is due, else null.
  /// New settings (a policy reload) start the window over when its size
  /// changes. A mix carries `cluster` as DueMix says.
  std::shared_ptr<const TargetWorkload> Learn(const WorkloadLearning& settings,
                                              TargetWorkload::ClusterSupply cluster = {});

  /// The last mix learned, told `cluster` anew (MixLearner::Retold).
  [[nodiscard]] std::shared_ptr<const TargetWorkload> Retold(TargetWorkload::ClusterSupply cluster) const;
  /// Records that `retold` (from Retold) was put in force: Status shows it
  /// as the mix learned, and counts it.
  void Adopt(std::shared_ptr<const TargetWorkload> retold);

  [[nodiscard]] WorkloadLearnerStatus Status() const;

 private:
  struct Pending {
    std::string uid;
    WorkloadPod kind;
  };
  mutable absl::Mutex pending_mu_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(pending_mu_);
  int64_t dropped_ ABSL_GUARDED_BY(pending_mu_) = 0;

  mutable absl::Mutex learn_mu_;  // Learn() and Status()
  MixLearner learner_ ABSL_GUARDED_BY(learn_mu_);
  absl::flat_hash_set<std::string> seen_uids_ ABSL_GUARDED_BY(learn_mu_);
  std::deque<std::string> uid_order_ ABSL_GUARDED_BY(learn_mu_);
  int64_t publications_ ABSL_GUARDED_BY(learn_mu_) = 0;
  int64_t retellings_ ABSL_GUARDED_BY(learn_mu_) = 0;
  std::shared_ptr<const TargetWorkload> learned_ ABSL_GUARDED_BY(learn_mu_);
};

}  // namespace tessera
