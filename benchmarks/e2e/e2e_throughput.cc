// End-to-end throughput on a real control plane (docs/benchmarks.md, "End to
// end, on a real control plane"): etcd, kube-apiserver and kube-scheduler v1.26 from
// shared/kube, N fake GPU nodes (status through the status subresource, no
// kubelet) and M pods asking for a fraction of a GPU, scheduled twice on
// fresh planes. The pods select a label no node has yet, so kube-scheduler
// tries each once and parks it; then every node gets the label and the whole
// batch is scheduled at kube-scheduler's own pace, not at the pace this
// program creates pods. pods/s is taken between 10% and 90% of the pods bound
// (which leaves out the labelling itself; every pod's backoff has run out
// before it, --settle_s):
//   alone    kube-scheduler with no extender (the baseline);
//   tessera  kube-scheduler calling tessera-extender for filter, prioritize and bind;
//   null     kube-scheduler calling an extender that does nothing
//            (null_extender.h): its filter passes on the first node it is
//            given at once, so kube-scheduler skips scoring as with Tessera's
//            shortlist, and kube-scheduler binds: what calling any extender's
//            filter costs, the ceiling of a filtering extender's ratio here;
//   null-bind  the same extender binding too (one POST of the Binding, from
//            threads of its own): the ceiling of an extender that binds, as
//            Tessera does.
// Prints pods/s for each and their ratio (and, reported only, the median
// seconds of the whole batch and theirs), Tessera's latency per verb from its
// /metrics, and an over-commit audit of the assignment annotations; exits 1
// when a pod stayed unbound, the audit finds a problem, or the ratio is below
// --min_ratio.
//
//   build/benchmarks/e2e_throughput --nodes=50 --pods=400
//   build/benchmarks/e2e_throughput --nodes=1000 --pods=2000 --rounds=3 --min_ratio=0.9
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmarks/e2e/bind_clock.h"
#include "benchmarks/e2e/null_extender.h"
#include "k8s/annotations.h"
#include "k8s/client/api_client.h"
#include "test/testing/assignment_audit.h"
#include "test/testing/control_plane.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_scheduler_config.h"
#include "test/testing/tls_test_certs.h"
#include "test/testing/metrics_text.h"
#include "test/testing/scheduler_config_head.h"

ABSL_FLAG(int, nodes, 50, "GPU nodes to create.");
ABSL_FLAG(int, gpus_per_node, 8, "GPUs per node (A100 80 GB).");
ABSL_FLAG(int, pods, 400, "Pods to schedule.");
ABSL_FLAG(std::string, fraction, "0.5", "tessera.io/gpu-fraction of every pod.");
ABSL_FLAG(int, creators, 16, "Threads creating nodes and pods (pods should arrive faster than they bind).");
ABSL_FLAG(std::string, modes, "alone,tessera",
          "Which runs, in order: alone, tessera, null, null-bind (an extender that only answers: filter, or filter "
          "and bind; the ceiling of any extender's ratio).");
ABSL_FLAG(int, rounds, 1,
          "Times to run the modes, in turn (1..20); the ratio is of the median pods/s. kube-scheduler alone swings by "
          "a third between runs on a small machine.");
ABSL_FLAG(int, settle_s, 11,
          "Seconds between the last pod parked and the labelling: past kube-scheduler's longest backoff (10 s), so "
          "that the labelling moves every pod to its active queue at once and none waits out a backoff.");
ABSL_FLAG(int, timeout_s, 600, "Most seconds a run may take to bind every pod.");
ABSL_FLAG(double, min_ratio, 0, "Exit 1 when tessera's pods/s over alone's is below this (0: report only).");
ABSL_FLAG(std::string, scheduler_config, "",
          "kube-scheduler configuration template for the runs with Tessera, in ../shared/kube's format "
          "(placeholders @EXT_PORT@ and the like; default: its scheduler-config.yaml.tmpl). Not with --tls.");
ABSL_FLAG(std::string, kube_version, "",
          "Kubernetes version of the plane: 1.26 or 1.36 (shared/kube has both). Empty: $TESSERA_KUBE_VERSION, else 1.26.");
ABSL_FLAG(bool, print_metrics, false, "Print Tessera's whole /metrics after its run.");
ABSL_FLAG(std::string, policy_file, "",
          "Tessera's policy file (default: config/examples/default-policy.yaml, the shipped default).");
ABSL_FLAG(std::string, extender_flags, "", "More tessera-extender flags, space-separated (e.g. --threads=4).");
ABSL_FLAG(bool, tls, false,
          "kube-scheduler calls Tessera over HTTPS (enableHTTPS, a test CA, a client certificate; Tessera "
          "--tls-client-auth=verbs), as the chart's tessera.tls.enabled does.");

namespace tessera::bench {
namespace {

using nlohmann::json;
using testing::ControlPlane;

// Set by Main with --tls: how to reach Tessera's HTTPS listener.
std::optional<testing::HttpsClientConfig> tessera_https;

// GET from Tessera's verbs listener, over HTTPS with --tls.
std::string TesseraGet(const ControlPlane& plane, const std::string& path) {
  if (!tessera_https) return plane.TesseraGet(path).body;
  return testing::HttpsExchange(plane.TesseraPort(), *tessera_https, boost::beast::http::verb::get, path).body;
}

constexpr char kNamespace[] = "e2e";
constexpr int64_t kGpuMemoryMiB = 81920;
constexpr int kSkipped = 77;  // benchmarks/CMakeLists.txt: SKIP_RETURN_CODE

constexpr char kReadyLabel[] = "tessera.io/e2e";

// kube-scheduler's configuration for the null runs, after the head every
// template shares (scheduler_config_head.h): one extender with a filter verb
// (and, for null-bind, a bind verb: @NULL_BIND_LINE@).
constexpr char kNullExtenders[] = R"(extenders:
  - urlPrefix: "http://127.0.0.1:@EXT_PORT@"
    filterVerb: "filter"
@NULL_BIND_LINE@    weight: 1
    enableHTTPS: false
    nodeCacheCapable: true
    ignorable: false
)";

struct RunResult {
  std::string mode;
  int pods = 0;
  absl::Duration first_tenth;   ///< Nodes labelled .. 10% of the pods bound.
  absl::Duration nine_tenths;   ///< Nodes labelled .. 90% bound.
  absl::Duration all;           ///< Nodes labelled .. every pod bound.
  testing::AssignmentAudit audit;
  std::string tessera_metrics;  ///< Tessera's /metrics after the run ("" alone and null).
  std::string scheduler_metrics_before;  ///< kube-scheduler's /metrics at the labelling.
  std::string scheduler_metrics;         ///< ... and after the run.

  [[nodiscard]] double pods_per_second() const {
    const absl::Duration middle = nine_tenths - first_tenth;
    if (middle <= absl::ZeroDuration()) return pods / absl::ToDoubleSeconds(all);  // a run too small to split
    return (pods * 9 / 10 - pods / 10) / absl::ToDoubleSeconds(middle);
  }
};

// Runs fn(0..count-1) on `threads` threads; the first error, or OK.
absl::Status ParallelFor(int count, int threads, const std::function<absl::Status(int)>& fn) {
  std::atomic<int> next{0};
  absl::Mutex mu;
  absl::Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        absl::Status st = fn(i);
        if (st.ok()) continue;
        absl::MutexLock lock(&mu);
        if (first.ok()) first = st;
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return first;
}

std::string NodeName(int i) { return absl::StrFormat("gpu-node-%05d", i); }

absl::Status CreateNodes(ControlPlane& plane, int nodes, int gpus) {
  return ParallelFor(nodes, absl::GetFlag(FLAGS_creators), [&](int i) {
    testing::GpuNodeSpec node;
    node.name = NodeName(i);
    node.gpus = gpus;
    node.memory_mib = kGpuMemoryMiB;
    return plane.CreateGpuNode(node).status();
  });
}

// Tessera learns nodes through its watch; pods that came first would find
// none. Its gauges say when it has them all and has published their GPU
// extended resources (a cluster's steady state: those patches are made once).
absl::Status WaitForTesseraToSeeNodes(ControlPlane& plane, int nodes) {
  const std::string seen = absl::StrCat("\ntessera_model_nodes ", nodes, "\n");
  const std::string published = "\ntessera_capacity_nodes_pending 0\n";
  const absl::Time deadline = absl::Now() + absl::Seconds(300);
  while (absl::Now() < deadline) {
    const std::string metrics = TesseraGet(plane, "/metrics");
    if (metrics.find(seen) != std::string::npos && metrics.find(published) != std::string::npos) {
      return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("Tessera did not see ", nodes, " nodes and publish their GPUs within 300 s"));
}

// Waits until kube-scheduler has tried every pod once (no node has the label
// they select yet) and parked it as unschedulable.
absl::Status WaitUntilParked(ControlPlane& plane, int pods) {
  for (absl::Time deadline = absl::Now() + absl::Seconds(120); absl::Now() < deadline;) {
    absl::StatusOr<std::vector<json>> all = plane.ListPods(kNamespace);
    if (!all.ok()) return all.status();
    const auto parked = std::count_if(all->begin(), all->end(),
                                      [](const json& p) { return !testing::UnschedulableMessage(p).empty(); });
    if (parked == pods) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError("kube-scheduler did not try every pod within 120 s");
}

// Labels every node, then waits until every pod is bound: when 10%, 90% and
// all of them were bound, counted from the labelling, by a pod watch
// (bind_clock.h) started before it.
absl::Status LabelAndWaitUntilAllBound(ControlPlane& plane, int nodes, RunResult& result) {
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = plane.AdminClient();
  if (!client.ok()) return client.status();
  BindClock clock(**client, kNamespace);
  if (absl::Status st = clock.WaitUntilWatching(result.pods, absl::Seconds(30)); !st.ok()) return st;
  result.scheduler_metrics_before = plane.SchedulerMetrics().value_or("");
  const absl::Time start = absl::Now();
  absl::Status labelled = ParallelFor(nodes, absl::GetFlag(FLAGS_creators),
                                      [&](int i) { return plane.LabelNode(NodeName(i), kReadyLabel, "ready"); });
  if (!labelled.ok()) return labelled;
  if (absl::Status st = clock.WaitUntilBound(result.pods, start + absl::Seconds(absl::GetFlag(FLAGS_timeout_s)));
      !st.ok()) {
    absl::StatusOr<std::vector<json>> unbound = plane.ListPods(kNamespace, "spec.nodeName=");
    if (!unbound.ok() || unbound->empty()) return st;
    return absl::Status(st.code(), absl::StrCat(st.message(), "; one: ", testing::UnschedulableMessage(unbound->front())));
  }
  const std::vector<absl::Time> bound = clock.BoundTimes();
  // The n-th bind, counted from 1, as the polling did: "n pods bound".
  auto at = [&](int n) { return bound[static_cast<size_t>(std::max(n, 1) - 1)] - start; };
  result.first_tenth = at(result.pods / 10);
  result.nine_tenths = at(result.pods * 9 / 10);
  result.all = at(result.pods);
  return absl::OkStatus();
}

absl::StatusOr<RunResult> SchedulePods(ControlPlane& plane, const std::string& mode, int nodes, int pods) {
  RunResult result;
  result.mode = mode;
  result.pods = pods;
  const std::string fraction = absl::GetFlag(FLAGS_fraction);
  absl::Status created = ParallelFor(pods, absl::GetFlag(FLAGS_creators), [&](int i) {
    testing::PodSpec pod;
    pod.namespace_name = kNamespace;
    pod.name = absl::StrFormat("pod-%05d", i);
    pod.annotations = {{std::string(k8s::kGpuFraction), fraction}};
    pod.node_selector = {{kReadyLabel, "ready"}};
    return plane.CreatePod(pod).status();
  });
  if (!created.ok()) return created;
  if (absl::Status st = WaitUntilParked(plane, pods); !st.ok()) return st;
  // A pod tried more than once while the others were created (each new pod
  // or node may move it back) backs off for 2, 4, up to 10 s; one still
  // backing off when the labelling comes would start late, and the run would
  // measure kube-scheduler's backoff timers instead of its pace.
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_settle_s)));
  if (absl::Status st = LabelAndWaitUntilAllBound(plane, nodes, result); !st.ok()) return st;
  return result;
}

// Where Main wrote each null mode's scheduler configuration.
std::map<std::string, std::string> null_scheduler_configs;

bool IsNullMode(const std::string& mode) { return mode == "null" || mode == "null-bind"; }

