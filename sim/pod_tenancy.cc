#include "sim/pod_tenancy.h"

#include "absl/strings/str_cat.h"
#include "policies/stable_hash.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::sim {

absl::StatusOr<TenantRule> ParseTenantRule(std::string_view text) {
  if (text == "hash") return TenantRule::kHash;
  if (text == "qos") return TenantRule::kQos;
  if (text == "column") return TenantRule::kColumn;
  return absl::InvalidArgumentError(absl::StrCat("tenant rule must be hash, qos or column; got \"", Absl(text), "\""));
}

int32_t PriorityOfQos(std::string_view qos) {
  if (qos == "LS" || qos == "Guaranteed") return 2000;
  if (qos == "Burstable") return 1000;
  return 0;
}

absl::StatusOr<std::vector<PodTenancy>> AssignTenancy(const std::vector<TracePod>& pods, const TenantSet& tenants,
                                                      TenantRule rule) {
  std::vector<PodTenancy> out;
  out.reserve(pods.size());
  for (const TracePod& p : pods) {
    PodTenancy t{.tenant = std::nullopt, .priority = PriorityOfQos(p.qos)};
    if (!tenants.empty()) {
      switch (rule) {
        case TenantRule::kHash:
          t.tenant = static_cast<TenantIndex>(StableHash(0, p.name) % tenants.size());
          break;
        case TenantRule::kQos:
          t.tenant = tenants.Find(p.qos);
          break;
        case TenantRule::kColumn:
          if (p.tenant.empty()) break;
          t.tenant = tenants.Find(p.tenant);
          if (!t.tenant.has_value()) {
            return absl::InvalidArgumentError(
                absl::StrCat("pod ", p.name, ": tenant \"", p.tenant, "\" is not a tenant of the tenants file"));
          }
          break;
      }
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace tessera::sim
