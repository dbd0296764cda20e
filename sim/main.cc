// tessera-sim: replays the Alibaba GPU-sharing trace through Tessera's
// policies and reports placement quality as the FGD paper measures it.
//
//   tessera-sim --policies config/examples/placement/fgd-policy.yaml,config/examples/default-policy.yaml
//               --pods data/openb/openb_pod_list_default.csv --seeds 42-51 --out sim-out
//
// --nodes and --pods take any files in the trace's format; the defaults are
// the node list and default trace the repository carries (data/openb, read
// from the repository's root). The other variants: data/openb/README.md.
//
// Writes <out>/curves.csv, <out>/summary.md and <out>/<trace>.svg, and
// prints the summary; with --tenants, the tenant replay's per-tenant tables
// instead (<out>/tenants.md, <out>/tenants.csv). The only place with flags.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "scheduler/model/absl_compat.h"
#include "sim/experiment.h"
#include "scheduler/common/mutex_mode.h"
#include "sim/report.h"
#include "sim/tenant_report.h"
#include "sim/trace.h"
#include "sim/workload.h"

ABSL_FLAG(std::string, nodes, "data/openb/openb_node_list_gpu_node.csv", "Node list CSV.");
ABSL_FLAG(std::string, pods, "data/openb/openb_pod_list_default.csv",
          "Pod list CSVs, comma-separated; each is a trace, named after its file (or name=path).");
ABSL_FLAG(std::string, policies, "",
          "Policy files, comma-separated; each named after its file less \"-policy.yaml\" (or name=path).");
ABSL_FLAG(std::string, seeds, "42-51", "Seeds: a list of numbers and ranges, e.g. 42-51 or 42,45.");
ABSL_FLAG(int, jobs, 0, "Runs in parallel (0: one per CPU).");
ABSL_FLAG(std::string, out, "", "Directory for curves.csv, summary.md and one SVG per trace (created).");
ABSL_FLAG(std::string, memo, "auto", "auto: memoise per node and pod class unless a plugin randomises per pod; off.");
ABSL_FLAG(bool, workload_from_trace, true,
          "Give plugins with a `workload` arg the replayed trace's typical pods (as the paper gives FGD).");
ABSL_FLAG(bool, learn_workload, true,
          "Policies whose file leaves workloadLearning on learn the workload from the run's arrivals, starting "
          "from their file's list, as the server does (false: they get the trace's, as above).");
ABSL_FLAG(std::string, fleet, "trace",
          "trace: the trace's nodes and pods as they are; mixed: a quarter of the GPU nodes AMD, an eighth of the "
          "8-GPU nodes A100s split into MIG instances, some pods selecting a vendor and some small share pods "
          "asking for a MIG instance instead (sim/fleet.h says exactly which).");
ABSL_FLAG(int64_t, node_cpu_percent, 100, "Stress: every node's CPU scaled to this % (1..1000; sim/stress.h).");
ABSL_FLAG(int64_t, pod_gpu_memory_percent, 0,
          "Stress: GPUs get their model's memory and pods sharing a GPU ask this % of 24 GiB per GPU of share "
          "(0: no GPU memory, as in the trace; sim/stress.h).");
ABSL_FLAG(bool, progress, true, "Print a line per finished run to stderr.");
ABSL_FLAG(std::string, tenants, "",
          "A policy file with a tenants: section: run the tenant replay (trace times, quotas, priorities, "
          "preemption) instead of the paper's, and report per tenant (README, \"Tenants in the simulator\").");
ABSL_FLAG(std::string, tenant_of, "hash",
          "How pods get tenants: hash (of the pod name, over the tenants in order), qos (the tenant named as the "
          "pod's qos), column (the pod list's tenant column).");
ABSL_FLAG(int64_t, arrival_speedup, 1, "Tenant replay: pods arrive this many times faster than in the trace.");
ABSL_FLAG(int64_t, node_sample, 1, "Keep every Nth node of the name-sorted node list (1: all).");
ABSL_FLAG(bool, print_workload, false,
          "Print the first trace's typical pods as a `workload:` arg (for fgd in a policy file) and exit.");