absl::StatusOr<RunResult> Run(const std::string& mode, ControlPlane::Options options) {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int gpus = absl::GetFlag(FLAGS_gpus_per_node);
  if (mode == "alone") options.scheduler_config_template = options.kube_dir + "/scheduler-config-alone.yaml.tmpl";
  if (IsNullMode(mode)) options.scheduler_config_template = null_scheduler_configs.at(mode);
  absl::StatusOr<std::unique_ptr<ControlPlane>> plane = ControlPlane::Start(options);
  if (!plane.ok()) return plane.status();
  if (mode == "tessera") {
    if (absl::Status st = (*plane)->StartTessera(); !st.ok()) return st;
  }
  std::unique_ptr<NullExtender> null_extender;  // on the port kube-scheduler was told; stopped after the run
  if (IsNullMode(mode)) {
    std::unique_ptr<k8s::ApiClient> binder;
    if (mode == "null-bind") {
      // One kept connection per bind thread, as Tessera keeps them.
      absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client =
          (*plane)->AdminClient(k8s::ApiClientOptions{.max_idle_connections = 66});
      if (!client.ok()) return client.status();
      binder = *std::move(client);
    }
    absl::StatusOr<std::unique_ptr<NullExtender>> started =
        NullExtender::Start((*plane)->TesseraPort(), std::move(binder));
    if (!started.ok()) return started.status();
    null_extender = *std::move(started);
  }
  if (absl::Status st = (*plane)->CreateNamespace(kNamespace); !st.ok()) return st;
  if (absl::Status st = CreateNodes(**plane, nodes, gpus); !st.ok()) return st;
  if (mode == "tessera") {
    if (absl::Status st = WaitForTesseraToSeeNodes(**plane, nodes); !st.ok()) return st;
  }
  // kube-scheduler's informers see the nodes within moments; both runs wait alike.
  absl::SleepFor(absl::Seconds(2));
  absl::StatusOr<RunResult> result = SchedulePods(**plane, mode, nodes, absl::GetFlag(FLAGS_pods));
  if (!result.ok()) return absl::Status(result.status().code(), absl::StrCat(result.status().message(), "\n",
                                                                              (*plane)->LogTails(20)));
  // Where kube-scheduler's time went; a run goes on without it.
  result->scheduler_metrics = (*plane)->SchedulerMetrics().value_or("");
  if (mode != "tessera") return result;  // kube-scheduler alone writes no assignment to audit
  absl::StatusOr<std::vector<json>> all = (*plane)->ListPods(kNamespace);
  if (!all.ok()) return all.status();
  std::map<std::string, testing::AuditedNode> offered;
  for (int i = 0; i < nodes; ++i) offered[NodeName(i)] = {.gpus = gpus, .memory = MemoryMiB(kGpuMemoryMiB)};
  result->audit = testing::AuditAssignments(*all, offered);
  result->tessera_metrics = TesseraGet(**plane, "/metrics");
  return result;
}

// Count and mean (ms) of the samples of a kube-scheduler histogram added
// during the batch: its /metrics after the run less at the labelling.
std::pair<uint64_t, double> SchedulerDelta(const RunResult& r, std::string_view name, std::string_view label) {
  const testing::HistogramReading a = testing::ReadHistogram(r.scheduler_metrics_before, name, label);
  const testing::HistogramReading b = testing::ReadHistogram(r.scheduler_metrics, name, label);
  const uint64_t n = b.count - std::min(a.count, b.count);
  return std::make_pair(n, n == 0 ? 0.0 : (b.sum - a.sum) / static_cast<double>(n) * 1e3);
}

// kube-scheduler's mean scheduling cycle in the batch ("algorithm": its
// filters and scoring, the extender's filter call included).
double MeanCycleMs(const RunResult& r) {
  return SchedulerDelta(r, "scheduler_scheduling_algorithm_duration_seconds", "").second;
}

