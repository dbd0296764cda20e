// A set of replay runs: policies × traces × seeds on one node list, run in
// parallel, each reduced to its curves and failure counts as it finishes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/fgd/fragmentation.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/registry.h"
#include "scheduler/tenancy/tenant_set.h"
#include "sim/fleet.h"
#include "sim/metrics.h"
#include "sim/pod_tenancy.h"
#include "sim/replay.h"
#include "sim/stress.h"
#include "sim/tenant_replay.h"

namespace tessera::sim {

/// A name for a file: a policy ("fgd" for .../fgd.yaml) or a trace
/// ("default" for .../openb_pod_list_default.csv).
struct NamedPath {
  std::string name;
  std::string path;
};

/// "name=path" or a path (named after its file: the stem, less an
/// "openb_pod_list_" prefix).
NamedPath ParseNamedPath(std::string_view text);

/// The tenant replay's settings (sim/tenant_replay.h).
struct TenancyOptions {
  std::string tenants_path;           ///< A policy file; its `tenants:` section is used, its plugins are not.
  TenantRule rule = TenantRule::kHash;
  int64_t arrival_speedup = 1;
};

struct ExperimentOptions {
  std::string nodes;                 ///< Node list CSV.
  std::vector<NamedPath> traces;     ///< Pod list CSVs.
  std::vector<NamedPath> policies;   ///< Policy files.
  std::vector<uint64_t> seeds;
  int jobs = 1;                      ///< Runs in parallel.
  MemoMode memo = MemoMode::kAuto;
  /// Replace the `workload` arg of every plugin that has one with the
  /// trace's typical pods (as the paper gives FGD the replayed trace's),
  /// in the policies that do not learn it.
  bool workload_from_trace = true;
  /// Let the policies whose file leaves workloadLearning on learn the
  /// workload from the run's arrivals, as the server does (their file's
  /// list is the prior); false: treat them as the others.
  bool learn_workload = true;
  int64_t inflation_percent = 130;   ///< Submit until this % of GPU capacity has been requested.
  int64_t typical_coverage_percent = 95;
  /// Keep every Nth node of the name-sorted node list (1: all of them).
  size_t node_sample = 1;
  /// The trace's nodes and pods, or a mixed fleet made from them
  /// (sim/fleet.h); applied after node_sample, before stress.
  Fleet fleet = Fleet::kTrace;
  /// CPU-scarce nodes, GPU memory-heavy pods (sim/stress.h).
  StressOptions stress;
  /// Set: every run is the tenant replay instead of the paper's.
  std::optional<TenancyOptions> tenancy;
};

/// One run, reduced.
struct RunSummary {
  std::string trace;
  std::string policy;
  uint64_t seed = 0;
  RunCurve curve;
  std::array<int64_t, kPodKinds> failed_pods{};
  std::array<int64_t, kPodKinds> failed_milli{};
  int64_t submitted_pods = 0;
  int64_t placed_pods = 0;
  int64_t capacity_milli = 0;
  bool memoised = false;
  Fleet fleet = Fleet::kTrace;
  /// Pods submitted that ask for a MIG instance (only a mixed fleet has them).
  int64_t mig_pods = 0;
  /// Placements that broke sim/placement_check.h's rules; RunExperiment
  /// fails when any run has one.
  PlacementViolations violations;
  double seconds = 0;
  /// The tenant replay's: the tenants and what each got (empty curve then).
  std::shared_ptr<const TenantSet> tenants;
  std::optional<TenantReplayResult> tenancy;
};

/// Loads a policy file; with `typical`, every plugin arg named `workload`
/// is first replaced by those pods. The file is validated as written too, so
/// errors point at its own lines.
absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyForTrace(const std::string& path,
                                                                  const PluginRegistry& registry,
                                                                  const std::vector<WorkloadPod>* typical);

/// A policy as one trace's runs replay it.
struct ReplayPolicy {
  std::shared_ptr<const Profile> profile;
  /// Set: the runs learn the workload from arrivals (ReplayInput::learning).
  std::optional<WorkloadLearning> learning;
};

/// The policy file at `path` for a trace's runs: when `learn` and the file
/// leaves workloadLearning on, as written, learning; otherwise
/// LoadPolicyForTrace's (the trace's typical pods, when given).
absl::StatusOr<ReplayPolicy> LoadReplayPolicy(const std::string& path, const PluginRegistry& registry,
                                              const std::vector<WorkloadPod>* typical, bool learn);

/// Loads everything (every error names its file), then runs. `progress`, if
/// set, is called after each run (from the running thread, serialised).
/// \return Internal, naming the run and the first one, when a placement
///   broke sim/placement_check.h's rules (a policy or simulator bug).
absl::StatusOr<std::vector<RunSummary>> RunExperiment(const ExperimentOptions& options,
                                                      const std::function<void(const RunSummary&)>& progress = {});

}  // namespace tessera::sim
