#include "extender/service/debug_state.h"

#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "k8s/gpu_assignment.h"
#include "scheduler/cache/pool_usage.h"

namespace tessera {
namespace {

// The policy's routing of task types to node pools, with what each pool
// holds now: which pods go where, and whether their pool has room.
nlohmann::json PoolRoutes(const ProfileSet& profiles, const ClusterSnapshot* snapshot) {
  std::map<std::string, int64_t> nodes;  // by pool
  std::map<std::string, std::pair<int64_t, int64_t>> milli;  // by pool: capacity, allocated
  if (snapshot != nullptr) {
    for (NodeIndex i = 0; i < snapshot->node_count(); ++i) ++nodes[snapshot->node(i).pool];
    for (const PoolModelUsage& u : UsageByPoolAndModel(*snapshot)) {
      milli[u.pool].first += u.milli_capacity.value();
      milli[u.pool].second += u.milli_allocated.value();
    }
  }
  nlohmann::json routes = nlohmann::json::array();
  for (const PoolPolicy& pool : profiles.pools()) {
    const auto [capacity, allocated] = milli[pool.name];
    routes.push_back({{"pool", pool.name},
                      {"taskTypes", pool.task_types},
                      {"exclusive", pool.exclusive},
                      {"plugins", pool.profile->PluginNames()},
                      {"nodes", nodes[pool.name]},
                      {"gpuMilli", {{"capacity", capacity}, {"allocated", allocated}}}});
  }
  return {{"defaultPlugins", profiles.default_profile()->PluginNames()}, {"routes", std::move(routes)}};
}

}  // namespace

std::string RenderDebugState(const DebugInputs& in) {
  nlohmann::json doc = nlohmann::json::object();
  doc["source"] = in.source;
  nlohmann::json in_flight = nlohmann::json::array();
  nlohmann::json node_problems = nlohmann::json::array();
  if (in.snapshot != nullptr) {
    const ClusterSnapshot& s = *in.snapshot;
    doc["generation"] = s.generation();
    doc["nodes"] = s.node_count();
    doc["gpus"] = s.gpu_count();
    for (NodeIndex i = 0; i < s.node_count(); ++i) {
      const NodeState& n = s.node(i);
      if (!n.inventory_error.ok()) {
        node_problems.push_back({{"node", n.name}, {"problem", std::string(n.inventory_error.message())}});
      }
      for (const std::string& p : n.problems) node_problems.push_back({{"node", n.name}, {"problem", p}});
      for (const PodHolding& pod : n.pods) {
        if (!pod.in_flight) continue;
        in_flight.push_back({{"pod", pod.pod_key}, {"uid", pod.uid}, {"node", n.name},
                             {"assignment", nlohmann::json::parse(k8s::FormatGpuAssignment(pod.assignment), nullptr,
                                                                  /*allow_exceptions=*/false)}});
      }
    }
  }
  nlohmann::json watches = nlohmann::json::object();
  for (const auto& [resource, w] : in.watches) {
    watches[resource] = {{"synced", w.synced},          {"inStep", w.in_step}, {"resourceVersion", w.resource_version},
                         {"lists", w.lists},            {"watches", w.watches},
                         {"events", w.events},          {"malformedEvents", w.malformed_events},
                         {"lastError", w.last_error}};
  }
  doc["watches"] = std::move(watches);
  doc["inFlight"] = std::move(in_flight);
  doc["nodeProblems"] = std::move(node_problems);
  nlohmann::json pods = nlohmann::json::array();
  for (const k8s::PodProblem& p : in.pod_problems) {
    pods.push_back({{"pod", p.pod}, {"uid", p.uid}, {"kind", p.kind}, {"message", p.message}});
  }
  doc["podProblems"] = std::move(pods);
  if (in.dra.has_value()) {
    doc["dra"] = {{"api", in.dra->api},
                  {"synced", in.dra->synced},
                  {"slices", in.dra->slices},
                  {"claims", in.dra->claims},
                  {"sharedNodes", in.dra->shared_nodes},
                  {"held", in.dra->held},
                  {"unmatched", in.dra->unmatched}};
  }
  if (!in.lease.name.empty()) {
    doc["lease"] = {{"name", in.lease.name},
                    {"identity", in.lease.identity},
                    {"holder", in.lease.holder},
                    {"leader", in.lease.leader}};
  }
  if (!in.mig_waits.empty()) {
    nlohmann::json waits = nlohmann::json::array();
    for (const MigWait& w : in.mig_waits) {
      nlohmann::json advice = nullptr;
      if (w.advice.has_value()) {
        const MigRepartitionAdvice& a = *w.advice;
        nlohmann::json destroy = nlohmann::json::array();
        for (const MigInstance& m : a.destroy) {
          destroy.push_back({{"profile", m.profile}, {"start", m.start}, {"uuid", m.uuid}});
        }
        advice = {{"node", a.node},          {"gpu", a.gpu_index},
                  {"gpuUuid", a.gpu_uuid},   {"model", a.gpu_model},
                  {"start", a.start},        {"destroyFreeInstances", std::move(destroy)},
                  {"podsToEvict", a.pods_to_evict}, {"geometryLoss", a.geometry_loss}};
      }
      waits.push_back({{"profile", w.profile}, {"pods", w.pods}, {"repartition", std::move(advice)}});
    }
    doc["migWaiting"] = std::move(waits);
  }
  if (in.workload != nullptr) {
    const WorkloadLearnerStatus& w = *in.workload;
    nlohmann::json learned = nlohmann::json::array();
    if (w.learned != nullptr) {
      for (const WorkloadPod& p : w.learned->pods()) learned.push_back(FormatWorkloadPod(p));
    }
    doc["workload"] = {{"enabled", w.settings.enabled},
                       {"inForce", in.learned_workload_in_force ? "learned" : "policy file"},
                       {"arrivals", w.arrivals},
                       {"windowPods", w.window_pods},
                       {"priorPercent", w.settings.prior_percent},
                       {"windowKinds", w.window_kinds},
                       {"publications", w.publications},
                       {"retellings", w.retellings},
                       {"droppedObservations", w.dropped},
                       {"learned", std::move(learned)}};
    if (w.learned != nullptr) {
      // Host stranding's test (policies/fgd/fragmentation.h), in milli-CPU per GPU; 0: not known.
      const auto per_gpu = [](TargetWorkload::CpuPerGpu r) { return r.gpu > 0 ? r.cpu * 1000 / r.gpu : 0; };
      doc["workload"]["clusterMilliCpuPerGpu"] = per_gpu(w.learned->cluster_cpu_per_gpu());
      doc["workload"]["askedMilliCpuPerGpu"] = per_gpu(w.learned->demand_cpu_per_gpu());
      doc["workload"]["cpuShort"] = w.learned->cpu_short();
      // And its other test: the GPU models the pods naming models would take half or more of.
      nlohmann::json models = nlohmann::json::array();
      for (const TargetWorkload::ModelGpus& m : w.learned->cluster_gpu_models()) {
        models.push_back({{"model", m.model}, {"gpus", m.gpus}});
      }
      doc["workload"]["clusterGpuModels"] = std::move(models);
      doc["workload"]["scarceGpuModels"] = w.learned->scarce_models();
      // And host stranding's idle-node reserve (policies/fgd/host_stranding.h):
      // the cluster's idle nodes and free GPU as the mix was told them, and
      // the kinds that take whole nodes, reserved where short of idle ones.
      int64_t idle_nodes = 0;
      for (const TargetWorkload::IdleNodes& idle : w.learned->cluster_idle_nodes()) idle_nodes += idle.nodes;
      doc["workload"]["clusterIdleNodes"] = idle_nodes;
      doc["workload"]["clusterFreeGpuMilli"] = w.learned->cluster_free_milli();
      nlohmann::json whole = nlohmann::json::array();
      for (const TargetWorkload::WholeNodeKind& k : w.learned->whole_node_kinds()) {
        whole.push_back({{"gpus", k.gpus}, {"milliCpu", k.cpu}, {"models", k.models}, {"reserved", k.reserved}});
      }
      doc["workload"]["wholeNodeKinds"] = std::move(whole);
    }
  }
  if (!in.tenants.empty()) {
    auto totals = [](const GpuTotals& t) {
      return nlohmann::json{{"gpuMilli", t.milli.value()}, {"gpuMemoryMiB", t.memory.value()}, {"gpus", t.gpus}};
    };
    auto quota = [](const GpuQuota& q) {
      nlohmann::json out = nlohmann::json::object();  // an unlimited field is left out
      if (q.milli.value() != GpuQuota::kUnlimited) out["gpuMilli"] = q.milli.value();
      if (q.memory.value() != GpuQuota::kUnlimited) out["gpuMemoryMiB"] = q.memory.value();
      if (q.gpus != GpuQuota::kUnlimited) out["gpus"] = q.gpus;
      return out;
    };
    nlohmann::json tenants = nlohmann::json::array();
    for (const TenantReport& t : in.tenants) {
      tenants.push_back({{"name", t.name},
                         {"guaranteed", quota(t.guaranteed)},
                         {"max", quota(t.max)},
                         {"used", totals(t.used)},
                         {"borrowed", totals(t.borrowed)},
                         {"lent", totals(t.lent)},
                         {"withinGuarantee", t.within_guarantee},
                         {"gpuMilliSeconds", t.gpu_milli_seconds},
                         {"gpuMemoryMiBSeconds", t.gpu_memory_mib_seconds},
                         {"podsOverMaxRunTime", t.over_max_run_time}});
    }
    doc["tenants"] = std::move(tenants);
  }
  if (in.profiles != nullptr && !in.profiles->pools().empty()) doc["pools"] = PoolRoutes(*in.profiles, in.snapshot);
  // Messages quote annotation values, which need not be valid UTF-8.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera
