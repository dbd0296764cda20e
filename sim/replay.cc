#include "sim/replay.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "policies/node_resources.h"
#include "scheduler/framework/cluster_supply.h"
#include "scheduler/framework/recording_answer_cache.h"
#include "sim/node_choice.h"

namespace tessera::sim {
namespace {

PodKind KindOf(const TracePod& p) {
  if (p.gpus == 0) return PodKind::kCpuOnly;
  if (!p.mig_profile.empty()) return PodKind::kMig;
  if (p.gpus == 1) return p.gpu_milli < kOneGpu.value() ? PodKind::kShare : PodKind::kOneGpu;
  return PodKind::kMultiGpu;
}

// Per-node fragmentation under the trace's typical pods, kept up to date
// node by node for the record.
class FragmentationRecord {
 public:
  FragmentationRecord(const TargetWorkload* typical, const Cluster& cluster) : typical_(typical) {
    if (typical_ == nullptr) return;
    access_.reserve(cluster.size());
    node_.resize(cluster.size());
    for (size_t i = 0; i < cluster.size(); ++i) {
      access_.emplace_back(*typical_, cluster.View(i).gpus);
      Update(cluster, i);
    }
  }
  void Update(const Cluster& cluster, size_t i) {
    if (typical_ == nullptr) return;
    const NodeView& view = cluster.View(i);
    absl::InlinedVector<int64_t, 8> free;
    for (const GpuState& g : view.gpu_states) free.push_back(FreeMilli(g));
    const double f = NodeFragmentation(*typical_, access_[i], free, view.host->cpu_free().value());
    total_ += f - node_[i];
    node_[i] = f;
  }
  [[nodiscard]] double total() const { return total_; }

