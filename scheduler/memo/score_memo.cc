#include "scheduler/memo/score_memo.h"

#include <algorithm>
#include <utility>

#include "scheduler/memo/worker_pool.h"

namespace tessera {
namespace {

// Once a request's entries outnumber its largest request by a quarter plus
// this, those it did not read are swept: old versions of nodes that changed.
// A sweep costs O(entries) and follows at least a quarter as many newly
// computed nodes; the slack spares small requests a sweep per request.
constexpr size_t kSweepSlack = 64;

// Releases a mutex taken with TryLock when the scope ends.
class Unlocker {
 public:
  explicit Unlocker(absl::Mutex& mu) : mu_(mu) {}
  Unlocker(const Unlocker&) = delete;
  Unlocker& operator=(const Unlocker&) = delete;
  ~Unlocker() { mu_.Unlock(); }

 private:
  absl::Mutex& mu_;
};

}  // namespace

size_t ScoreMemo::MaxEntries(size_t largest_request) {
  return largest_request + largest_request / 4 + kSweepSlack;
}

ScoreMemo::ScoreMemo(std::shared_ptr<const Profile> profile, size_t max_requests, WorkerPool* pool)
    : profile_(std::move(profile)),
      memoizable_(profile_->memoizable()),
      max_requests_(std::max<size_t>(1, max_requests)),
      pool_(pool != nullptr && pool->threads() > 0 ? pool : nullptr) {}

std::vector<int64_t> ScoreMemo::Score(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                      std::vector<std::optional<GpuChoice>>* choices, Counters* this_call) const {
  Counters call;
  std::vector<int64_t> scores;
  if (!memoizable_ || !mu_.TryLock()) {
    requests_bypassed_.fetch_add(1, std::memory_order_relaxed);
    call.requests_bypassed = 1;
    scores = profile_->Score(cycle, nodes, choices);
  } else {
    const Unlocker unlock(mu_);
    scores = ScoreLocked(cycle, nodes, choices, call);
  }
  if (this_call != nullptr) *this_call = call;
  return scores;
}

// One slot as the cache Profile::Run consults for one request (`use`, the
// slot's count of requests served): answers found by version, computed
// ones kept.
class ScoreMemo::SlotCache final : public NodeAnswerCache {
 public:
  SlotCache(Slot& slot, uint64_t use) : slot_(slot), use_(use) {}

  void Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
            std::vector<size_t>& missing) override {
    for (size_t i = 0; i < nodes.size(); ++i) {
      found[i] = nullptr;
      const uint64_t version = nodes[i]->version;
      if (version == 0) {  // computed every time, never kept
        missing.push_back(i);
        continue;
      }
      ++versioned_;
      // Replicas of one workload are asked about one list of nodes, in the
      // order the answers were computed: then the answer is at the node's
      // own position and the index is not asked. (A new request has none.)
      size_t at = i;
      if (i >= slot_.versions.size() || slot_.versions[i] != version) {
        const auto it = slot_.answers.empty() ? slot_.at.end() : slot_.at.find(version);
        if (it == slot_.at.end()) {
          missing.push_back(i);
          continue;
        }
        at = it->second;
      }
      slot_.read_by[at] = use_;
      found[i] = &slot_.answers[at];
    }
  }

  void Keep(absl::Span<const NodeView* const> nodes, absl::Span<const size_t> computed_at,
            std::vector<NodeAnswer>& computed) override {
    // The same version named twice in one request was computed twice,
    // identically; the first is kept.
    if (slot_.answers.empty()) {
      // A new request: the slot takes the computed array whole; answers not
      // indexed stay unread until the next sweep drops them.
      slot_.answers.swap(computed);
      slot_.versions.assign(slot_.answers.size(), 0);
      slot_.read_by.assign(slot_.answers.size(), 0);
      slot_.at.reserve(slot_.answers.size());
      for (size_t k = 0; k < computed_at.size(); ++k) {
        const uint64_t version = nodes[computed_at[k]]->version;
        if (version == 0 || !slot_.at.try_emplace(version, static_cast<uint32_t>(k)).second) continue;
        slot_.versions[k] = version;
        slot_.read_by[k] = use_;
      }
      return;
    }
    for (size_t k = 0; k < computed_at.size(); ++k) {
      const uint64_t version = nodes[computed_at[k]]->version;
      if (version == 0 || !slot_.at.try_emplace(version, static_cast<uint32_t>(slot_.answers.size())).second) continue;
      slot_.answers.push_back(std::move(computed[k]));
      slot_.versions.push_back(version);
      slot_.read_by.push_back(use_);
    }
  }

  // Nodes named with a version in this request.
  [[nodiscard]] size_t versioned() const { return versioned_; }

 private:
  Slot& slot_;
  const uint64_t use_;
  size_t versioned_ = 0;
};

