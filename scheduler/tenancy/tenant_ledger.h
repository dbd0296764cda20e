// Each tenant's GPU use in one cluster snapshot, and the quota decisions
// made from it: may a pod of this tenant be placed, is the tenant borrowing.
//
// Borrowing: a tenant may hold more than its guarantee, up to its maximum,
// while GPUs are idle; what it holds over its guarantee is borrowed, and is
// what preemption takes back first when a tenant under its own guarantee
// needs room. Pods of no tenant have no quota and count as borrowed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/tenancy/tenant_set.h"

namespace tessera {

/// A quota decision for one pod.
struct QuotaVerdict {
  enum class Code {
    kAdmit,            ///< Within quota.
    kOverMax,          ///< The tenant would hold more than its max: never now, whatever is evicted.
    kNoIdleToBorrow,   ///< Over its guarantee with too little idle: only what others free could help.
  };
  Code code = Code::kAdmit;
  std::string message;  ///< Names the tenant, the resource and the numbers.
  [[nodiscard]] bool ok() const { return code == Code::kAdmit; }
};

class TenantLedger {
 public:
  /// Sums `snapshot`'s consumers per tenant of `tenants` (both must outlive the ledger).
  TenantLedger(const TenantSet& tenants, const ClusterSnapshot& snapshot);
  /// The same from the consumers' totals and the healthy capacity alone, for
  /// a caller that keeps them without a snapshot (the simulator).
  TenantLedger(const TenantSet& tenants, const ConsumerUsage& consumers, const GpuTotals& capacity);

  [[nodiscard]] const TenantSet& tenants() const { return tenants_; }
  /// What tenant `t`'s pods hold (binds in flight included).
  [[nodiscard]] const GpuTotals& used(TenantIndex t) const { return used_[t]; }
  /// What pods of no tenant hold.
  [[nodiscard]] const GpuTotals& untenanted() const { return untenanted_; }
  /// The healthy GPUs of the cluster.
  [[nodiscard]] const GpuTotals& capacity() const { return capacity_; }
  /// Capacity no pod holds (never below zero).
  [[nodiscard]] GpuTotals idle() const;
  /// What `t` holds over its guarantee, per resource (zero where it is under).
  [[nodiscard]] GpuTotals borrowed(TenantIndex t) const;
  /// The part of `t`'s idle guarantee that borrowers hold now: borrowers
  /// first fill what no tenant is guaranteed, then the idle guarantees, each
  /// in proportion to its size.
  [[nodiscard]] GpuTotals lent(TenantIndex t) const;
  /// Whether `t` holds no more than its guarantee of every resource.
  [[nodiscard]] bool WithinGuarantee(TenantIndex t) const;
  /// Whether a pod of `t` asking `ask` keeps its tenant within its guarantee
  /// (no tenant: never; such pods borrow).
  [[nodiscard]] bool StaysWithinGuarantee(std::optional<TenantIndex> t, const GpuTotals& ask) const;

  /// May a pod of tenant `t` (nullopt: none, always admitted) asking `ask` be placed?
  [[nodiscard]] QuotaVerdict Admit(std::optional<TenantIndex> t, const GpuTotals& ask) const;

 private:
  const TenantSet& tenants_;
  std::vector<GpuTotals> used_;
  GpuTotals untenanted_;
  GpuTotals capacity_;
};

}  // namespace tessera
