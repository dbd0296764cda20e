#include "sim/tenant_replay.h"

#include <algorithm>
#include <queue>
#include <set>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/tenancy/tenant_ledger.h"
#include "scheduler/tenancy/victim_choice.h"
#include "sim/node_choice.h"
#include "sim/workload.h"

namespace tessera::sim {
namespace {

struct Event {
  int64_t time = 0;
  int kind = 0;  // kDeparture before kArrival at one instant: what leaves frees room for what comes
  uint64_t seq = 0;
  uint32_t pod = 0;
  uint32_t placement = 0;  // departures: the placement they end (an evicted pod's is stale)
  bool operator>(const Event& o) const { return std::tie(time, kind, seq) > std::tie(o.time, o.kind, o.seq); }
};
constexpr int kDeparture = 0, kArrival = 1;

enum class PodState { kNotYet, kWaiting, kRunning, kDone, kRefused };
enum class Outcome { kPlaced, kOverMax, kWaits };

struct PodRun {
  PodState state = PodState::kNotYet;
  int64_t queued_at = 0;  // when it last entered the queue
  size_t node = 0;
  std::vector<GpuShare> shares;
  uint32_t placement = 0;
  bool ever_placed = false;
};

// The queue's order: highest priority, then longest waiting, then trace order.
using WaitKey = std::tuple<int32_t, int64_t, uint32_t>;  // (-priority, queued_at, pod)

class TenantRun {
 public:
  explicit TenantRun(const TenantReplayInput& in)
      : in_(in),
        profile_(*in.profile),
        tenants_(*in.tenants),
        cluster_(*in.empty_cluster),
        none_(static_cast<uint32_t>(tenants_.size())),
        runs_(in.pods->size()),
        nodes_(cluster_.size()),
        stats_(tenants_.size() + 1),
        waiting_milli_(tenants_.size() + 1, 0),
        views_(AllNodes(cluster_)) {
    capacity_ = GpuTotals{MilliGpu(cluster_.capacity_milli()), MemoryMiB(0), cluster_.capacity_milli() / 1000};
    for (size_t i = 0; i < cluster_.size(); ++i) nodes_[i].name = std::string(cluster_.View(i).name);
    for (TenantIndex t = 0; t < tenants_.size(); ++t) keys_.push_back(ConsumerKey{"", tenants_.tenant(t).name});
    keys_.push_back(ConsumerKey{"", ""});
    for (const PodGpuRequest& r : in.classes->requests) asks_.push_back(TotalsOfRequest(CycleState(r)));
    result_.memoised = in.memo == MemoMode::kAuto && !AnswersDependOnSalt(profile_, cluster_, *in.classes);
    if (result_.memoised) answers_.assign(in.classes->requests.size(), ClassAnswers(cluster_));
  }

  TenantReplayResult Run() {
    for (uint32_t p = 0; p < runs_.size(); ++p) {
      Push(Event{.time = *Pod(p).creation_time / std::max<int64_t>(1, in_.arrival_speedup), .kind = kArrival,
                 .seq = 0, .pod = p, .placement = 0});
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      Advance(e.time);
      if (e.kind == kArrival) {
        Arrive(e.pod, e.time);
      } else if (runs_[e.pod].state == PodState::kRunning && runs_[e.pod].placement == e.placement) {
        Unplace(e.pod);
        runs_[e.pod].state = PodState::kDone;
        RetryWaiting(e.time);
      }
    }
    for (uint32_t p = 0; p < runs_.size(); ++p) {
      if (runs_[p].state == PodState::kWaiting) ++stats_[TenantOf(p)].never_placed;
    }
    result_.tenants = std::move(stats_);
    result_.end_time = now_;
    return std::move(result_);
  }

 private:
  const TracePod& Pod(uint32_t p) const { return (*in_.pods)[p]; }
  uint32_t ClassOf(uint32_t p) const { return in_.classes->class_of[p]; }
  const PodTenancy& Tenancy(uint32_t p) const { return (*in_.tenancy)[p]; }
  uint32_t TenantOf(uint32_t p) const { return Tenancy(p).tenant.value_or(none_); }
  TenantLedger Ledger(const ConsumerUsage& consumers) const { return TenantLedger(tenants_, consumers, capacity_); }

  void Push(Event e) {
    e.seq = next_seq_++;
    events_.push(e);
  }

  // Adds each tenant's share of its guarantee over [now_, time).
  void Advance(int64_t time) {
    const int64_t dt = time - now_;
    now_ = time;
    if (dt <= 0) return;
    for (TenantIndex t = 0; t < tenants_.size(); ++t) {
      const int64_t g = tenants_.tenant(t).guaranteed.milli.value();
      if (g == GpuQuota::kUnlimited || g <= 0) continue;
      auto it = consumers_.find(keys_[t]);
      const int64_t held = it == consumers_.end() ? 0 : it->second.milli.value();
      stats_[t].guarantee_held += std::min(held, g) * dt;
      stats_[t].guarantee_wanted += std::min(held + waiting_milli_[t], g) * dt;
    }
  }