std::vector<int64_t> ScoreMemo::ScoreLocked(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                            std::vector<std::optional<GpuChoice>>* choices,
                                            Counters& this_call) const {
  Slot& slot = SlotFor(cycle.request());
  const uint64_t use = ++slot.uses;
  SlotCache cache(slot, use);
  const auto on_pool = [this](size_t n, absl::FunctionRef<void(size_t, size_t)> body) {
    pool_->ParallelFor(n, kParallelGrain, body);
  };
  const ParallelFor parallel_for(on_pool);
  const RunOptions options{.cache = &cache,
                           .filter = false,
                           .parallel_for = pool_ != nullptr ? &parallel_for : nullptr,
                           .min_parallel = kMinParallelNodes,
                           .scratch = &scratch_};
  RunResult& run = run_;
  profile_->Run(cycle, nodes, options, choices, run);

  const size_t n = nodes.size();
  const uint64_t n_parallel = run.parallel ? run.computed : 0;
  nodes_computed_.fetch_add(run.computed, std::memory_order_relaxed);
  nodes_reused_.fetch_add(n - run.computed, std::memory_order_relaxed);
  nodes_computed_in_parallel_.fetch_add(n_parallel, std::memory_order_relaxed);
  this_call.nodes_computed = run.computed;
  this_call.nodes_reused = n - run.computed;
  this_call.nodes_computed_in_parallel = n_parallel;

  slot.high_water = std::max(slot.high_water, cache.versioned());
  if (slot.answers.size() > MaxEntries(slot.high_water)) Sweep(slot, use);
  return Profile::WireScores(run, n);
}

void ScoreMemo::Sweep(Slot& slot, uint64_t use) {
  size_t kept = 0;
  for (size_t k = 0; k < slot.answers.size(); ++k) {
    if (slot.versions[k] == 0 || slot.read_by[k] != use) continue;
    if (kept != k) {
      slot.answers[kept] = std::move(slot.answers[k]);
      slot.versions[kept] = slot.versions[k];
      slot.read_by[kept] = slot.read_by[k];
    }
    ++kept;
  }
  slot.answers.resize(kept);
  slot.versions.resize(kept);
  slot.read_by.resize(kept);
  slot.at.clear();
  slot.at.reserve(kept);
  for (size_t k = 0; k < kept; ++k) slot.at.emplace(slot.versions[k], static_cast<uint32_t>(k));
}

ScoreMemo::Slot& ScoreMemo::SlotFor(const PodGpuRequest& request) const {
  const uint64_t now = ++clock_;
  for (Slot& slot : slots_) {
    if (slot.request == request) {
      slot.last_use = now;
      return slot;
    }
  }
  Slot* slot = nullptr;
  if (slots_.size() < max_requests_) {
    slot = &slots_.emplace_back();
  } else {
    slot = &*std::min_element(slots_.begin(), slots_.end(),
                              [](const Slot& a, const Slot& b) { return a.last_use < b.last_use; });
    // The evicted request's arrays, emptied, serve the new one: their pages
    // are mapped already.
    std::vector<NodeAnswer> answers = std::move(slot->answers);
    std::vector<uint64_t> versions = std::move(slot->versions), read_by = std::move(slot->read_by);
    answers.clear();
    versions.clear();
    read_by.clear();
    *slot = Slot{};
    slot->answers = std::move(answers);
    slot->versions = std::move(versions);
    slot->read_by = std::move(read_by);
  }
  slot->request = request;
  slot->last_use = now;
  return *slot;
}

ScoreMemo::Counters ScoreMemo::counters() const {
  return Counters{.nodes_computed = nodes_computed_.load(std::memory_order_relaxed),
                  .nodes_reused = nodes_reused_.load(std::memory_order_relaxed),
                  .requests_bypassed = requests_bypassed_.load(std::memory_order_relaxed),
                  .nodes_computed_in_parallel = nodes_computed_in_parallel_.load(std::memory_order_relaxed)};
}

size_t ScoreMemo::memoized_nodes() const {
  absl::MutexLock lock(&mu_);
  size_t total = 0;
  for (const Slot& slot : slots_) total += slot.answers.size();  // indexed or awaiting the sweep
  return total;
}

std::shared_ptr<const ScoreMemo> ScoreMemoHolder::For(std::shared_ptr<const Profile> profile) {
  absl::MutexLock lock(&mu_);
  if (memos_.size() != 1 || memos_.front()->profile() != profile) {
    memos_.clear();
    memos_.push_back(std::make_shared<const ScoreMemo>(std::move(profile), ScoreMemo::kDefaultRequests, pool_));
  }
  return memos_.front();
}

std::shared_ptr<const ScoreMemo> ScoreMemoHolder::For(const ProfileSet& policy, std::shared_ptr<const Profile> profile) {
  absl::MutexLock lock(&mu_);
  // Pointers compared, a handful: no answer of a profile out of force is
  // reused, and none is kept past the next request of the new policy.
  std::erase_if(memos_, [&policy](const std::shared_ptr<const ScoreMemo>& memo) {
    return !policy.Contains(memo->profile().get());
  });
  for (const std::shared_ptr<const ScoreMemo>& memo : memos_) {
    if (memo->profile() == profile) return memo;
  }
  memos_.push_back(std::make_shared<const ScoreMemo>(std::move(profile), ScoreMemo::kDefaultRequests, pool_));
  return memos_.back();
}

}  // namespace tessera
