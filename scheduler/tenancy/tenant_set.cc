#include "scheduler/tenancy/tenant_set.h"

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

std::string_view ResourceName(GpuResource r) {
  switch (r) {
    case GpuResource::kMilli: return "gpu-milli";
    case GpuResource::kMemory: return "gpu-memory-mib";
    case GpuResource::kGpus: return "gpus";
  }
  return "?";
}

int64_t AmountOf(const GpuTotals& t, GpuResource r) {
  switch (r) {
    case GpuResource::kMilli: return t.milli.value();
    case GpuResource::kMemory: return t.memory.value();
    case GpuResource::kGpus: return t.gpus;
  }
  return 0;
}

int64_t LimitOf(const GpuQuota& q, GpuResource r) {
  switch (r) {
    case GpuResource::kMilli: return q.milli.value();
    case GpuResource::kMemory: return q.memory.value();
    case GpuResource::kGpus: return q.gpus;
  }
  return 0;
}

absl::StatusOr<TenantSet> TenantSet::Create(std::vector<TenantSpec> tenants) {
  TenantSet set;
  for (TenantIndex i = 0; i < tenants.size(); ++i) {
    const TenantSpec& t = tenants[i];
    if (t.name.empty()) return absl::InvalidArgumentError(absl::StrCat("tenants[", i, "]: name is empty"));
    if (!set.by_name_.emplace(t.name, i).second) {
      return absl::InvalidArgumentError(absl::StrCat("tenants[", i, "]: tenant ", t.name, " is listed twice"));
    }
    for (const std::string& ns : t.namespaces) {
      auto [it, inserted] = set.by_namespace_.emplace(ns, i);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tenants[", i, "]: namespace ", ns, " already belongs to tenant ",
                                                       tenants[it->second].name));
      }
    }
    for (GpuResource r : kGpuResources) {
      if (LimitOf(t.guaranteed, r) != GpuQuota::kUnlimited && LimitOf(t.guaranteed, r) > LimitOf(t.max, r)) {
        return absl::InvalidArgumentError(absl::StrCat("tenants[", i, "]: guaranteed ", Absl(ResourceName(r)), " ",
                                                       LimitOf(t.guaranteed, r), " is over max ", LimitOf(t.max, r)));
      }
    }
  }
  set.tenants_ = std::move(tenants);
  return set;
}

std::optional<TenantIndex> TenantSet::TenantOf(std::string_view namespace_name, std::string_view tenant_label) const {
  if (tenants_.empty()) return std::nullopt;
  if (!tenant_label.empty()) {
    // A label naming no tenant does not fall back to the namespace: the pod
    // said who it is, and a typo must not bill another team.
    return Find(tenant_label);
  }
  auto it = by_namespace_.find(Absl(namespace_name));
  if (it == by_namespace_.end()) return std::nullopt;
  return it->second;
}

std::optional<TenantIndex> TenantSet::Find(std::string_view name) const {
  auto it = by_name_.find(Absl(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera
