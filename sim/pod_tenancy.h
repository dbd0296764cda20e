// Which tenant each trace pod belongs to, and at what priority it runs: what
// a Kubernetes pod says with its `tessera.io/tenant` label and its
// PriorityClass, read from the trace (the openb lists have neither).
//
// Priority comes from the trace's `qos` column (the Alibaba cluster's
// classes), highest first:
//
//   | qos        | priority | why                                                    |
//   |------------|----------|--------------------------------------------------------|
//   | LS         | 2000     | latency-sensitive serving: what preemption makes room for |
//   | Guaranteed | 2000     | Kubernetes' Guaranteed class, as LS                    |
//   | Burstable  | 1000     | between                                                |
//   | BE         | 0        | best-effort batch: what preemption evicts first        |
//   | other/none | 0        |                                                        |
//
// The tenant comes from one of three rules (TenantRule).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/tenancy/tenant_set.h"
#include "sim/trace.h"

namespace tessera::sim {

enum class TenantRule {
  /// A stable hash of the pod's name (FNV-1a, policies/stable_hash.h)
  /// modulo the number of tenants, in the order the policy file lists them:
  /// every tenant gets a like share of every kind of pod.
  kHash,
  /// The tenant named as the pod's qos class ("LS", "BE", ...); a class that
  /// names no tenant leaves the pod without one.
  kQos,
  /// The pod list's `tenant` column; empty: no tenant. A value that names no
  /// tenant is an error (the extender refuses such a label too).
  kColumn,
};

/// "hash", "qos" or "column".
absl::StatusOr<TenantRule> ParseTenantRule(std::string_view text);

/// The priority of a trace QoS class (table above).
int32_t PriorityOfQos(std::string_view qos);

struct PodTenancy {
  std::optional<TenantIndex> tenant;  ///< nullopt: no tenant (no quota; counts as borrowing).
  int32_t priority = 0;
};

/// Per pod of `pods`, same order. With no tenants every pod has none.
absl::StatusOr<std::vector<PodTenancy>> AssignTenancy(const std::vector<TracePod>& pods, const TenantSet& tenants,
                                                      TenantRule rule);

}  // namespace tessera::sim
