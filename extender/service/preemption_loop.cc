#include "extender/service/preemption_loop.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/common/log.h"
#include "scheduler/tenancy/tenant_ledger.h"
#include "scheduler/tenancy/victim_choice.h"

namespace tessera {

PreemptionLoop::PreemptionLoop(PreemptionLoopSources sources, PreemptionLoopOptions options)
    : sources_(std::move(sources)), options_(options) {
  if (sources_.metrics != nullptr) {
    constexpr std::string_view kPreemptions = "tessera_preemptions_total";
    preemptions_ = &sources_.metrics->Counter(
        kPreemptions, "Pods Tessera's own preemption evicted victims for (those kube-scheduler's cannot help).");
    evictions_ = &sources_.metrics->Counter("tessera_preemption_evictions_total",
                                            "Victims Tessera's own preemption evicted through the Eviction API.");
    evictions_refused_ = &sources_.metrics->Counter(
        "tessera_preemption_evictions_refused_total",
        "Evictions the API server refused (a PodDisruptionBudget, RBAC, a failure).");
    no_victims_ = &sources_.metrics->Counter(
        "tessera_preemption_no_victims_total", "Passes that found no node where evicting lower-priority pods frees a GPU.");
  }
}

PreemptionLoop::~PreemptionLoop() { Stop(); }

void PreemptionLoop::NoteUnschedulable(UnschedulablePod pod) {
  const absl::Time now = sources_.clock->Now();
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = waiting_.try_emplace(pod.uid);
  Waiting& w = it->second;
  if (inserted) {
    w.first_refused = now;
    w.not_before = now + options_.grace;
  }
  w.last_refused = now;
  w.pod = std::move(pod);
}

void PreemptionLoop::NoteSchedulerPreempted(std::string_view uid) {
  const absl::Time now = sources_.clock->Now();
  absl::MutexLock lock(&mu_);
  auto it = waiting_.find(std::string(uid));
  if (it != waiting_.end()) it->second.not_before = std::max(it->second.not_before, now + options_.hold);
}

size_t PreemptionLoop::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_.size();
}

int PreemptionLoop::RunOnce() {
  if (sources_.is_writer && !sources_.is_writer()) return 0;
  const absl::Time now = sources_.clock->Now();
  std::vector<Waiting> due;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const Waiting& w = it->second;
      const std::optional<PodRecord> record = sources_.pods->Find(w.pod.uid);
      const bool pending = record.has_value() && record->node_name.empty();
      if (!pending || now - w.last_refused > options_.forget_after) {
        waiting_.erase(it++);
        continue;
      }
      if (w.not_before <= now) due.push_back(w);
      ++it;
    }
  }
  // Most important first: a later pod of lower priority must not take what
  // an earlier pass freed for a higher one.
  std::sort(due.begin(), due.end(), [](const Waiting& a, const Waiting& b) {
    if (a.pod.priority != b.pod.priority) return a.pod.priority > b.pod.priority;
    return a.first_refused < b.first_refused;
  });
  int preempted = 0;
  for (const Waiting& w : due) {
    const bool evicted = PreemptFor(w, now);
    preempted += evicted ? 1 : 0;
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(w.pod.uid);
    if (it == waiting_.end()) continue;
    // After evicting, wait for the victims to go; after finding nothing,
    // look again next round (pods come and go).
    it->second.not_before = now + (evicted ? options_.hold : options_.round);
  }
  return preempted;
}

bool PreemptionLoop::PreemptFor(const Waiting& w, absl::Time now) {
  const std::shared_ptr<const ClusterSnapshot> snapshot = sources_.model->Current();
  const std::shared_ptr<const ProfileSet> policy =
      sources_.profiles ? sources_.profiles() : ProfileSet::Single(sources_.profile());
  const PoolRoute route(*policy, w.pod.task_type);
  const std::shared_ptr<const Profile>& profile = route.profile();
  static const TenantSet kNoTenants;
  const std::shared_ptr<const TenantSet> tenants = sources_.tenants ? sources_.tenants() : nullptr;
  const TenantSet& tenant_set = tenants != nullptr ? *tenants : kNoTenants;
  const TenantLedger ledger(tenant_set, *snapshot);
  const CycleState cycle(w.pod.request);
  const Preemptor preemptor{.priority = w.pod.priority,
                            .tenant = tenant_set.TenantOf(w.pod.namespace_name, w.pod.tenant_label),
                            .ask = TotalsOfRequest(cycle)};
  std::optional<VictimSet> best;
  NodeIndex best_node = 0;
  for (NodeIndex i = 0; i < snapshot->node_count(); ++i) {
    if (!route.Admits(snapshot->node(i).pool)) continue;  // another pool's: the pod may not go there
    std::optional<VictimSet> victims =
        ChooseVictims(*profile, cycle, preemptor, snapshot->node(i), snapshot->View(i), ledger, now);
    if (!victims.has_value()) continue;
    if (victims->pods.empty()) return false;  // it fits now: kube-scheduler's next try places it
    if (!best.has_value() || victims->cost < best->cost) {
      best = std::move(victims);
      best_node = i;
    }
  }
  if (!best.has_value()) {
    if (no_victims_ != nullptr) no_victims_->Inc();
    return false;
  }
  const std::string& node = snapshot->node(best_node).name;
  const std::string pod_key = absl::StrCat(w.pod.namespace_name, "/", w.pod.name);
  std::vector<std::string> evicted;
  for (const PodHolding* victim : best->pods) {
    const absl::Status st = sources_.api->Evict(k8s::PodRefOf(*victim), sources_.clock->Now() + options_.api_timeout);
    if (st.ok() || absl::IsNotFound(st)) {
      evicted.push_back(victim->pod_key);
      if (evictions_ != nullptr) evictions_->Inc();
      continue;
    }
    if (evictions_refused_ != nullptr) evictions_refused_->Inc();
    LogWarning(absl::StrCat("preemption for pod ", pod_key, ": cannot evict ", victim->pod_key, " from node ", node,
                            ": ", st.message()));
  }
  if (evicted.empty()) return false;
  const k8s::PodRef ref{w.pod.namespace_name, w.pod.name, w.pod.uid};
  if (absl::Status st = sources_.api->Nominate(ref, node, sources_.clock->Now() + options_.api_timeout); !st.ok()) {
    LogWarning(absl::StrCat("preemption for pod ", pod_key, ": cannot nominate node ", node, ": ", st.message()));
  }
  if (preemptions_ != nullptr) preemptions_->Inc();
  LogInfo(absl::StrCat("preempted for pod ", pod_key, " (priority ", w.pod.priority, ") on node ", node, ": evicted ",
                       absl::StrJoin(evicted, ", ")));
  return true;
}

void PreemptionLoop::Start() {
  thread_.Start("preemption", options_.round, [this] { (void)RunOnce(); });
}

void PreemptionLoop::Stop() { thread_.Stop(); }

}  // namespace tessera
