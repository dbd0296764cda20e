#include "sim/experiment.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/model/absl_compat.h"
#include "sim/cluster.h"
#include "sim/trace.h"
#include "sim/workload.h"
#include "yaml-cpp/yaml.h"

namespace tessera::sim {
namespace {

// Everything a run of one trace needs, shared read-only by its runs.
struct LoadedTrace {
  NamedPath spec;
  std::vector<TracePod> pods;
  PodClasses classes;
  std::vector<WorkloadPod> typical_pods;
  std::optional<TargetWorkload> typical;
  std::vector<PodTenancy> tenancy;  // the tenant replay's
};

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The `tenants:` section of the policy file at `path`.
absl::StatusOr<std::shared_ptr<const TenantSet>> LoadTenants(const std::string& path, const PluginRegistry& registry) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(*text, path, registry);
  if (!policy.ok()) return policy.status();
  if (policy->tenants->empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tenants: section"));
  return policy->tenants;
}

// Every pod of the tenant replay needs its life's two ends.
absl::Status CheckTimed(const NamedPath& trace, const std::vector<TracePod>& pods) {
  for (const TracePod& p : pods) {
    if (!p.creation_time.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          trace.path, ": the tenant replay needs the creation_time and deletion_time columns; this list has none"));
    }
  }
  return absl::OkStatus();
}

void RunPaperReplay(const LoadedTrace& trace, const ReplayPolicy& policy, const Cluster& empty_cluster,
                    const ExperimentOptions& options, uint64_t seed, RunSummary& s) {
  const RunWorkload workload = MakeRunWorkload(trace.pods, empty_cluster.size(), empty_cluster.capacity_milli(),
                                               options.inflation_percent, seed);
  const ReplayResult result = Replay(ReplayInput{.profile = policy.profile.get(),
                                                 .empty_cluster = &empty_cluster,
                                                 .pods = &trace.pods,
                                                 .classes = &trace.classes,
                                                 .workload = &workload,
                                                 .typical = trace.typical.has_value() ? &*trace.typical : nullptr,
                                                 .seed = seed,
                                                 .memo = options.memo,
                                                 .keep_cluster = false,
                                                 .learning = policy.learning.has_value() ? &*policy.learning : nullptr});
  s.violations = result.violations;
  for (uint32_t pod : workload.pods) s.mig_pods += trace.classes.kinds[trace.classes.class_of[pod]] == PodKind::kMig;
  s.curve = CurveOf(result.events, empty_cluster.capacity_milli());
  s.failed_pods = result.failed_pods;
  s.failed_milli = result.failed_milli;
  s.submitted_pods = static_cast<int64_t>(workload.pods.size());
  s.placed_pods = result.placed_pods;
  s.memoised = result.memoised;
}

void RunTenantReplay(const LoadedTrace& trace, const Profile& profile, const Cluster& empty_cluster,
                     const std::shared_ptr<const TenantSet>& tenants, const ExperimentOptions& options, uint64_t seed,
                     RunSummary& s) {
  const std::vector<uint32_t> rank = NodeRanks(empty_cluster.size(), seed);
  TenantReplayResult result = TenantReplay(TenantReplayInput{.profile = &profile,
                                                             .empty_cluster = &empty_cluster,
                                                             .pods = &trace.pods,
                                                             .classes = &trace.classes,
                                                             .tenants = tenants.get(),
                                                             .tenancy = &trace.tenancy,
                                                             .node_rank = &rank,
                                                             .arrival_speedup = options.tenancy->arrival_speedup,
                                                             .seed = seed,
                                                             .memo = options.memo});
  s.submitted_pods = static_cast<int64_t>(trace.pods.size());
  s.placed_pods = result.placed_pods;
  s.memoised = result.memoised;
  s.tenants = tenants;
  s.violations = result.violations;
  for (uint32_t cls : trace.classes.class_of) s.mig_pods += trace.classes.kinds[cls] == PodKind::kMig;
  s.tenancy = std::move(result);
}

}  // namespace

NamedPath ParseNamedPath(std::string_view text) {
  if (const size_t eq = text.find('='); eq != std::string_view::npos) {
    return NamedPath{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  }
  std::string_view stem = text;
  if (const size_t slash = stem.rfind('/'); slash != std::string_view::npos) stem.remove_prefix(slash + 1);
  if (const size_t dot = stem.rfind('.'); dot != std::string_view::npos) stem = stem.substr(0, dot);
  constexpr std::string_view kPodListPrefix = "openb_pod_list_";
  if (absl::StartsWith(Absl(stem), Absl(kPodListPrefix))) stem.remove_prefix(kPodListPrefix.size());
  constexpr std::string_view kPolicySuffix = "-policy";
  if (absl::EndsWith(Absl(stem), Absl(kPolicySuffix))) stem.remove_suffix(kPolicySuffix.size());
  return NamedPath{std::string(stem), std::string(text)};
}

absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyForTrace(const std::string& path,
                                                                  const PluginRegistry& registry,
                                                                  const std::vector<WorkloadPod>* typical) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::shared_ptr<const Profile>> as_written = LoadPolicyText(*text, path, registry);
  if (!as_written.ok() || typical == nullptr) return as_written;

  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  bool replaced = false;
  for (YAML::Node plugin : root["plugins"]) {
    YAML::Node args = plugin["args"];
    if (!args.IsMap() || !args["workload"]) continue;
    YAML::Node items(YAML::NodeType::Sequence);
    for (const WorkloadPod& p : *typical) items.push_back(FormatWorkloadPod(p));
    args["workload"] = items;
    replaced = true;
  }
  if (!replaced) return as_written;
  YAML::Emitter out;
  out << root;
  return LoadPolicyText(out.c_str(), absl::StrCat(path, " (workload from the trace)"), registry);
}

