#include "scheduler/framework/score_memo.h"

#include <algorithm>
#include <utility>

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

ScoreMemo::ScoreMemo(std::shared_ptr<const Profile> profile, size_t max_requests)
    : profile_(std::move(profile)),
      memoizable_(profile_->memoizable()),
      has_gpu_filters_(profile_->has_gpu_filters()),
      max_requests_(std::max<size_t>(1, max_requests)) {}

std::vector<int64_t> ScoreMemo::Score(const PodGpuRequest& request, absl::Span<const NodeView> nodes,
                                      std::vector<std::optional<GpuChoice>>* choices, Counters* this_call) const {
  Counters call;
  std::vector<int64_t> scores;
  if (!memoizable_ || !mu_.TryLock()) {
    requests_bypassed_.fetch_add(1, std::memory_order_relaxed);
    call.requests_bypassed = 1;
    scores = profile_->Score(request, nodes, choices);
  } else {
    const Unlocker unlock(mu_);
    scores = ScoreLocked(request, nodes, choices, call);
  }
  if (this_call != nullptr) *this_call = call;
  return scores;
}

std::vector<int64_t> ScoreMemo::ScoreLocked(const PodGpuRequest& request, absl::Span<const NodeView> nodes,
                                            std::vector<std::optional<GpuChoice>>* choices,
                                            Counters& this_call) const {
  const Profile& profile = *profile_;
  const size_t n = nodes.size();
  const size_t scorers = profile.score_plugin_count();
  Slot& slot = SlotFor(request);
  const uint64_t use = ++slot.uses;
  if (choices != nullptr) choices->assign(n, std::nullopt);
  if (slot.entries.empty()) slot.entries.reserve(n);  // a new request: spare the rehashes

  // Profile::Score's first stage, from the memo where the node's version is
  // known: the nodes where the pod fits, and each score plugin's raw scores
  // on them in node order.
  std::vector<size_t> fitting;
  fitting.reserve(n);
  std::vector<std::vector<int64_t>> raw(scorers);
  for (std::vector<int64_t>& r : raw) r.reserve(n);
  size_t versioned = 0;
  uint64_t computed = 0;
  Entry unversioned;
  std::optional<GpuChoice> avoiding;
  for (size_t i = 0; i < n; ++i) {
    const NodeView& node = nodes[i];
    const Entry* entry = &unversioned;
    if (node.version == 0) {
      Evaluate(request, node, unversioned);
      ++computed;
    } else {
      ++versioned;
      auto [it, inserted] = slot.entries.try_emplace(node.version);
      if (inserted) {
        Evaluate(request, node, it->second);
        ++computed;
      }
      it->second.last_use = use;
      entry = &it->second;
    }
    if (!entry->choice.has_value()) continue;  // ruling GPUs out never makes room
    // GPUs ruled out now (live load) may take the kept choice away; the kept
    // raw scores hold only for the kept choice.
    const GpuChoice* choice = &*entry->choice;
    bool kept = true;
    if (has_gpu_filters_) {
      const GpuIndexList excluded = profile.ExcludedGpus(request, node);
      if (!excluded.empty()) {
        avoiding = profile.ChooseGpusAvoiding(request, node, excluded);
        if (!avoiding.has_value()) continue;
        kept = *avoiding == *entry->choice;
        choice = &*avoiding;
      }
    }
    fitting.push_back(i);
    for (size_t s = 0; s < scorers; ++s) {
      raw[s].push_back(kept && profile.scorer_memoizable(s) ? entry->raw[s]
                                                             : profile.RawScore(s, request, node, *choice));
    }
    if (choices != nullptr) (*choices)[i] = *choice;
  }
  nodes_computed_.fetch_add(computed, std::memory_order_relaxed);
  nodes_reused_.fetch_add(n - computed, std::memory_order_relaxed);
  this_call.nodes_computed = computed;
  this_call.nodes_reused = n - computed;

  slot.high_water = std::max(slot.high_water, versioned);
  if (slot.entries.size() > MaxEntries(slot.high_water)) {
    absl::erase_if(slot.entries, [use](const auto& kv) { return kv.second.last_use != use; });
  }

  // The second stage and the wire exactly as Profile::Score does them.
  std::vector<int64_t> weighted(fitting.size(), 0);
  for (size_t s = 0; s < scorers; ++s) profile.AddWeighted(s, absl::MakeSpan(raw[s]), absl::MakeSpan(weighted));
  const std::vector<int64_t> on_wire = Profile::WireScores(weighted);
  std::vector<int64_t> wire(n, 0);
  for (size_t k = 0; k < fitting.size(); ++k) wire[fitting[k]] = on_wire[k];
  return wire;
}

void ScoreMemo::Evaluate(const PodGpuRequest& request, const NodeView& node, Entry& entry) const {
  entry.choice = profile_->ChooseGpusAvoiding(request, node, GpuIndexList{});
  entry.raw.clear();
  if (!entry.choice.has_value()) return;
  const size_t scorers = profile_->score_plugin_count();
  entry.raw.resize(scorers, 0);
  for (size_t s = 0; s < scorers; ++s) {
    if (profile_->scorer_memoizable(s)) entry.raw[s] = profile_->RawScore(s, request, node, *entry.choice);
  }
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
    *slot = Slot{};
  }
  slot->request = request;
  slot->last_use = now;
  return *slot;
}

ScoreMemo::Counters ScoreMemo::counters() const {
  return Counters{.nodes_computed = nodes_computed_.load(std::memory_order_relaxed),
                  .nodes_reused = nodes_reused_.load(std::memory_order_relaxed),
                  .requests_bypassed = requests_bypassed_.load(std::memory_order_relaxed)};
}

size_t ScoreMemo::memoized_nodes() const {
  absl::MutexLock lock(&mu_);
  size_t total = 0;
  for (const Slot& slot : slots_) total += slot.entries.size();
  return total;
}

std::shared_ptr<const ScoreMemo> ScoreMemoHolder::For(std::shared_ptr<const Profile> profile) {
  absl::MutexLock lock(&mu_);
  if (memo_ == nullptr || memo_->profile() != profile) memo_ = std::make_shared<const ScoreMemo>(std::move(profile));
  return memo_;
}

}  // namespace tessera