void PrintRun(const RunResult& r) {
  std::printf("%-9s %6d %6d %8.2f %8.2f %8.2f %9.1f %9.3f", r.mode.c_str(), absl::GetFlag(FLAGS_nodes), r.pods,
              absl::ToDoubleSeconds(r.first_tenth), absl::ToDoubleSeconds(r.nine_tenths), absl::ToDoubleSeconds(r.all),
              r.pods_per_second(), MeanCycleMs(r));
  if (r.mode == "tessera") {
    std::printf("   audit: %d pods hold shares of %d GPUs, %zu over-commit(s) or inconsistencies", r.audit.assigned_pods,
                r.audit.gpus_in_use, r.audit.problems.size());
    // A bind that failed sends its pod to kube-scheduler's backoff (a second
    // or more): the run's last pods then bind late.
    for (const absl::string_view line : absl::StrSplit(r.tessera_metrics, '\n')) {
      if (!absl::StartsWith(line, "tessera_binds_total{") || absl::StrContains(line, "result=\"success\"") ||
          absl::EndsWith(line, " 0")) {
        continue;
      }
      std::printf("; %s", std::string(line).c_str());
    }
  }
  std::printf("\n");
  for (const std::string& p : r.audit.problems) std::printf("  audit: %s\n", p.c_str());
}

