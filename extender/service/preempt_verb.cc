#include "extender/service/preempt_verb.h"

#include <algorithm>

#include "scheduler/common/json_text.h"
#include "scheduler/tenancy/victim_choice.h"

namespace tessera {
namespace {

void AppendNode(std::string& out, std::string_view node, const std::vector<std::string_view>& uids,
                int64_t pdb_violations) {
  AppendJsonString(out, node);
  out += ":{\"Pods\":[";
  for (size_t i = 0; i < uids.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"UID\":";
    AppendJsonString(out, uids[i]);
    out += '}';
  }
  out += "],\"NumPDBViolations\":";
  out += std::to_string(pdb_violations);
  out += '}';
}

bool SameUids(std::vector<std::string_view> a, std::vector<std::string_view> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

std::string AnswerPreemption(const k8s::ExtenderPreemptionArgs& args, const PodGpuRequest& request,
                             const ClusterSnapshot& snapshot, const Profile& profile, const TenantSet& tenants,
                             absl::Time now, PreemptOutcome* outcome, const PoolRoute* route) {
  const CycleState cycle(request);
  const TenantLedger ledger(tenants, snapshot);
  const Preemptor preemptor{.priority = args.pod.priority,
                            .tenant = tenants.TenantOf(args.pod.namespace_name, args.pod.tenant_label),
                            .ask = TotalsOfRequest(cycle)};
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  PreemptOutcome counted;
  for (const k8s::NodeVictims& proposed : args.victims) {
    ++counted.nodes_proposed;
    std::vector<std::string_view> uids;
    int64_t pdb_violations = 0;
    const std::optional<NodeIndex> index = snapshot.FindNode(proposed.node);
    if (route != nullptr && index.has_value() && !route->Admits(snapshot.node(*index).pool)) continue;
    if (!cycle.wants_gpus()) {
      uids = proposed.pod_uids;
      pdb_violations = proposed.num_pdb_violations;
    } else {
      if (!index.has_value()) continue;
      const std::optional<VictimSet> victims =
          ChooseVictims(profile, cycle, preemptor, snapshot.node(*index), snapshot.View(*index), ledger, now);
      if (!victims.has_value()) continue;  // no set of evictable pods frees a GPU for it
      // Its GPUs fit already: what kube-scheduler's dry run found to evict
      // is for what kube-scheduler checks itself (CPU, ports, ...).
      if (victims->pods.empty()) uids = proposed.pod_uids;
      for (const PodHolding* pod : victims->pods) uids.push_back(pod->uid);
      if (SameUids(uids, proposed.pod_uids)) pdb_violations = proposed.num_pdb_violations;
    }
    if (!first) out += ',';
    first = false;
    AppendNode(out, proposed.node, uids, pdb_violations);
    ++counted.nodes_kept;
    counted.victims += uids.size();
  }
  out += "}}";
  if (outcome != nullptr) *outcome = counted;
  return out;
}

}  // namespace tessera
