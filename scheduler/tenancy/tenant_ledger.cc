#include "scheduler/tenancy/tenant_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

GpuTotals Make(int64_t milli, int64_t memory, int64_t gpus) { return GpuTotals{MilliGpu(milli), MemoryMiB(memory), gpus}; }

int64_t Saturating(int64_t a, int64_t b) { return a > GpuQuota::kUnlimited - b ? GpuQuota::kUnlimited : a + b; }

}  // namespace

TenantLedger::TenantLedger(const TenantSet& tenants, const ClusterSnapshot& snapshot)
    : TenantLedger(tenants, snapshot.consumers(), snapshot.healthy_capacity()) {}

TenantLedger::TenantLedger(const TenantSet& tenants, const ConsumerUsage& consumers, const GpuTotals& capacity)
    : tenants_(tenants), used_(tenants.size()), capacity_(capacity) {
  for (const auto& [key, totals] : consumers) {
    if (std::optional<TenantIndex> t = tenants.TenantOf(key)) {
      used_[*t].Add(totals);
    } else {
      untenanted_.Add(totals);
    }
  }
}

GpuTotals TenantLedger::idle() const {
  GpuTotals held = untenanted_;
  for (const GpuTotals& u : used_) held.Add(u);
  return Make(std::max<int64_t>(0, capacity_.milli.value() - held.milli.value()),
              std::max<int64_t>(0, capacity_.memory.value() - held.memory.value()),
              std::max<int64_t>(0, capacity_.gpus - held.gpus));
}

GpuTotals TenantLedger::borrowed(TenantIndex t) const {
  const GpuQuota& g = tenants_.tenant(t).guaranteed;
  const GpuTotals& u = used_[t];
  return Make(std::max<int64_t>(0, u.milli.value() - g.milli.value()),
              std::max<int64_t>(0, u.memory.value() - g.memory.value()), std::max<int64_t>(0, u.gpus - g.gpus));
}

GpuTotals TenantLedger::lent(TenantIndex t) const {
  int64_t out[3] = {0, 0, 0};
  for (size_t k = 0; k < 3; ++k) {
    const GpuResource r = kGpuResources[k];
    int64_t guaranteed = 0, idle_guarantees = 0, borrowing = AmountOf(untenanted_, r);
    // A guarantee silent on a resource lends none of it (GpuQuota).
    auto guarantee = [&](TenantIndex i) {
      const int64_t g = LimitOf(tenants_.tenant(i).guaranteed, r);
      return g == GpuQuota::kUnlimited ? 0 : g;
    };
    for (TenantIndex i = 0; i < tenants_.size(); ++i) {
      const int64_t g = guarantee(i);
      guaranteed = Saturating(guaranteed, g);
      idle_guarantees += std::max<int64_t>(0, g - AmountOf(used_[i], r));
      borrowing += AmountOf(borrowed(i), r);
    }
    const int64_t unguaranteed = std::max<int64_t>(0, AmountOf(capacity_, r) - guaranteed);
    const int64_t from_guarantees = std::min(idle_guarantees, std::max<int64_t>(0, borrowing - unguaranteed));
    const int64_t mine = std::max<int64_t>(0, guarantee(t) - AmountOf(used_[t], r));
    // mine × from_guarantees / idle_guarantees, in 128 bits: memory in MiB
    // over thousands of GPUs multiplies past 2^63.
    out[k] = idle_guarantees == 0 ? 0
                                  : static_cast<int64_t>(static_cast<__int128>(mine) * from_guarantees /
                                                         idle_guarantees);
  }
  return Make(out[0], out[1], out[2]);
}

bool TenantLedger::WithinGuarantee(TenantIndex t) const {
  const GpuQuota& g = tenants_.tenant(t).guaranteed;
  for (GpuResource r : kGpuResources) {
    if (AmountOf(used_[t], r) > LimitOf(g, r)) return false;
  }
  return true;
}

bool TenantLedger::StaysWithinGuarantee(std::optional<TenantIndex> t, const GpuTotals& ask) const {
  if (!t.has_value()) return false;
  const GpuQuota& g = tenants_.tenant(*t).guaranteed;
  for (GpuResource r : kGpuResources) {
    if (Saturating(AmountOf(used_[*t], r), AmountOf(ask, r)) > LimitOf(g, r)) return false;
  }
  return true;
}

QuotaVerdict TenantLedger::Admit(std::optional<TenantIndex> t, const GpuTotals& ask) const {
  if (!t.has_value()) return {};
  const TenantSpec& spec = tenants_.tenant(*t);
  const GpuTotals free = idle();
  for (GpuResource r : kGpuResources) {
    const int64_t holds = AmountOf(used_[*t], r);
    const int64_t asks = AmountOf(ask, r);
    const int64_t after = Saturating(holds, asks);
    const std::string_view name = ResourceName(r);
    if (after > LimitOf(spec.max, r)) {
      return {QuotaVerdict::Code::kOverMax,
              absl::StrCat("tenant ", spec.name, " would hold ", after, " ", Absl(name), ", over its max ",
                           LimitOf(spec.max, r), " (it holds ", holds, ", the pod asks ", asks, ")")};
    }
    // Idle GPUs are judged in compute and memory: pods sharing a GPU each
    // hold one of it, so holdings may outnumber the GPUs while shares are free.
    const bool counts_idle = r != GpuResource::kGpus;
    if (counts_idle && after > LimitOf(spec.guaranteed, r) && asks > AmountOf(free, r)) {
      return {QuotaVerdict::Code::kNoIdleToBorrow,
              absl::StrCat("tenant ", spec.name, " would hold ", after, " ", Absl(name), ", over its guarantee ",
                           LimitOf(spec.guaranteed, r), ", and only ", AmountOf(free, r), " ", Absl(name),
                           " are idle to borrow (the pod asks ", asks, ")")};
    }
  }
  return {};
}

}  // namespace tessera