namespace {

using tessera::sim::NamedPath;

std::vector<NamedPath> ParseList(const std::string& text) {
  std::vector<NamedPath> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    out.push_back(tessera::sim::ParseNamedPath(tessera::Std(item)));
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> ends = absl::StrSplit(item, '-');
    uint64_t from = 0, to = 0;
    if (ends.size() > 2 || !absl::SimpleAtoi(ends[0], &from) || !absl::SimpleAtoi(ends.back(), &to) || to < from ||
        to - from > 100000) {
      return absl::InvalidArgumentError(absl::StrCat("--seeds: \"", item, "\" is not a number or a range such as 42-51"));
    }
    for (uint64_t s = from; s <= to; ++s) seeds.push_back(s);
  }
  if (seeds.empty()) return absl::InvalidArgumentError("--seeds: list at least one seed");
  return seeds;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "tessera-sim: %s\n", std::string(status.message()).c_str());
  return 1;
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path.string(), ": cannot write"));
  return absl::OkStatus();
}

// The typical pods of the first trace in `pods`, as policy-file YAML.
int PrintWorkload(const std::string& pods) {
  const std::vector<NamedPath> traces = ParseList(pods);
  if (traces.empty()) return Fail(absl::InvalidArgumentError("--pods: name a pod list"));
  absl::StatusOr<std::vector<tessera::sim::TracePod>> trace = tessera::sim::LoadPodList(traces[0].path);
  if (!trace.ok()) return Fail(trace.status());
  const tessera::sim::ExperimentOptions defaults;
  std::printf("workload:  # %s: the kinds of pod covering %lld%% of its pods; weight = pod count\n",
              traces[0].path.c_str(), static_cast<long long>(defaults.typical_coverage_percent));
  for (const tessera::WorkloadPod& p : tessera::sim::TypicalPods(*trace, defaults.typical_coverage_percent)) {
    std::printf("  - \"%s\"\n", tessera::FormatWorkloadPod(p).c_str());
  }
  return 0;
}

// The tenant replay's flags into `options` (none when --tenants is empty).
absl::Status ReadTenancy(tessera::sim::ExperimentOptions& options) {
  const std::string tenants = absl::GetFlag(FLAGS_tenants);
  if (tenants.empty()) return absl::OkStatus();
  absl::StatusOr<tessera::sim::TenantRule> rule = tessera::sim::ParseTenantRule(absl::GetFlag(FLAGS_tenant_of));
  if (!rule.ok()) return absl::InvalidArgumentError(absl::StrCat("--tenant_of: ", rule.status().message()));
  const int64_t speedup = absl::GetFlag(FLAGS_arrival_speedup);
  if (speedup < 1) return absl::InvalidArgumentError("--arrival_speedup: must be at least 1");
  options.tenancy = tessera::sim::TenancyOptions{.tenants_path = tenants, .rule = *rule, .arrival_speedup = speedup};
  return absl::OkStatus();
}

