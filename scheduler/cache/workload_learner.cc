#include "scheduler/cache/workload_learner.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

// Equal kinds, equal keys: what the measure tells apart, nothing else.
std::string KeyOf(const WorkloadPod& kind) {
  return absl::StrCat(kind.cpu.value(), "/", kind.gpus, "/", kind.milli.value(), "/", kind.gpu_memory.value(), "/",
                      absl::StrJoin(kind.models, "|"));
}

}  // namespace

std::optional<WorkloadPod> WorkloadKindOf(const PodGpuRequest& request) {
  if (!request.mig_profile.empty()) return std::nullopt;
  WorkloadPod kind;
  kind.cpu = request.host.cpu;
  if (request.count > 0) {
    kind.gpus = request.count;
    kind.milli = request.whole_gpu ? kOneGpu : request.guaranteed;
    kind.models = request.models;
    // A whole GPU's pod holds all of its memory whatever it asks.
    if (!request.whole_gpu && request.guaranteed < kOneGpu) kind.gpu_memory = request.memory;
  }
  return kind;
}

ArrivalWindow::ArrivalWindow(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

void ArrivalWindow::Add(const WorkloadPod& kind) {
  if (filled_ == ring_.size()) {
    Kind& leaving = slots_[ring_[next_]];
    if (--leaving.count == 0) {
      slot_of_.erase(KeyOf(leaving.pod));
      free_slots_.push_back(ring_[next_]);
    }
  } else {
    ++filled_;
  }
  auto [it, inserted] = slot_of_.try_emplace(KeyOf(kind), 0);
  if (inserted) {
    if (free_slots_.empty()) {
      it->second = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      it->second = free_slots_.back();
      free_slots_.pop_back();
    }
    slots_[it->second] = Kind{.pod = kind, .count = 0};
    slots_[it->second].pod.weight = 1;
  }
  ++slots_[it->second].count;
  ring_[next_] = it->second;
  next_ = (next_ + 1) % ring_.size();
  ++arrivals_;
}

std::vector<WorkloadPod> ArrivalWindow::Mix(int64_t coverage_percent, size_t max_kinds) const {
  std::vector<const Kind*> kinds;
  kinds.reserve(slot_of_.size());
  for (const auto& [key, slot] : slot_of_) kinds.push_back(&slots_[slot]);
  // A total order, so that the mix does not depend on the hash map's.
  std::sort(kinds.begin(), kinds.end(), [](const Kind* a, const Kind* b) {
    return std::forward_as_tuple(b->count, b->pod.gpus, b->pod.milli, b->pod.cpu, b->pod.gpu_memory, b->pod.models) <
           std::forward_as_tuple(a->count, a->pod.gpus, a->pod.milli, a->pod.cpu, a->pod.gpu_memory, a->pod.models);
  });
  std::vector<WorkloadPod> mix;
  int64_t covered = 0;
  const int64_t total = static_cast<int64_t>(filled_);
  for (const Kind* k : kinds) {
    if (mix.size() == max_kinds || covered * 100 >= coverage_percent * total) break;
    mix.push_back(k->pod);
    mix.back().weight = k->count;
    covered += k->count;
  }
  return mix;
}

MixLearner::MixLearner(const WorkloadLearning& settings)
    : settings_(settings), window_(static_cast<size_t>(settings.window_pods)) {}

bool MixLearner::due() const {
  const int64_t arrivals = window_.arrivals();
  if (!settings_.enabled || arrivals == 0 || arrivals <= published_at_) return false;
  // Warming up: each time the arrivals have doubled since the last mix (at
  // 1, 2, 4, 8, ... where they come one by one, as in the simulator; the
  // server folds in a second's worth at once), so that the first kinds seen
  // count from the start and publications stay few.
  if (arrivals < settings_.warmup_pods) return published_at_ <= 0 || arrivals >= 2 * published_at_;
  return published_at_ < settings_.warmup_pods || arrivals - published_at_ >= settings_.publish_every_pods;
}

int64_t MixLearner::PriorPercentAt(int64_t arrivals) const {
  const int64_t floor = settings_.prior_percent;
  if (arrivals >= settings_.warmup_pods) return floor;
  return 100 - (100 - floor) * arrivals / settings_.warmup_pods;
}

std::shared_ptr<const TargetWorkload> MixLearner::DueMix(TargetWorkload::ClusterSupply cluster) {
  if (!due()) return nullptr;
  const int64_t arrivals = window_.arrivals();
  published_at_ = arrivals;
  absl::StatusOr<TargetWorkload> mix =
      TargetWorkload::Create(window_.Mix(settings_.coverage_percent, static_cast<size_t>(settings_.max_kinds)));
  // Only an empty window fails (every kind came from a parsed request): keep the mix in force.
  if (!mix.ok()) return nullptr;
  last_ = std::make_shared<const TargetWorkload>(
      std::move(*mix).WithCluster(std::move(cluster)).WithPriorPercent(PriorPercentAt(arrivals)));
  return last_;
}

std::shared_ptr<const TargetWorkload> MixLearner::Retold(TargetWorkload::ClusterSupply cluster) const {
  if (last_ == nullptr) return nullptr;
  return std::make_shared<const TargetWorkload>(last_->WithCluster(std::move(cluster)));
}

WorkloadLearner::WorkloadLearner(const WorkloadLearning& settings) : learner_(settings) {}

void WorkloadLearner::Observe(std::string_view uid, const PodGpuRequest& request) {
  std::optional<WorkloadPod> kind = WorkloadKindOf(request);
  if (!kind.has_value()) return;
  absl::MutexLock lock(&pending_mu_);
  if (pending_.size() >= kMaxPending) {
    ++dropped_;
    return;
  }
  pending_.push_back(Pending{.uid = std::string(uid), .kind = *std::move(kind)});
}

std::shared_ptr<const TargetWorkload> WorkloadLearner::Learn(const WorkloadLearning& settings,
                                                             TargetWorkload::ClusterSupply cluster) {
  std::vector<Pending> batch;
  {
    absl::MutexLock lock(&pending_mu_);
    batch.swap(pending_);
  }
  absl::MutexLock lock(&learn_mu_);
  if (!(settings == learner_.settings())) {
    // The window's capacity is fixed; a new window starts over (a policy
    // edit is rare, and the prior holds until it has warmed up again).
    learner_ = MixLearner(settings);
    learned_ = nullptr;
  }
  const size_t max_uids = 2 * static_cast<size_t>(std::max<int64_t>(settings.window_pods, 1));
  for (Pending& p : batch) {
    if (!p.uid.empty()) {
      if (!seen_uids_.insert(p.uid).second) continue;
      uid_order_.push_back(std::move(p.uid));
      if (uid_order_.size() > max_uids) {
        seen_uids_.erase(uid_order_.front());
        uid_order_.pop_front();
      }
    }
    learner_.Add(p.kind);
  }
  std::shared_ptr<const TargetWorkload> mix = learner_.DueMix(std::move(cluster));
  if (mix == nullptr) return nullptr;
  ++publications_;
  learned_ = mix;
  return mix;
}

std::shared_ptr<const TargetWorkload> WorkloadLearner::Retold(TargetWorkload::ClusterSupply cluster) const {
  absl::MutexLock lock(&learn_mu_);
  return learner_.Retold(std::move(cluster));
}

void WorkloadLearner::Adopt(std::shared_ptr<const TargetWorkload> retold) {
  absl::MutexLock lock(&learn_mu_);
  learned_ = std::move(retold);
  ++retellings_;
}

WorkloadLearnerStatus WorkloadLearner::Status() const {
  WorkloadLearnerStatus s;
  {
    absl::MutexLock lock(&pending_mu_);
    s.dropped = dropped_;
  }
  absl::MutexLock lock(&learn_mu_);
  s.settings = learner_.settings();
  s.arrivals = learner_.window().arrivals();
  s.window_pods = static_cast<int64_t>(learner_.window().size());
  s.window_kinds = static_cast<int64_t>(learner_.window().kinds());
  s.publications = publications_;
  s.retellings = retellings_;
  s.learned = learned_;
  return s;
}

}  // namespace tessera
