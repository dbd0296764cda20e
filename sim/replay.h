// One replay run: every pod of a run's workload scheduled once, in order,
// through a Tessera profile (the extender's framework and plugins), with
// the FGD paper's protocol (docs/benchmarks.md, "Placement quality"):
//
//   for each pod:
//     feasible = nodes where every filter passes and the chooser finds GPUs
//     none: the pod fails and is gone (no retry, no queue, no preemption)
//     else: every score plugin scores the feasible nodes, normalises, and
//           the weighted sum at plugin resolution (0..100 × Σ weights, not
//           the wire's 0..10) picks the node; ties go to the lowest rank;
//           the pod takes the shares the chooser names (Profile::SharesFor),
//           checked first against what any placement must keep
//           (sim/placement_check.h: MIG pods on free instances only, other
//           pods never on MIG GPUs, vendors as selected)
//     record (arrived milli-GPU, used milli-GPU, fragmentation) after it
//
// Memo: plugins are pure functions of (request, node), so a node that has
// not changed since a pod of the same class was evaluated on it gives the
// same filter verdict, GPU choice and raw scores. The replay keeps them per
// (node, pod class) and recomputes only nodes whose version moved; a
// placement changes one node. Normalisation, which depends on all feasible
// nodes, runs every time. A plugin that randomises per pod (it reads the
// request's salt) breaks the premise; the replay probes for that at the
// start and then evaluates every node every time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policies/fgd/fragmentation.h"
#include "scheduler/cache/workload_learner.h"
#include "scheduler/framework/profile.h"
#include "scheduler/model/gpu_request.h"
#include "sim/cluster.h"
#include "sim/placement_check.h"
#include "sim/trace.h"
#include "sim/workload.h"

namespace tessera::sim {

/// Pods by what they ask of GPUs, for failure statistics (kMig: a MIG
/// instance, which only a mixed fleet's pods ask; sim/fleet.h).
enum class PodKind { kCpuOnly, kShare, kOneGpu, kMultiGpu, kMig };
inline constexpr size_t kPodKinds = 5;
const char* PodKindName(PodKind kind);

/// The distinct requests of a trace: pods that ask for the same thing share
/// one request (and one memo slot).
struct PodClasses {
  std::vector<PodGpuRequest> requests;
  std::vector<PodKind> kinds;        ///< Per class.
  std::vector<uint32_t> class_of;    ///< Per pod of the trace.
};
PodClasses ClassifyPods(const std::vector<TracePod>& pods);

/// The request a trace pod makes: count = num_gpu (0 for CPU only), a share
/// when gpu_milli < 1000, models = gpu_spec, vendors, host CPU and memory;
/// a pod with a mig_profile asks for one instance of it, as the extender
/// reads tessera.io/mig-profile (count 1, whole, the profile's compute and
/// memory for accounting).
PodGpuRequest RequestOf(const TracePod& pod);

enum class MemoMode { kAuto, kOff };

/// After each pod, success or failure.
struct ReplayEvent {
  int64_t arrived_milli = 0;  ///< Σ GPU request of the pods submitted so far.
  int64_t used_milli = 0;     ///< Σ milli-GPU held.
  double fragmented_milli = 0;  ///< Σ over nodes of F under the trace's typical pods.
};

struct ReplayResult {
  std::vector<ReplayEvent> events;
  std::array<int64_t, kPodKinds> failed_pods{};
  std::array<int64_t, kPodKinds> failed_milli{};
  int64_t placed_pods = 0;
  bool memoised = false;
  int64_t learned_mixes = 0;  ///< Learned mixes put in force.
  int64_t retellings = 0;     ///< The mix in force re-told the cluster where a verdict changed (MixLearner::Retold).
  /// The last of them as the learner published it (with what it was told
  /// of the cluster); null when none was.
  std::shared_ptr<const TargetWorkload> last_learned_mix;
  /// Placements that broke PlacementViolation's rules (each still made).
  PlacementViolations violations;
  /// The cluster after the last pod, when ReplayInput::keep_cluster.
  std::shared_ptr<const Cluster> cluster;
};

struct ReplayInput {
  const Profile* profile = nullptr;
  const Cluster* empty_cluster = nullptr;        ///< Copied; the run starts from it.
  const std::vector<TracePod>* pods = nullptr;   ///< The trace, name-sorted.
  const PodClasses* classes = nullptr;
  const RunWorkload* workload = nullptr;
  const TargetWorkload* typical = nullptr;       ///< For the fragmentation record; null: none.
  uint64_t seed = 0;                             ///< Salts the pods.
  MemoMode memo = MemoMode::kAuto;
  bool keep_cluster = false;
  /// Set: learn the workload from the run's arrivals as the server does
  /// (scheduler/cache/workload_learner.h): each pod counts once it was
  /// scheduled (the server learns off the request path), and each mix due
  /// puts `profile` WithWorkload in force for the pods after it (and the
  /// memo starts over). The run starts knowing nothing: the profile's own
  /// workload holds until warm-up.
  const WorkloadLearning* learning = nullptr;
};

ReplayResult Replay(const ReplayInput& input);

/// Whether `profile`'s answers for some of `classes` on some of `cluster`'s
/// nodes change with the request's salt (then they cannot be memoised).
bool AnswersDependOnSalt(const Profile& profile, const Cluster& cluster, const PodClasses& classes);

}  // namespace tessera::sim
