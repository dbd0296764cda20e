// The tenants of a policy file: who shares the cluster, and on what terms.
//
// A tenant is a team: the pods labelled `tessera.io/tenant: <name>`, and
// those of the namespaces it lists. Each has a guaranteed share of the
// cluster's GPUs (what it gets back by preemption when others borrow it) and
// a maximum (what it may hold while others leave GPUs idle), in guaranteed
// milli-GPU, reserved GPU memory and GPUs held. Immutable once built: a
// policy reload publishes a new set.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "scheduler/cache/consumer_usage.h"

namespace tessera {

/// A bound on GpuTotals; a field left unlimited is never checked. As a
/// guarantee, an unlimited field is one the guarantee does not speak of:
/// holding any amount of it is within the guarantee, and none of it is lent.
struct GpuQuota {
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();
  MilliGpu milli{kUnlimited};
  MemoryMiB memory{kUnlimited};
  int64_t gpus = kUnlimited;

  /// No GPU at all: a guarantee nobody configured.
  static GpuQuota None() { return GpuQuota{MilliGpu(0), MemoryMiB(0), 0}; }
  bool operator==(const GpuQuota&) const = default;
};

/// One of GpuTotals' three resources, for messages and metrics.
enum class GpuResource { kMilli, kMemory, kGpus };
std::string_view ResourceName(GpuResource r);  ///< "gpu-milli", "gpu-memory-mib", "gpus"
int64_t AmountOf(const GpuTotals& t, GpuResource r);
int64_t LimitOf(const GpuQuota& q, GpuResource r);
inline constexpr GpuResource kGpuResources[] = {GpuResource::kMilli, GpuResource::kMemory, GpuResource::kGpus};

struct TenantSpec {
  std::string name;
  std::vector<std::string> namespaces;  ///< Pods here belong to the tenant unless labelled otherwise.
  GpuQuota guaranteed = GpuQuota::None();  ///< None: all it holds is borrowed.
  GpuQuota max;
  /// A pod running longer is reported (and evicted with `evict_past_max_run_time`).
  absl::Duration max_run_time = absl::InfiniteDuration();
  bool evict_past_max_run_time = false;
  /// A pod keeps its priority for this long after it is bound; then
  /// preemption treats it as if it had `expired_priority` (when lower).
  absl::Duration priority_lifetime = absl::InfiniteDuration();
  int32_t expired_priority = 0;

  bool operator==(const TenantSpec&) const = default;
};

using TenantIndex = uint32_t;

class TenantSet {
 public:
  /// No tenants: every pod is free of quota.
  TenantSet() = default;
  /// Checks that names are unique and non-empty, that no namespace belongs
  /// to two tenants, and that each guarantee is within its maximum.
  static absl::StatusOr<TenantSet> Create(std::vector<TenantSpec> tenants);

  [[nodiscard]] bool empty() const { return tenants_.empty(); }
  [[nodiscard]] size_t size() const { return tenants_.size(); }
  [[nodiscard]] const TenantSpec& tenant(TenantIndex i) const { return tenants_[i]; }
  [[nodiscard]] absl::Span<const TenantSpec> tenants() const { return tenants_; }

  /// The tenant of a pod: the one its label names, else the one listing its
  /// namespace; nullopt when neither (or the label names no tenant).
  [[nodiscard]] std::optional<TenantIndex> TenantOf(std::string_view namespace_name,
                                                    std::string_view tenant_label) const;
  [[nodiscard]] std::optional<TenantIndex> TenantOf(const ConsumerKey& key) const {
    return TenantOf(key.namespace_name, key.tenant_label);
  }
  [[nodiscard]] std::optional<TenantIndex> Find(std::string_view name) const;

  bool operator==(const TenantSet& o) const { return tenants_ == o.tenants_; }

 private:
  std::vector<TenantSpec> tenants_;
  absl::flat_hash_map<std::string, TenantIndex> by_name_;
  absl::flat_hash_map<std::string, TenantIndex> by_namespace_;
};

}  // namespace tessera