// Prints the per-tenant tables; with `out_dir`, writes them as tenants.md and tenants.csv there.
int ReportTenants(const std::vector<tessera::sim::RunSummary>& runs, const std::string& out_dir) {
  const std::string md = tessera::sim::TenantMarkdown(runs);
  std::fputs(md.c_str(), stdout);
  if (out_dir.empty()) return 0;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Fail(absl::UnavailableError(absl::StrCat(out_dir, ": cannot create: ", ec.message())));
  std::ostringstream csv;
  tessera::sim::WriteTenantsCsv(runs, csv);
  absl::Status st = WriteFile(std::filesystem::path(out_dir) / "tenants.csv", csv.str());
  if (st.ok()) st = WriteFile(std::filesystem::path(out_dir) / "tenants.md", md);
  return st.ok() ? 0 : Fail(st);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::UseReleaseMutexMode();
  absl::SetProgramUsageMessage(
      "Replays a trace's pods through Tessera policies and reports placement quality "
      "(see README, \"Measure placement quality\").");
  absl::ParseCommandLine(argc, argv);

  if (absl::GetFlag(FLAGS_print_workload)) return PrintWorkload(absl::GetFlag(FLAGS_pods));

  tessera::sim::ExperimentOptions options;
  options.nodes = absl::GetFlag(FLAGS_nodes);
  options.traces = ParseList(absl::GetFlag(FLAGS_pods));
  options.policies = ParseList(absl::GetFlag(FLAGS_policies));
  if (options.policies.empty()) return Fail(absl::InvalidArgumentError("--policies: list at least one policy file"));
  absl::StatusOr<std::vector<uint64_t>> seeds = ParseSeeds(absl::GetFlag(FLAGS_seeds));
  if (!seeds.ok()) return Fail(seeds.status());
  options.seeds = *seeds;
  const int jobs = absl::GetFlag(FLAGS_jobs);
  options.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::string memo = absl::GetFlag(FLAGS_memo);
  if (memo != "auto" && memo != "off") return Fail(absl::InvalidArgumentError("--memo: must be auto or off"));
  options.memo = memo == "off" ? tessera::sim::MemoMode::kOff : tessera::sim::MemoMode::kAuto;
  options.workload_from_trace = absl::GetFlag(FLAGS_workload_from_trace);
  options.learn_workload = absl::GetFlag(FLAGS_learn_workload);
  absl::StatusOr<tessera::sim::Fleet> fleet = tessera::sim::ParseFleet(absl::GetFlag(FLAGS_fleet));
  if (!fleet.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("--fleet: ", fleet.status().message())));
  options.fleet = *fleet;
  options.stress.node_cpu_percent = absl::GetFlag(FLAGS_node_cpu_percent);
  options.stress.pod_gpu_memory_percent = absl::GetFlag(FLAGS_pod_gpu_memory_percent);
  if (options.stress.node_cpu_percent < 1 || options.stress.node_cpu_percent > 1000) {
    return Fail(absl::InvalidArgumentError("--node_cpu_percent: must be 1..1000"));
  }
  if (options.stress.pod_gpu_memory_percent < 0 || options.stress.pod_gpu_memory_percent > 1000) {
    return Fail(absl::InvalidArgumentError("--pod_gpu_memory_percent: must be 0..1000"));
  }
  if (absl::GetFlag(FLAGS_node_sample) < 1) return Fail(absl::InvalidArgumentError("--node_sample: must be at least 1"));
  options.node_sample = static_cast<size_t>(absl::GetFlag(FLAGS_node_sample));
  if (absl::Status st = ReadTenancy(options); !st.ok()) return Fail(st);

  const bool progress = absl::GetFlag(FLAGS_progress);
  absl::StatusOr<std::vector<tessera::sim::RunSummary>> runs = tessera::sim::RunExperiment(
      options, [progress](const tessera::sim::RunSummary& r) {
        if (!progress) return;
        const std::optional<double> alloc = r.curve.alloc_percent[100];
        if (r.tenancy.has_value()) {
          std::fprintf(stderr, "%s %s seed %llu: %lld/%lld pods placed, %.1f s%s\n", r.trace.c_str(), r.policy.c_str(),
                       static_cast<unsigned long long>(r.seed), static_cast<long long>(r.placed_pods),
                       static_cast<long long>(r.submitted_pods), r.seconds, r.memoised ? "" : " (not memoised)");
          return;
        }
        std::fprintf(stderr, "%s %s seed %llu: Alloc%%(100) %.2f, %lld/%lld pods placed, %.1f s%s\n", r.trace.c_str(),
                     r.policy.c_str(), static_cast<unsigned long long>(r.seed), alloc.value_or(0),
                     static_cast<long long>(r.placed_pods), static_cast<long long>(r.submitted_pods), r.seconds,
                     r.memoised ? "" : " (not memoised)");
      });
  if (!runs.ok()) return Fail(runs.status());

  if (options.tenancy.has_value()) return ReportTenants(*runs, absl::GetFlag(FLAGS_out));
  const std::string summary = tessera::sim::MarkdownSummary(*runs);
  std::fputs(summary.c_str(), stdout);
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) return Fail(absl::UnavailableError(absl::StrCat(out_dir, ": cannot create: ", ec.message())));
    std::ostringstream csv;
    tessera::sim::WriteCurvesCsv(*runs, csv);
    absl::Status st = WriteFile(std::filesystem::path(out_dir) / "curves.csv", csv.str());
    if (st.ok()) st = WriteFile(std::filesystem::path(out_dir) / "summary.md", summary);
    for (const std::string& trace : tessera::sim::TracesOf(*runs)) {
      if (st.ok()) st = WriteFile(std::filesystem::path(out_dir) / (trace + ".svg"), tessera::sim::SvgPlot(*runs, trace));
    }
    if (!st.ok()) return Fail(st);
  }
  return 0;
}