  void Arrive(uint32_t p, int64_t now) {
    ++stats_[TenantOf(p)].submitted;
    runs_[p].queued_at = now;
    const size_t evicted_before = evictions_;
    switch (TrySchedule(p, now, /*may_preempt=*/true)) {
      case Outcome::kPlaced: break;
      case Outcome::kOverMax:
        runs_[p].state = PodState::kRefused;
        ++stats_[TenantOf(p)].refused_over_max;
        break;
      case Outcome::kWaits: Enqueue(p, now); break;
    }
    // Victims may leave more room than the pod took.
    if (evictions_ != evicted_before) RetryWaiting(now);
  }

  void Enqueue(uint32_t p, int64_t now) {
    runs_[p].state = PodState::kWaiting;
    runs_[p].queued_at = now;
    waiting_.insert(WaitKey{-Tenancy(p).priority, now, p});
    waiting_milli_[TenantOf(p)] += asks_[ClassOf(p)].milli.value();
  }

  // Tries the queue in order, without preemption. Pods of one class and one
  // tenant get one answer: after one fails, the others of its kind are skipped.
  void RetryWaiting(int64_t now) {
    absl::flat_hash_set<uint64_t> failed;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const uint32_t p = std::get<2>(*it);
      const uint64_t kind = uint64_t{ClassOf(p)} * (none_ + 1) + TenantOf(p);
      if (failed.contains(kind) || TrySchedule(p, now, /*may_preempt=*/false) != Outcome::kPlaced) {
        failed.insert(kind);
        ++it;
        continue;
      }
      waiting_milli_[TenantOf(p)] -= asks_[ClassOf(p)].milli.value();
      it = waiting_.erase(it);
    }
  }

  Outcome TrySchedule(uint32_t p, int64_t now, bool may_preempt) {
    PodGpuRequest request = in_.classes->requests[ClassOf(p)];
    request.salt = SaltOf(in_.seed, p);
    const CycleState cycle(std::move(request));
    const TenantLedger ledger = Ledger(consumers_);
    QuotaVerdict verdict;
    if (cycle.wants_gpus()) verdict = ledger.Admit(Tenancy(p).tenant, asks_[ClassOf(p)]);
    if (verdict.code == QuotaVerdict::Code::kOverMax) return Outcome::kOverMax;
    if (verdict.ok()) {
      EvaluateNodes(profile_, cycle, views_, result_.memoised ? &answers_[ClassOf(p)] : nullptr, scratch_, run_);
      if (!run_.fitting.empty()) {
        const size_t node = BestNode(run_, *in_.node_rank);
        Place(p, node, cycle, ChoiceOn(profile_, cycle, cluster_.View(node)), now);
        return Outcome::kPlaced;
      }
    }
    if (may_preempt && cycle.wants_gpus() && Preempt(p, cycle, ledger, verdict.ok(), now)) return Outcome::kPlaced;
    return Outcome::kWaits;
  }

  bool HasLowerPriority(size_t node, int32_t priority, const TenantLedger& ledger, absl::Time now) const {
    return std::any_of(nodes_[node].pods.begin(), nodes_[node].pods.end(),
                       [&](const PodHolding& h) { return EffectivePriority(h, ledger, now) < priority; });
  }

  // GPU-aware preemption on the node whose victims cost least; `admitted`:
  // whether the quota admits the pod now (else evicting must make it so).
  bool Preempt(uint32_t p, const CycleState& cycle, const TenantLedger& ledger, bool admitted, int64_t now) {
    const absl::Time at = absl::FromUnixSeconds(now);
    const Preemptor preemptor{.priority = Tenancy(p).priority, .tenant = Tenancy(p).tenant, .ask = asks_[ClassOf(p)]};
    struct Option {
      VictimCost cost;
      uint32_t rank;
      size_t node;
      std::vector<uint32_t> victims;
    };
    std::vector<Option> options;
    for (size_t i = 0; i < cluster_.size(); ++i) {
      if (!HasLowerPriority(i, preemptor.priority, ledger, at)) continue;
      std::optional<VictimSet> set = ChooseVictims(profile_, cycle, preemptor, nodes_[i], cluster_.View(i), ledger, at);
      if (!set.has_value() || set->pods.empty()) continue;  // empty: it fits, and the quota is what stops it
      Option o{set->cost, (*in_.node_rank)[i], i, {}};
      for (const PodHolding* h : set->pods) {
        uint32_t q = 0;
        if (absl::SimpleAtoi(h->uid, &q)) o.victims.push_back(q);
      }
      options.push_back(std::move(o));
    }
    std::sort(options.begin(), options.end(),
              [](const Option& a, const Option& b) { return std::tie(a.cost, a.rank) < std::tie(b.cost, b.rank); });
    for (const Option& o : options) {
      if (!admitted && !AdmittedWithout(p, o.victims)) continue;
      for (uint32_t q : o.victims) Evict(q, now);
      const std::optional<GpuChoice> choice = FitOn(profile_, cycle, cluster_.View(o.node));
      if (!choice.has_value()) {
        ++result_.preemption_misses;
        return false;
      }
      Place(p, o.node, cycle, *choice, now);
      ++stats_[TenantOf(p)].preemptions;
      stats_[TenantOf(p)].victims += static_cast<int64_t>(o.victims.size());
      return true;
    }
    return false;
  }

