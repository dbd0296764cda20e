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

bool ScoreMemo::AtItsPosition(const std::vector<Entry>& entries, size_t i, uint64_t version) {
  // Any entry with a version is the one the index names for it.
  return i < entries.size() && entries[i].version == version;
}

size_t ScoreMemo::MaxEntries(size_t largest_request) {
  return largest_request + largest_request / 4 + kSweepSlack;
}

ScoreMemo::ScoreMemo(std::shared_ptr<const Profile> profile, size_t max_requests, WorkerPool* pool)
    : profile_(std::move(profile)),
      memoizable_(profile_->memoizable()),
      has_gpu_exclusions_(profile_->has_gpu_exclusions()),
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

// Profile::Score's stages from the memo's answers: fed node by node in
// request order, it keeps the nodes where the pod fits and each score
// plugin's raw scores on them, then normalises, weighs and puts them on the
// wire exactly as Profile::Score does.
class ScoreMemo::Stages {
 public:
  Stages(const Profile& profile, bool has_gpu_exclusions, const CycleState& cycle,
         absl::Span<const NodeView* const> nodes, std::vector<std::optional<GpuChoice>>* choices)
      : profile_(profile), has_gpu_exclusions_(has_gpu_exclusions), cycle_(cycle), nodes_(nodes), choices_(choices),
        raw_(profile.score_plugin_count()) {
    fitting_.reserve(nodes.size());
    for (std::vector<int64_t>& r : raw_) r.reserve(nodes.size());
    if (choices != nullptr) choices->assign(nodes.size(), std::nullopt);
  }

  // Node `i` as its answer (kept or just computed) has it.
  void Add(size_t i, const Entry& answer) {
    const NodeView& node = *nodes_[i];
    if (!answer.choice.has_value()) return;  // ruling GPUs out never makes room
    // GPUs ruled out now (live load) may take the kept choice away; the kept
    // raw scores hold only for the kept choice.
    const GpuChoice* choice = &*answer.choice;
    bool kept = true;
    if (has_gpu_exclusions_) {
      const GpuIndexList excluded = profile_.ExcludedGpus(cycle_, node);
      if (!excluded.empty()) {
        avoiding_ = profile_.ChooseGpusAvoiding(cycle_, node, excluded);
        if (!avoiding_.has_value()) return;
        kept = *avoiding_ == *answer.choice;
        choice = &*avoiding_;
      }
    }
    fitting_.push_back(i);
    for (size_t s = 0; s < raw_.size(); ++s) {
      raw_[s].push_back(kept && profile_.scorer_memoizable(s) ? answer.raw[s]
                                                              : profile_.RawScore(s, cycle_, node, *choice));
    }
    if (choices_ != nullptr) (*choices_)[i] = *choice;
  }

  // The scores on the wire, per node (0 where the pod does not fit).
  std::vector<int64_t> Wire() {
    std::vector<int64_t> weighted(fitting_.size(), 0);
    for (size_t s = 0; s < raw_.size(); ++s) {
      profile_.AddWeighted(s, absl::MakeSpan(raw_[s]), absl::MakeSpan(weighted));
    }
    const std::vector<int64_t> on_wire = Profile::WireScores(weighted);
    std::vector<int64_t> wire(nodes_.size(), 0);
    for (size_t k = 0; k < fitting_.size(); ++k) wire[fitting_[k]] = on_wire[k];
    return wire;
  }

 private:
  const Profile& profile_;
  const bool has_gpu_exclusions_;
  const CycleState& cycle_;
  const absl::Span<const NodeView* const> nodes_;
  std::vector<std::optional<GpuChoice>>* const choices_;
  std::vector<size_t> fitting_;
  std::vector<std::vector<int64_t>> raw_;  // per score plugin, per fitting node
  std::optional<GpuChoice> avoiding_;
};

std::vector<int64_t> ScoreMemo::ScoreLocked(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                            std::vector<std::optional<GpuChoice>>* choices,
                                            Counters& this_call) const {
  Slot& slot = SlotFor(cycle.request());
  const uint64_t use = ++slot.uses;
  Stages stages(*profile_, has_gpu_exclusions_, cycle, nodes, choices);
  const Pass pass = pool_ == nullptr ? PassOnCaller(cycle, nodes, slot, use, stages)
                                     : PassWithPool(cycle, nodes, slot, use, stages);

  const size_t n = nodes.size();
  const uint64_t n_parallel = pass.parallel ? pass.computed : 0;
  nodes_computed_.fetch_add(pass.computed, std::memory_order_relaxed);
  nodes_reused_.fetch_add(n - pass.computed, std::memory_order_relaxed);
  nodes_computed_in_parallel_.fetch_add(n_parallel, std::memory_order_relaxed);
  this_call.nodes_computed = pass.computed;
  this_call.nodes_reused = n - pass.computed;
  this_call.nodes_computed_in_parallel = n_parallel;

  slot.high_water = std::max(slot.high_water, pass.versioned);
  if (slot.entries.size() > MaxEntries(slot.high_water)) Sweep(slot, use);
  return stages.Wire();
}