absl::StatusOr<ReplayPolicy> LoadReplayPolicy(const std::string& path, const PluginRegistry& registry,
                                              const std::vector<WorkloadPod>* typical, bool learn) {
  if (learn) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return text.status();
    absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(*text, path, registry);
    if (!policy.ok()) return policy.status();
    if (policy->learning.enabled) return ReplayPolicy{std::move(policy->profile), policy->learning};
  }
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyForTrace(path, registry, typical);
  if (!profile.ok()) return profile.status();
  return ReplayPolicy{*std::move(profile), std::nullopt};
}

absl::StatusOr<std::vector<RunSummary>> RunExperiment(const ExperimentOptions& options,
                                                      const std::function<void(const RunSummary&)>& progress) {
  if (options.traces.empty()) return absl::InvalidArgumentError("no pod list to replay");
  if (options.policies.empty()) return absl::InvalidArgumentError("no policy to replay");
  if (options.seeds.empty()) return absl::InvalidArgumentError("no seed to replay");
  absl::StatusOr<std::vector<TraceNode>> nodes = LoadNodeList(options.nodes);
  if (!nodes.ok()) return nodes.status();
  if (options.node_sample > 1) {
    std::vector<TraceNode> sample;
    for (size_t i = 0; i < nodes->size(); i += options.node_sample) sample.push_back((*nodes)[i]);
    *nodes = std::move(sample);
  }
  ApplyFleet(options.fleet, *nodes);
  ApplyStress(options.stress, *nodes);
  const Cluster empty_cluster(*nodes);
  if (empty_cluster.capacity_milli() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(options.nodes, ": the nodes have no GPUs"));
  }

  const PluginRegistry registry = NewBuiltinRegistry();
  std::shared_ptr<const TenantSet> tenants;
  if (options.tenancy.has_value()) {
    absl::StatusOr<std::shared_ptr<const TenantSet>> loaded = LoadTenants(options.tenancy->tenants_path, registry);
    if (!loaded.ok()) return loaded.status();
    tenants = *std::move(loaded);
  }

  std::vector<LoadedTrace> traces;
  for (const NamedPath& spec : options.traces) {
    absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(spec.path);
    if (!pods.ok()) return pods.status();
    ApplyFleet(options.fleet, *pods);
    ApplyStress(options.stress, *pods);
    LoadedTrace t{.spec = spec, .pods = *std::move(pods), .classes = {}, .typical_pods = {}, .typical = std::nullopt, .tenancy = {}};
    t.classes = ClassifyPods(t.pods);
    t.typical_pods = TypicalPods(t.pods, options.typical_coverage_percent);
    absl::StatusOr<TargetWorkload> typical = TargetWorkload::Create(t.typical_pods);
    if (typical.ok()) t.typical = *std::move(typical);
    if (tenants != nullptr) {
      if (absl::Status st = CheckTimed(spec, t.pods); !st.ok()) return st;
      absl::StatusOr<std::vector<PodTenancy>> tenancy = AssignTenancy(t.pods, *tenants, options.tenancy->rule);
      if (!tenancy.ok()) return absl::InvalidArgumentError(absl::StrCat(spec.path, ": ", tenancy.status().message()));
      t.tenancy = *std::move(tenancy);
    }
    traces.push_back(std::move(t));
  }

  // profiles[trace][policy]; the tenant replay does not learn.
  std::vector<std::vector<ReplayPolicy>> profiles(traces.size());
  for (size_t t = 0; t < traces.size(); ++t) {
    for (const NamedPath& policy : options.policies) {
      absl::StatusOr<ReplayPolicy> loaded =
          LoadReplayPolicy(policy.path, registry, options.workload_from_trace ? &traces[t].typical_pods : nullptr,
                           options.learn_workload && tenants == nullptr);
      if (!loaded.ok()) return loaded.status();
      profiles[t].push_back(*std::move(loaded));
    }
  }

  struct Job {
    size_t trace, policy, seed;
  };
  std::vector<Job> jobs;
  for (size_t t = 0; t < traces.size(); ++t) {
    for (size_t p = 0; p < options.policies.size(); ++p) {
      for (size_t s = 0; s < options.seeds.size(); ++s) jobs.push_back(Job{t, p, s});
    }
  }
  std::vector<RunSummary> summaries(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      const Job& job = jobs[j];
      const LoadedTrace& trace = traces[job.trace];
      const uint64_t seed = options.seeds[job.seed];
      const auto start = std::chrono::steady_clock::now();
      RunSummary& s = summaries[j];
      const ReplayPolicy& policy = profiles[job.trace][job.policy];
      if (tenants != nullptr) {
        RunTenantReplay(trace, *policy.profile, empty_cluster, tenants, options, seed, s);
      } else {
        RunPaperReplay(trace, policy, empty_cluster, options, seed, s);
      }
      s.trace = trace.spec.name;
      s.policy = options.policies[job.policy].name;
      s.seed = seed;
      s.capacity_milli = empty_cluster.capacity_milli();
      s.fleet = options.fleet;
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(s);
      }
    }
  };
  const int threads = std::max(1, std::min<int>(options.jobs, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const RunSummary& s : summaries) {
    if (s.violations.count == 0) continue;
    return absl::InternalError(absl::StrCat(s.trace, " ", s.policy, " seed ", s.seed, ": ", s.violations.count,
                                            " placements broke what every placement must keep; the first: ",
                                            s.violations.first));
  }
  return summaries;
}

}  // namespace tessera::sim