  // Whether the quota would admit `p` with `victims` gone.
  bool AdmittedWithout(uint32_t p, const std::vector<uint32_t>& victims) const {
    ConsumerUsage after = consumers_;
    for (uint32_t q : victims) after[keys_[TenantOf(q)]].Subtract(TotalsOf(GpuAssignment{"", runs_[q].shares}));
    return Ledger(after).Admit(Tenancy(p).tenant, asks_[ClassOf(p)]).ok();
  }

  void Place(uint32_t p, size_t node, const CycleState& cycle, const GpuChoice& choice, int64_t now) {
    PodRun& run = runs_[p];
    run.shares = profile_.SharesFor(cycle, cluster_.View(node), choice);
    if (std::optional<std::string> why = PlacementViolation(cycle.request(), cluster_.View(node), run.shares)) {
      result_.violations.Record(p, cluster_.View(node), *std::move(why));
    }
    run.node = node;
    run.state = PodState::kRunning;
    ++run.placement;
    cluster_.Place(node, cycle.request(), run.shares);
    PodHolding holding{.uid = std::to_string(p), .pod_key = Pod(p).name, .assignment = {nodes_[node].name, run.shares},
                       .host = cycle.request().host, .in_flight = false, .bound_at = absl::FromUnixSeconds(now),
                       .priority = Tenancy(p).priority, .tenant_label = keys_[TenantOf(p)].tenant_label};
    consumers_[keys_[TenantOf(p)]].Add(TotalsOf(holding.assignment));
    nodes_[node].pods.push_back(std::move(holding));
    TenantStats& stats = stats_[TenantOf(p)];
    stats.waits.push_back(now - run.queued_at);
    if (!run.ever_placed) {
      run.ever_placed = true;
      ++stats.placed;
      ++result_.placed_pods;
    }
    Push(Event{.time = now + (*Pod(p).deletion_time - *Pod(p).creation_time), .kind = kDeparture, .seq = 0, .pod = p,
               .placement = run.placement});
  }

  // Takes a running pod off its node.
  void Unplace(uint32_t p) {
    PodRun& run = runs_[p];
    cluster_.Remove(run.node, in_.classes->requests[ClassOf(p)], run.shares);
    std::vector<PodHolding>& pods = nodes_[run.node].pods;
    const std::string uid = std::to_string(p);
    pods.erase(std::find_if(pods.begin(), pods.end(), [&](const PodHolding& h) { return h.uid == uid; }));
    consumers_[keys_[TenantOf(p)]].Subtract(TotalsOf(GpuAssignment{"", run.shares}));
    run.shares.clear();
  }

  void Evict(uint32_t q, int64_t now) {
    Unplace(q);
    ++runs_[q].placement;  // its departure no longer applies
    ++stats_[TenantOf(q)].evicted;
    ++evictions_;
    Enqueue(q, now);
  }

  const TenantReplayInput& in_;
  const Profile& profile_;
  const TenantSet& tenants_;
  Cluster cluster_;
  const uint32_t none_;  // the stats index of pods of no tenant
  GpuTotals capacity_;
  std::vector<PodRun> runs_;
  std::vector<NodeState> nodes_;  // only name and pods: what ChooseVictims reads besides the view
  std::vector<ConsumerKey> keys_;  // by tenant; none_: no tenant
  std::vector<GpuTotals> asks_;    // by class
  ConsumerUsage consumers_;
  std::vector<TenantStats> stats_;
  std::vector<int64_t> waiting_milli_;  // by tenant: what its waiting pods ask
  std::set<WaitKey> waiting_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t next_seq_ = 0;
  int64_t now_ = 0;
  size_t evictions_ = 0;
  TenantReplayResult result_;
  std::vector<const NodeView*> views_;  // every node of cluster_, for Profile::Run
  std::vector<ClassAnswers> answers_;    // per pod class, when answers are kept
  RunScratch scratch_;                   // Profile::Run's working space, from pod to pod
  RunResult run_;
};

}  // namespace

TenantReplayResult TenantReplay(const TenantReplayInput& input) { return TenantRun(input).Run(); }

std::vector<uint32_t> NodeRanks(size_t n, uint64_t seed) {
  Random random(seed);
  std::vector<uint32_t> rank(n);
  for (uint32_t i = 0; i < n; ++i) rank[i] = i;
  for (size_t i = n; i > 1; --i) std::swap(rank[i - 1], rank[random.Below(i)]);
  return rank;
}

}  // namespace tessera::sim