 private:
  const TargetWorkload* typical_;
  std::vector<NodeGpuAccess> access_;
  std::vector<double> node_;
  double total_ = 0;
};

}  // namespace

const char* PodKindName(PodKind kind) {
  switch (kind) {
    case PodKind::kCpuOnly: return "cpu-only";
    case PodKind::kShare: return "gpu-share";
    case PodKind::kOneGpu: return "1-gpu";
    case PodKind::kMultiGpu: return "multi-gpu";
    case PodKind::kMig: return "mig";
  }
  return "?";
}

PodGpuRequest RequestOf(const TracePod& p) {
  PodGpuRequest r;
  r.count = p.gpus;
  r.whole_gpu = p.gpus == 0 || p.gpu_milli >= kOneGpu.value();
  r.guaranteed = r.limit = MilliGpu(p.gpus == 0 ? 0 : p.gpu_milli);
  if (r.whole_gpu) r.guaranteed = r.limit = kOneGpu;
  if (!r.whole_gpu) r.memory = r.memory_limit = MemoryMiB(p.gpu_memory_mib);
  r.models = p.models;
  r.vendors = p.vendors;
  r.host = HostRequest{.cpu = MilliCpu(p.cpu_milli), .memory = MemoryMiB(p.memory_mib)};
  if (!p.mig_profile.empty()) {  // as k8s/pod_gpu_request.cc reads tessera.io/mig-profile
    r.mig_profile = p.mig_profile;
    r.count = 1;
    r.whole_gpu = true;
    r.guaranteed = r.limit = MigComputeOfName(p.mig_profile);
    r.memory = r.memory_limit = MigMemoryOfName(p.mig_profile);
  }
  return r;
}

PodClasses ClassifyPods(const std::vector<TracePod>& pods) {
  PodClasses c;
  using Key = std::tuple<int64_t, int64_t, int32_t, int64_t, int64_t, std::string, std::vector<GpuVendor>, std::string>;
  std::map<Key, uint32_t> index;
  c.class_of.reserve(pods.size());
  for (const TracePod& p : pods) {
    auto [it, inserted] = index.try_emplace(
        Key{p.cpu_milli, p.memory_mib, p.gpus, p.gpu_milli, p.gpu_memory_mib, p.gpu_spec, p.vendors, p.mig_profile},
        static_cast<uint32_t>(c.requests.size()));
    if (inserted) {
      c.requests.push_back(RequestOf(p));
      c.kinds.push_back(KindOf(p));
    }
    c.class_of.push_back(it->second);
  }
  return c;
}

namespace {

bool SameAnswer(const NodeAnswer& a, const NodeAnswer& b) {
  if (a.fits != b.fits) return false;
  return !a.fits || (a.choice == b.choice && a.raw == b.raw && a.set_rejected == b.set_rejected);
}

}  // namespace

bool AnswersDependOnSalt(const Profile& profile, const Cluster& cluster, const PodClasses& classes) {
  // A few classes of every kind, on the first nodes: a randomising plugin
  // answers differently under two salts on some of them. What is compared
  // is what a cache would keep (the answers of the memoizable plugins; the
  // others are asked anew every run anyway).
  constexpr size_t kClassesPerKind = 2, kNodes = 128;
  std::array<size_t, kPodKinds> taken{};
  std::vector<const NodeView*> nodes = AllNodes(cluster);
  nodes.resize(std::min(kNodes, nodes.size()));
  for (size_t c = 0; c < classes.requests.size(); ++c) {
    size_t& count = taken[static_cast<size_t>(classes.kinds[c])];
    if (count == kClassesPerKind) continue;
    ++count;
    PodGpuRequest a = classes.requests[c], b = classes.requests[c];
    a.salt = 1;
    b.salt = 2;
    const CycleState cycle_a(std::move(a)), cycle_b(std::move(b));
    RecordingAnswerCache answers_a, answers_b;
    const RunOptions options_a{
        .cache = &answers_a, .filter = true, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr};
    const RunOptions options_b{
        .cache = &answers_b, .filter = true, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr};
    (void)profile.Run(cycle_a, nodes, options_a, nullptr);
    (void)profile.Run(cycle_b, nodes, options_b, nullptr);
    if (!std::equal(answers_a.answers().begin(), answers_a.answers().end(), answers_b.answers().begin(),
                    answers_b.answers().end(), SameAnswer)) {
      return true;
    }
  }
  return false;
}

namespace {

// The server re-tells the mix in force the cluster once a second
// (MixLearner::Retold); the replay, which has no clock, every this many
// arrivals (a busy cluster's second). Measured: every 10 within 0.02 of
// every 20 on the multi-GPU traces at node CPU × 0.9, × 0.6 and × 0.5;
// every arrival the same on the default trace at five times the run's
// time; never (as before: only when a mix is learned) up to 0.11 lower
// (multigpu30 at × 0.9).
constexpr size_t kRetellEveryArrivals = 20;

TargetWorkload::ClusterSupply SupplyOf(const Cluster& cluster) {
  ClusterSupplySum supply;
  for (size_t i = 0; i < cluster.size(); ++i) supply.Add(cluster.View(i));
  return std::move(supply).Take();
}

}  // namespace

ReplayResult Replay(const ReplayInput& in) {
  std::shared_ptr<const Profile> learned_profile;  // in force once a mix was learned
  const Profile* profile_in_force = in.profile;
  std::optional<MixLearner> learner;
  if (in.learning != nullptr && in.learning->enabled) learner.emplace(*in.learning);
  auto owned = std::make_shared<Cluster>(*in.empty_cluster);
  Cluster& cluster = *owned;
  const std::vector<uint32_t>& rank = in.workload->node_rank;

  ReplayResult result;
  result.memoised = in.memo == MemoMode::kAuto && !AnswersDependOnSalt(*in.profile, cluster, *in.classes);
  const size_t slots = result.memoised ? in.classes->requests.size() : 0;
  std::vector<ClassAnswers> answers(slots, ClassAnswers(cluster));
  const std::vector<const NodeView*> nodes = AllNodes(cluster);
  RunScratch scratch;
  RunResult run;

  FragmentationRecord fragmentation(in.typical, cluster);
  result.events.reserve(in.workload->pods.size());

  int64_t arrived = 0;
  for (size_t position = 0; position < in.workload->pods.size(); ++position) {
    const TracePod& pod = (*in.pods)[in.workload->pods[position]];
    const uint32_t cls = in.classes->class_of[in.workload->pods[position]];
    PodGpuRequest request = in.classes->requests[cls];
    request.salt = SaltOf(in.seed, position);
    const CycleState cycle(std::move(request));
    const Profile& profile = *profile_in_force;
    EvaluateNodes(profile, cycle, nodes, result.memoised ? &answers[cls] : nullptr, scratch, run);

    arrived += pod.total_milli();
    if (run.fitting.empty()) {
      const size_t kind = static_cast<size_t>(in.classes->kinds[cls]);
      ++result.failed_pods[kind];
      result.failed_milli[kind] += pod.total_milli();
    } else {
      const size_t node = BestNode(run, rank);
      const GpuChoice choice = ChoiceOn(profile, cycle, cluster.View(node));
      const std::vector<GpuShare> shares = profile.SharesFor(cycle, cluster.View(node), choice);
      if (std::optional<std::string> why = PlacementViolation(cycle.request(), cluster.View(node), shares)) {
        result.violations.Record(position, cluster.View(node), *std::move(why));
      }
      cluster.Place(node, cycle.request(), shares);
      fragmentation.Update(cluster, node);
      ++result.placed_pods;
    }
    result.events.push_back(ReplayEvent{.arrived_milli = arrived, .used_milli = cluster.used_milli(),
                                        .fragmented_milli = fragmentation.total()});
    if (learner.has_value()) {
      if (std::optional<WorkloadPod> kind = WorkloadKindOf(cycle.request())) learner->Add(*kind);
      // As the server publishes a mix: with the cluster as it is now (its
      // CPU per GPU, GPUs by model, idle nodes and free GPU).
      // A profile put in force: the answers under the one before are void.
      const auto put_in_force = [&](std::shared_ptr<const Profile> next) {
        learned_profile = std::move(next);
        profile_in_force = learned_profile.get();
        for (ClassAnswers& a : answers) a.Clear();
      };
      if (learner->due()) {
        if (std::shared_ptr<const TargetWorkload> mix = learner->DueMix(SupplyOf(cluster))) {
          result.last_learned_mix = mix;
          if (std::shared_ptr<const Profile> next = in.profile->WithWorkload(std::move(mix))) {
            put_in_force(std::move(next));
            ++result.learned_mixes;
          }
        }
      } else if (position % kRetellEveryArrivals == 0) {
        // As the server re-tells the mix in force between two mixes, where
        // the cluster moved past what it judged by.
        if (std::shared_ptr<const TargetWorkload> retold = learner->Retold(SupplyOf(cluster))) {
          if (std::shared_ptr<const Profile> next = in.profile->WithRetoldWorkload(retold, *profile_in_force)) {
            put_in_force(std::move(next));
            ++result.retellings;
          }
        }
      }
    }
  }
  if (in.keep_cluster) result.cluster = std::move(owned);
  return result;
}

}  // namespace tessera::sim