ScoreMemo::Pass ScoreMemo::PassOnCaller(const CycleState& cycle, absl::Span<const NodeView* const> nodes, Slot& slot,
                                        uint64_t use, Stages& stages) const {
  // One pass, each node computed straight into the slot where its version is
  // new and read at once (before the next one can move it). A new request
  // computes every node: load their data ahead. (Where most are kept, the
  // loads would be wasted: their answers are in the slot.)
  Pass pass;
  const size_t n = nodes.size();
  std::vector<Entry>& entries = slot.entries;
  const bool all_new = entries.empty();
  if (all_new) {  // spare the regrowth and the rehashes
    entries.reserve(n);
    slot.at.reserve(n);
  }
  Entry unversioned;
  for (size_t i = 0; i < n; ++i) {
    if (all_new && i + kPrefetchDistance < n) PrefetchNode(*nodes[i + kPrefetchDistance]);
    const uint64_t version = nodes[i]->version;
    if (version == 0) {
      Evaluate(cycle, *nodes[i], unversioned);
      ++pass.computed;
      stages.Add(i, unversioned);
      continue;
    }
    ++pass.versioned;
    uint32_t at = 0;
    if (AtItsPosition(entries, i, version)) {
      at = static_cast<uint32_t>(i);
    } else {
      const auto [it, inserted] = slot.at.try_emplace(version, static_cast<uint32_t>(entries.size()));
      if (inserted) {
        Entry& entry = entries.emplace_back();
        entry.version = version;
        Evaluate(cycle, *nodes[i], entry);
        ++pass.computed;
      }
      at = it->second;
    }
    Entry& entry = entries[at];
    entry.last_use = use;
    stages.Add(i, entry);
  }
  return pass;
}

ScoreMemo::Pass ScoreMemo::PassWithPool(const CycleState& cycle, absl::Span<const NodeView* const> nodes, Slot& slot,
                                        uint64_t use, Stages& stages) const {
  // The answers kept at their version; the rest computed into `computed`, on
  // the pool when there are many, each thread writing its own run of
  // elements. They enter the slot only once read, so that pointers into it
  // stay valid.
  Pass pass;
  const size_t n = nodes.size();
  std::vector<Entry>& entries = slot.entries;
  std::vector<const Entry*>& answers = scratch_.answers;
  std::vector<size_t>& unknown = scratch_.unknown;
  std::vector<Entry>& computed = scratch_.computed;
  answers.assign(n, nullptr);
  unknown.clear();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t version = nodes[i]->version;
    if (version != 0) {
      ++pass.versioned;
      Entry* kept = AtItsPosition(entries, i, version) ? &entries[i] : nullptr;
      if (kept == nullptr) {
        if (const auto it = slot.at.find(version); it != slot.at.end()) kept = &entries[it->second];
      }
      if (kept != nullptr) {
        kept->last_use = use;
        answers[i] = kept;
        continue;
      }
    }
    unknown.push_back(i);
  }
  computed.clear();
  computed.resize(unknown.size());
  const auto compute = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      if (k + kPrefetchDistance < end) PrefetchNode(*nodes[unknown[k + kPrefetchDistance]]);
      Evaluate(cycle, *nodes[unknown[k]], computed[k]);
    }
  };
  pass.parallel = unknown.size() >= kMinParallelNodes;
  if (pass.parallel) {
    pool_->ParallelFor(unknown.size(), kParallelGrain, compute);
  } else {
    compute(0, unknown.size());
  }
  pass.computed = unknown.size();
  for (size_t k = 0; k < unknown.size(); ++k) answers[unknown[k]] = &computed[k];
  for (size_t i = 0; i < n; ++i) stages.Add(i, *answers[i]);
  KeepComputed(nodes, slot, use);
  return pass;
}

void ScoreMemo::KeepComputed(absl::Span<const NodeView* const> nodes, Slot& slot, uint64_t use) const {
  std::vector<Entry>& entries = slot.entries;
  const std::vector<size_t>& unknown = scratch_.unknown;
  std::vector<Entry>& computed = scratch_.computed;
  // The same version named twice in one request was computed twice,
  // identically; the first is kept.
  if (entries.empty()) {
    // A new request: the slot takes the computed array whole (and leaves its
    // own, emptied, as the next request's working space); answers not
    // indexed stay unread until the next sweep drops them.
    entries.swap(computed);
    slot.at.reserve(entries.size());
    for (size_t k = 0; k < entries.size(); ++k) {
      const uint64_t version = nodes[unknown[k]]->version;
      const bool indexed = version != 0 && slot.at.try_emplace(version, static_cast<uint32_t>(k)).second;
      entries[k].version = indexed ? version : 0;
      entries[k].last_use = indexed ? use : 0;
    }
  } else {
    for (size_t k = 0; k < unknown.size(); ++k) {
      const uint64_t version = nodes[unknown[k]]->version;
      if (version == 0 || !slot.at.try_emplace(version, static_cast<uint32_t>(entries.size())).second) continue;
      Entry& entry = entries.emplace_back(std::move(computed[k]));
      entry.version = version;
      entry.last_use = use;
    }
  }
}

void ScoreMemo::Evaluate(const CycleState& cycle, const NodeView& node, Entry& entry) const {
  entry.choice = profile_->ChooseGpusAvoiding(cycle, node, GpuIndexList{});
  entry.raw.clear();
  if (!entry.choice.has_value()) return;
  const size_t scorers = profile_->score_plugin_count();
  entry.raw.resize(scorers, 0);
  for (size_t s = 0; s < scorers; ++s) {
    if (profile_->scorer_memoizable(s)) entry.raw[s] = profile_->RawScore(s, cycle, node, *entry.choice);
  }
}

void ScoreMemo::Sweep(Slot& slot, uint64_t use) {
  std::vector<Entry>& entries = slot.entries;
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [use](const Entry& e) { return e.version == 0 || e.last_use != use; }),
                entries.end());
  slot.at.clear();
  slot.at.reserve(entries.size());
  for (size_t k = 0; k < entries.size(); ++k) slot.at.emplace(entries[k].version, static_cast<uint32_t>(k));
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
    // The evicted request's array, emptied, serves the new one: its pages
    // are mapped already.
    std::vector<Entry> storage = std::move(slot->entries);
    storage.clear();
    *slot = Slot{};
    slot->entries = std::move(storage);
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
  for (const Slot& slot : slots_) total += slot.entries.size();  // indexed or awaiting the sweep
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