// The median of `of` over the runs (the mean of the middle two for an even count).
double MedianOver(const std::vector<RunResult>& runs, double (*of)(const RunResult&)) {
  std::vector<double> values;
  for (const RunResult& r : runs) values.push_back(of(r));
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double MedianPodsPerSecond(const std::vector<RunResult>& runs) {
  return MedianOver(runs, [](const RunResult& r) { return r.pods_per_second(); });
}

// The median seconds from the labelling to every pod bound.
double MedianBatchSeconds(const std::vector<RunResult>& runs) {
  return MedianOver(runs, [](const RunResult& r) { return absl::ToDoubleSeconds(r.all); });
}

// Tessera's latency of the last run.
void PrintTesseraLatency(const std::string& metrics) {
  std::printf("\nTessera per verb (its /metrics; p50/p99 are bucket upper bounds):\n");
  std::printf("%-11s %7s %10s %10s %10s\n", "verb", "calls", "mean ms", "p50 <= ms", "p99 <= ms");
  for (const char* verb : {"filter", "prioritize", "bind"}) {
    const testing::HistogramReading h =
        testing::ReadHistogram(metrics, "tessera_http_request_duration_seconds", absl::StrCat("verb=\"", verb, "\""));
    std::printf("%-11s %7llu %10.3f %10.3f %10.3f\n", verb, static_cast<unsigned long long>(h.count), h.mean() * 1e3,
                h.QuantileUpperBound(0.5) * 1e3, h.QuantileUpperBound(0.99) * 1e3);
  }
}

// kube-scheduler's own view of the batch (its /metrics after the labelling
// less before it), last run of each mode. Its scheduling cycle ("algorithm":
// filter and score, the extender's filter included) is serial; "attempt"
// runs from a pod's cycle to its bind, which runs beside the next cycles.
void PrintSchedulerLatency(const std::map<std::string, std::vector<RunResult>>& results) {
  std::printf("\nkube-scheduler per pod of the batch (its /metrics, last run of each mode):\n");
  std::printf("%-9s %9s %14s %14s %14s %14s %12s\n", "mode", "attempts", "algorithm ms", "its filters ms",
              "its scoring ms", "attempt ms", "failed");
  for (const auto& [mode, runs] : results) {
    const RunResult& r = runs.back();
    if (r.scheduler_metrics.empty() || r.scheduler_metrics_before.empty()) continue;
    const auto [scheduled, attempt_ms] = SchedulerDelta(r, "scheduler_scheduling_attempt_duration_seconds", "result=\"scheduled\"");
    const auto [failed, failed_ms] = SchedulerDelta(r, "scheduler_scheduling_attempt_duration_seconds", "result=\"unschedulable\"");
    const auto [cycles, algorithm_ms] = SchedulerDelta(r, "scheduler_scheduling_algorithm_duration_seconds", "");
    // Sampled by kube-scheduler (about one cycle in ten): means, not totals.
    const std::string_view points = "scheduler_framework_extension_point_duration_seconds";
    const auto [prefilters, prefilter_ms] = SchedulerDelta(r, points, "extension_point=\"PreFilter\"");
    const auto [filters, filter_ms] = SchedulerDelta(r, points, "extension_point=\"Filter\"");
    const auto [prescores, prescore_ms] = SchedulerDelta(r, points, "extension_point=\"PreScore\"");
    const auto [scores, score_ms] = SchedulerDelta(r, points, "extension_point=\"Score\"");
    std::printf("%-9s %9llu %14.3f %14.3f %14.3f %14.3f %12llu\n", mode.c_str(),
                static_cast<unsigned long long>(scheduled + failed), algorithm_ms, prefilter_ms + filter_ms,
                prescore_ms + score_ms, attempt_ms, static_cast<unsigned long long>(failed));
  }
}

int Main() {
  const std::string kube_version =
      absl::GetFlag(FLAGS_kube_version).empty() ? testing::KubeVersionUnderTest() : absl::GetFlag(FLAGS_kube_version);
  absl::StatusOr<std::string> kube_dir = testing::FindControlPlane(kube_version);
  if (!kube_dir.ok()) {
    // As the control-plane tests do: skipped (ctest's SKIP_RETURN_CODE) in a
    // clone without shared/kube, a failure in CI.
    std::printf("%s: %s\n", testing::RunningInCi() ? "e2e_throughput" : testing::kSkipMarker,
                std::string(kube_dir.status().message()).c_str());
    return testing::RunningInCi() ? 1 : kSkipped;
  }
  ControlPlane::Options options;
  options.kube_dir = *kube_dir;
  options.kube_version = kube_version;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = absl::GetFlag(FLAGS_policy_file).empty()
                            ? std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"
                            : absl::GetFlag(FLAGS_policy_file);
  options.extender_flags = absl::StrSplit(absl::GetFlag(FLAGS_extender_flags), ' ', absl::SkipEmpty());
  if (absl::GetFlag(FLAGS_tls) && !absl::GetFlag(FLAGS_scheduler_config).empty()) {
    std::fprintf(stderr, "e2e_throughput: --scheduler_config and --tls exclude each other (--tls writes its own)\n");
    return 2;
  }
  options.scheduler_config_template = absl::GetFlag(FLAGS_scheduler_config);  // the alone runs use their own (Run)
  std::optional<testing::TlsTestCertFiles> tls_files;  // kept until the end: the planes read them
  if (absl::GetFlag(FLAGS_tls)) {
    absl::StatusOr<testing::TlsTestCerts> certs = testing::TlsTestCerts::Generate();
    absl::StatusOr<testing::TlsTestCertFiles> files =
        certs.ok() ? testing::TlsTestCertFiles::Write(*certs) : absl::StatusOr<testing::TlsTestCertFiles>(certs.status());
    if (!files.ok()) {
      std::fprintf(stderr, "e2e_throughput: cannot make the test certificates: %s\n",
                   std::string(files.status().message()).c_str());
      return 1;
    }
    tls_files = *std::move(files);
    const std::string tmpl = tls_files->dir() + "/scheduler-config.yaml.tmpl";
    std::ofstream(tmpl) << testing::TlsSchedulerConfigTemplate(*tls_files);
    options.scheduler_config_template = tmpl;  // the alone runs use their own (Run)
    for (const std::string& flag :
         {"--tls-cert-file=" + tls_files->server_cert(), "--tls-key-file=" + tls_files->server_key(),
          "--tls-client-ca-file=" + tls_files->ca_cert(), std::string("--tls-client-auth=verbs")}) {
      options.extender_flags.push_back(flag);
    }
    tessera_https = testing::TrustingCa(certs->ca.cert_pem);
    options.tessera_ready = [https = *tessera_https](uint16_t port) {
      return testing::HttpsExchange(port, https, boost::beast::http::verb::get, "/readyz").status == 200;
    };
  }
  const int rounds = absl::GetFlag(FLAGS_rounds);
  if (rounds < 1 || rounds > 20) {
    std::fprintf(stderr, "e2e_throughput: --rounds must be in 1..20; got %d\n", rounds);
    return 2;
  }
  const std::vector<std::string> modes = absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty());
  for (const std::string& mode : modes) {
    if (mode != "alone" && mode != "tessera" && !IsNullMode(mode)) {
      std::fprintf(stderr, "e2e_throughput: unknown mode '%s' (alone, tessera, null, null-bind)\n", mode.c_str());
      return 2;
    }
  }
  struct RemoveAtExit {
    std::vector<std::string> paths;
    ~RemoveAtExit() {
      for (const std::string& path : paths) std::remove(path.c_str());
    }
  } null_config_files;
  for (const std::string& mode : modes) {
    if (!IsNullMode(mode) || null_scheduler_configs.contains(mode)) continue;
    const std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(), "/tessera-e2e-", mode, "-",
                                          getpid(), ".yaml.tmpl");
    null_config_files.paths.push_back(path);
    null_scheduler_configs[mode] = path;
    const std::string config =
        absl::StrCat(testing::kSchedulerConfigHead,
                     absl::StrReplaceAll(kNullExtenders,
                                         {{"@NULL_BIND_LINE@", mode == "null-bind" ? "    bindVerb: \"bind\"\n" : ""}}));
    if (!(std::ofstream(path) << config)) {
      std::fprintf(stderr, "e2e_throughput: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::map<std::string, std::vector<RunResult>> results;
  std::printf("Kubernetes v%s (kube-apiserver and kube-scheduler of shared/kube)\n", kube_version.c_str());
  std::printf("%-9s %6s %6s %8s %8s %8s %9s %9s   (seconds from the nodes' labelling; kube-scheduler's mean cycle)\n",
              "mode", "nodes", "pods", "10% s", "90% s", "all s", "pods/s", "cycle ms");
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& mode : modes) {
      absl::StatusOr<RunResult> r = Run(mode, options);
      if (!r.ok()) {
        std::fprintf(stderr, "e2e_throughput: the %s run failed: %s\n", mode.c_str(),
                     std::string(r.status().message()).c_str());
        return 1;
      }
      PrintRun(*r);
      std::fflush(stdout);
      results[mode].push_back(*r);
    }
  }
  bool ok = true;
  for (const auto& [mode, runs] : results) {
    for (const RunResult& r : runs) ok = ok && r.audit.clean();
  }
  if (results.contains("tessera")) PrintTesseraLatency(results["tessera"].back().tessera_metrics);
  PrintSchedulerLatency(results);
  if (results.contains("tessera") && absl::GetFlag(FLAGS_print_metrics)) {
    std::printf("\n%s", results["tessera"].back().tessera_metrics.c_str());
  }
  if (results.contains("alone") && results.contains("tessera")) {
    const double alone = MedianPodsPerSecond(results["alone"]);
    const double tessera = MedianPodsPerSecond(results["tessera"]);
    if (rounds > 1) std::printf("\nmedian pods/s over %d rounds: alone %.1f, tessera %.1f\n", rounds, alone, tessera);
    const double ratio = tessera / alone;
    std::printf("\nratio tessera/alone: %.2f\n", ratio);
    // Beside the middle window: the whole batch, start and tail included
    // (kube-scheduler alone starts binding late and then binds in a burst,
    // which the window rewards; reported, not what --min_ratio checks).
    const double alone_batch = MedianBatchSeconds(results["alone"]);
    const double tessera_batch = MedianBatchSeconds(results["tessera"]);
    std::printf("whole batch (labelling to every pod bound), median: alone %.2f s, tessera %.2f s; ratio %.2f\n",
                alone_batch, tessera_batch, tessera_batch > 0 ? alone_batch / tessera_batch : 0.0);
    if (ratio < absl::GetFlag(FLAGS_min_ratio)) {
      std::printf("below --min_ratio=%.2f\n", absl::GetFlag(FLAGS_min_ratio));
      ok = false;
    }
  }
  for (const char* null_mode : {"null", "null-bind"}) {
    if (!results.contains("alone") || !results.contains(null_mode)) continue;
    // What kube-scheduler pays for calling an extender with nothing done
    // behind it: the most an extender's ratio can be on this machine.
    const double alone = MedianPodsPerSecond(results["alone"]);
    const double pods = MedianPodsPerSecond(results[null_mode]);
    const double alone_batch = MedianBatchSeconds(results["alone"]);
    const double batch = MedianBatchSeconds(results[null_mode]);
    std::printf("%s extender (a ceiling): median %.1f pods/s, ratio %.2f; whole batch %.2f s, ratio %.2f\n", null_mode,
                pods, pods / alone, batch, batch > 0 ? alone_batch / batch : 0.0);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return tessera::bench::Main();
}
