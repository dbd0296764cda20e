// The over-commit audit of a real cluster: reads every pod's
// `tessera.io/gpu-assignment` annotation (the source of truth Tessera writes
// at bind) and checks that no GPU holds more than it has: at most 1000
// guaranteed milli-GPU and at most the card's memory. Used by the control-plane
// tests and the end-to-end benchmark after pods race for the same GPUs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/model/quantity.h"

namespace tessera::testing {

/// What a node offers: `gpus` cards of `memory` each.
struct AuditedNode {
  int gpus = 0;
  MemoryMiB memory{0};
};

struct AssignmentAudit {
  int bound_pods = 0;                  ///< Pods with spec.nodeName.
  int assigned_pods = 0;               ///< Bound pods carrying an assignment.
  int gpus_in_use = 0;                 ///< GPUs some pod holds a share of.
  std::vector<std::string> problems;   ///< Each over-commit or inconsistency, in words.

  [[nodiscard]] bool clean() const { return problems.empty(); }
};

/// Audits `pods` (Pod objects as the API server lists them) against `nodes`
/// (by name). A pod bound to a node the map lacks, an assignment naming
/// another node than spec.nodeName or a GPU the node does not have, an
/// unparsable assignment, and every over-committed GPU are problems.
/// Pods asking for no GPU (no `tessera.io/gpu-fraction`/`gpu-count`) may
/// carry no assignment; a GPU pod bound without one is a problem.
AssignmentAudit AuditAssignments(const std::vector<nlohmann::json>& pods,
                                 const std::map<std::string, AuditedNode>& nodes);

}  // namespace tessera::testing
