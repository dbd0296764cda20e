#include "extender/service/tenant_accounting.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/common/log.h"

namespace tessera {
namespace {


std::string_view MetricOf(GpuResource r) {
  switch (r) {
    case GpuResource::kMilli: return "tessera_tenant_gpu_milli";
    case GpuResource::kMemory: return "tessera_tenant_gpu_memory_mib";
    case GpuResource::kGpus: return "tessera_tenant_gpus";
  }
  return "tessera_tenant_unknown";
}

}  // namespace

TenantAccountant::TenantAccountant(MetricsRegistry& metrics, k8s::PodApi* api) : metrics_(metrics), api_(api) {
  for (std::string_view result : {"evicted", "refused"}) RunTimeEvictions(result);  // at 0 from the start, for rate()
}

Counter& TenantAccountant::RunTimeEvictions(std::string_view result) {
  return metrics_.Counter("tessera_tenant_run_time_evictions_total",
                          "Evictions of pods past their tenant's maxRunTime, by result.", {{"result", std::string(result)}});
}

void TenantAccountant::SetGauges(const TenantReport& r) {
  struct Kind {
    std::string_view name;
    const GpuTotals* totals;
    const GpuQuota* quota;
  };
  const Kind kinds[] = {{"used", &r.used, nullptr},       {"borrowed", &r.borrowed, nullptr},
                        {"lent", &r.lent, nullptr},       {"guaranteed", nullptr, &r.guaranteed},
                        {"max", nullptr, &r.max}};
  for (GpuResource resource : kGpuResources) {
    const std::string_view metric = MetricOf(resource);
    for (const Kind& k : kinds) {
      const int64_t v = k.totals != nullptr ? AmountOf(*k.totals, resource) : LimitOf(*k.quota, resource);
      if (v == GpuQuota::kUnlimited) continue;  // no such bound: no series
      metrics_
          .Gauge(metric, "A tenant's GPU resource: its guarantee, maximum, what it uses, borrows and lends.",
                 {{"tenant", r.name}, {"kind", std::string(k.name)}})
          .Set(static_cast<double>(v));
    }
  }
  metrics_
      .Gauge("tessera_tenant_pods_over_max_run_time", "A tenant's pods running longer than its maxRunTime.",
             {{"tenant", r.name}})
      .Set(static_cast<double>(r.over_max_run_time.size()));
}

void TenantAccountant::Tick(const ClusterSnapshot& snapshot, const TenantSet& tenants, absl::Time now,
                            bool may_evict) {
  const absl::Duration step =
      last_tick_ == absl::InfinitePast() ? absl::ZeroDuration() : std::min(now - last_tick_, kMaxStep);
  last_tick_ = now;
  const int64_t step_ms = std::max<int64_t>(0, absl::ToInt64Milliseconds(step));
  const TenantLedger ledger(tenants, snapshot);
  std::vector<TenantReport> report(tenants.size());
  for (TenantIndex t = 0; t < tenants.size(); ++t) {
    const TenantSpec& spec = tenants.tenant(t);
    TenantReport& r = report[t];
    r.name = spec.name;
    r.guaranteed = spec.guaranteed;
    r.max = spec.max;
    r.used = ledger.used(t);
    r.borrowed = ledger.borrowed(t);
    r.lent = ledger.lent(t);
    r.within_guarantee = ledger.WithinGuarantee(t);
    Usage& u = usage_[spec.name];
    const __int128 milli_ms = static_cast<__int128>(r.used.milli.value()) * step_ms;
    const __int128 mib_ms = static_cast<__int128>(r.used.memory.value()) * step_ms;
    u.milli_ms += milli_ms;
    u.mib_ms += mib_ms;
    r.gpu_milli_seconds = static_cast<int64_t>(u.milli_ms / 1000);
    r.gpu_memory_mib_seconds = static_cast<int64_t>(u.mib_ms / 1000);
    metrics_
        .Counter("tessera_tenant_gpu_milli_seconds_total",
                 "Guaranteed milli-GPU a tenant's pods held, times seconds: for chargeback.", {{"tenant", spec.name}})
        .Inc(static_cast<double>(milli_ms) / 1000.0);
    metrics_
        .Counter("tessera_tenant_gpu_memory_mib_seconds_total",
                 "GPU memory (MiB) a tenant's pods reserved, times seconds: for chargeback.", {{"tenant", spec.name}})
        .Inc(static_cast<double>(mib_ms) / 1000.0);
  }
  // Pods past their tenant's maximum run time.
  std::vector<std::pair<PodHolding, std::string>> overdue;  // the pod, and why
  for (NodeIndex i = 0; i < snapshot.node_count() && !tenants.empty(); ++i) {
    for (const PodHolding& pod : snapshot.node(i).pods) {
      if (pod.in_flight || pod.bound_at == absl::InfinitePast() || pod.assignment.gpus.empty()) continue;
      const std::optional<TenantIndex> t = tenants.TenantOf(pod.namespace_name(), pod.tenant_label);
      if (!t.has_value()) continue;
      const TenantSpec& spec = tenants.tenant(*t);
      if (spec.max_run_time == absl::InfiniteDuration() || now - pod.bound_at <= spec.max_run_time) continue;
      report[*t].over_max_run_time.push_back(pod.pod_key);
      if (!reported_[pod.uid]) {
        reported_[pod.uid] = true;
        LogWarning(absl::StrCat("pod ", pod.pod_key, " of tenant ", spec.name, " has run ",
                                absl::FormatDuration(absl::Trunc(now - pod.bound_at, absl::Seconds(1))),
                                ", past its tenant's maxRunTime ", absl::FormatDuration(spec.max_run_time)));
      }
      if (spec.evict_past_max_run_time) {
        overdue.emplace_back(pod, absl::StrCat("maxRunTime ", absl::FormatDuration(spec.max_run_time), " of tenant ",
                                               spec.name));
      }
    }
  }
  for (const TenantReport& r : report) SetGauges(r);
  if (may_evict) EvictOverdue(overdue, now);
  {
    absl::MutexLock lock(&report_mu_);
    report_ = std::move(report);
  }
}

void TenantAccountant::EvictOverdue(const std::vector<std::pair<PodHolding, std::string>>& overdue, absl::Time now) {
  if (api_ == nullptr) return;
  int evictions = 0;
  for (const auto& [pod, why] : overdue) {
    if (evictions >= kEvictionsPerTick) break;
    auto it = evicted_.find(pod.uid);
    if (it != evicted_.end() && now - it->second < kEvictionRetry) continue;
    evicted_[pod.uid] = now;
    ++evictions;
    const absl::Status st = api_->Evict(k8s::PodRefOf(pod), now + absl::Seconds(5));
    const bool done = st.ok() || absl::IsNotFound(st);
    RunTimeEvictions(done ? "evicted" : "refused").Inc();
    if (done) {
      LogInfo(absl::StrCat("evicted pod ", pod.pod_key, ": past its ", why));
    } else {
      LogWarning(absl::StrCat("cannot evict pod ", pod.pod_key, " past its ", why, ": ", st.message()));
    }
  }
  // Forget pods long gone, so the maps do not grow with every pod ever seen.
  if (evicted_.size() > 10'000) evicted_.clear();
  if (reported_.size() > 100'000) reported_.clear();
}

std::vector<TenantReport> TenantAccountant::Report() const {
  absl::MutexLock lock(&report_mu_);
  return report_;
}

}  // namespace tessera
