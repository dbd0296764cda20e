// How often kube-scheduler asks Tessera's filter about pods that fit
// nowhere, and what makes it ask (issue 42 item 3). Since QueueingHints
// (on by default from 1.32, locked on from 1.34) a pod an extender refused
// goes back to the active queue on any Node event, after its backoff: a
// writer that touches every node often turns every pending pod into a filter
// call every few seconds. Tessera's own writers must not be such a writer.
//
// One plane of --kube_version with Tessera (the shipped policy), --nodes GPU
// nodes and --pending pods asking for more GPUs than any node has. Then
// three windows of --window_s each:
//   quiet        nothing writes but Tessera (its capacity publisher patches a
//                node's status only when its GPUs change)
//   agent        the node agent's own publisher (agent::NodePublisher) puts
//                every node's inventory every --period_s: it GETs and writes
//                only what differs, so nothing
//   utilization  every node's tessera.io/gpu-utilization rewritten every
//                --period_s with a fresh timestamp, as a utilisation reporter
//                for clusters without Prometheus does
// For each: Tessera's filter calls per pending pod per minute, node writes
// by the window's writer and by Tessera's capacity publisher.
//
//   build/benchmarks/filter_storm --kube_version=1.36 --nodes=100 --pending=50
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "agent/publisher.h"
#include "k8s/annotations.h"
#include "k8s/gpu_utilization.h"
#include "test/testing/control_plane.h"
#include "test/testing/metrics_text.h"

ABSL_FLAG(std::string, kube_version, "", "1.26 or 1.36; empty: $TESSERA_KUBE_VERSION, else 1.26.");
ABSL_FLAG(int, nodes, 100, "GPU nodes (8 GPUs each).");
ABSL_FLAG(int, pending, 50, "Pods that fit nowhere (each asks for 16 whole GPUs).");
ABSL_FLAG(int, window_s, 60, "Seconds each window measures.");
ABSL_FLAG(int, period_s, 10, "Seconds between two writes of one node by the window's writer.");

namespace tessera::bench {
namespace {

using nlohmann::json;
using testing::ControlPlane;

constexpr char kNamespace[] = "storm";

std::string NodeName(int i) { return absl::StrFormat("gpu-node-%05d", i); }

uint64_t FilterCalls(const ControlPlane& plane) {
  return testing::ReadHistogram(plane.TesseraGet("/metrics").body, "tessera_http_request_duration_seconds",
                                "verb=\"filter\"")
      .count;
}

// The value of the sample `series` (a counter) in Tessera's /metrics; 0 when absent.
double Sample(const std::string& metrics, const std::string& series) {
  const size_t at = metrics.find("\n" + series + " ");
  return at == std::string::npos ? 0 : std::stod(metrics.substr(at + series.size() + 2));
}

double CapacityPatches(const ControlPlane& plane) {
  return Sample(plane.TesseraGet("/metrics").body, "tessera_capacity_patches_total{result=\"success\"}");
}

// Calls write(node) for every node once per `period`, spread evenly over it,
// until `stop`; counts what write() says it wrote.
void WriteEveryNode(int nodes, absl::Duration period, const std::atomic<bool>& stop,
                    const std::function<bool(int)>& write, std::atomic<int>& written) {
  const absl::Duration gap = period / std::max(1, nodes);
  absl::Time next = absl::Now();
  for (int i = 0; !stop.load(); i = (i + 1) % nodes) {
    if (write(i)) ++written;
    next += gap;
    absl::SleepFor(std::max(absl::ZeroDuration(), next - absl::Now()));
  }
}

struct Window {
  std::string name;
  double filters_per_pod_minute = 0;
  int writes = 0;
  double capacity_patches = 0;
};

Window Measure(ControlPlane& plane, const std::string& name, int pending,
               const std::function<bool(int)>& write) {
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer;
  if (write) {
    writer = std::thread([&] {
      WriteEveryNode(absl::GetFlag(FLAGS_nodes), absl::Seconds(absl::GetFlag(FLAGS_period_s)), stop, write, written);
    });
  }
  const uint64_t filters = FilterCalls(plane);
  const double patches = CapacityPatches(plane);
  const absl::Duration window = absl::Seconds(absl::GetFlag(FLAGS_window_s));
  absl::SleepFor(window);
  Window w{.name = name};
  w.filters_per_pod_minute =
      static_cast<double>(FilterCalls(plane) - filters) / pending / absl::ToDoubleMinutes(window);
  w.capacity_patches = CapacityPatches(plane) - patches;
  stop.store(true);
  if (writer.joinable()) writer.join();
  w.writes = written.load();
  return w;
}

int Main() {
  const std::string version =
      absl::GetFlag(FLAGS_kube_version).empty() ? testing::KubeVersionUnderTest() : absl::GetFlag(FLAGS_kube_version);
  absl::StatusOr<std::string> kube_dir = testing::FindControlPlane(version);
  if (!kube_dir.ok()) {
    std::fprintf(stderr, "filter_storm: %s\n", std::string(kube_dir.status().message()).c_str());
    return 1;
  }
  ControlPlane::Options options;
  options.kube_dir = *kube_dir;
  options.kube_version = version;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  absl::StatusOr<std::unique_ptr<ControlPlane>> started = ControlPlane::Start(options);
  if (!started.ok()) {
    std::fprintf(stderr, "filter_storm: %s\n", std::string(started.status().message()).c_str());
    return 1;
  }
  ControlPlane& plane = **started;
  if (absl::Status st = plane.StartTessera(); !st.ok()) {
    std::fprintf(stderr, "filter_storm: %s\n%s\n", std::string(st.message()).c_str(), plane.LogTails().c_str());
    return 1;
  }
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int pending = absl::GetFlag(FLAGS_pending);
  if (!plane.CreateNamespace(kNamespace).ok()) return 1;
  for (int i = 0; i < nodes; ++i) {
    testing::GpuNodeSpec node;
    node.name = NodeName(i);
    node.gpus = 8;
    if (absl::Status st = plane.CreateGpuNode(node).status(); !st.ok()) {
      std::fprintf(stderr, "filter_storm: %s\n", std::string(st.message()).c_str());
      return 1;
    }
  }
  plane.WaitUntilTesseraKnowsNode(NodeName(nodes - 1), absl::Seconds(60));
  for (int i = 0; i < pending; ++i) {
    testing::PodSpec pod;
    pod.namespace_name = kNamespace;
    pod.name = absl::StrFormat("too-big-%03d", i);
    pod.annotations = {{std::string(k8s::kGpuCount), "16"}};
    if (absl::Status st = plane.CreatePod(pod).status(); !st.ok()) return 1;
  }
  // Every pod tried and refused, and the capacity publisher done with the
  // new nodes: from here on a quiet cluster.
  (void)plane.WaitForPods(kNamespace, "every pod refused", [&](const std::vector<json>& pods) {
    int refused = 0;
    for (const json& p : pods) refused += testing::UnschedulableMessage(p).empty() ? 0 : 1;
    return refused == pending;
  }, absl::Seconds(120));
  absl::SleepFor(absl::Seconds(15));

  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = plane.AdminClient();
  if (!client.ok()) return 1;
  std::vector<std::string> inventories(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    absl::StatusOr<json> node = plane.GetNode(NodeName(i));
    if (!node.ok()) return 1;
    inventories[static_cast<size_t>(i)] = (*node)["metadata"]["annotations"].value(std::string(k8s::kGpuInventory), "");
  }

  std::vector<Window> windows;
  windows.push_back(Measure(plane, "quiet", pending, nullptr));
  windows.push_back(Measure(plane, "agent", pending, [&](int i) {
    agent::NodePublisher publisher(**client, NodeName(i));
    absl::StatusOr<bool> patched =
        publisher.Publish({{std::string(k8s::kGpuInventory), inventories[static_cast<size_t>(i)]}});
    return patched.ok() && *patched;
  }));
  int round = 0;
  windows.push_back(Measure(plane, "utilization", pending, [&](int i) {
    if (i == 0) ++round;
    const json value = {{"timestamp", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())},
                        {"gpus", json::array({{{"index", 0}, {"utilization", (round * 7 + i) % 100}}})}};
    const json patch = {{"metadata", {{"annotations", {{std::string(k8s::kGpuUtilization), value.dump()}}}}}};
    absl::StatusOr<k8s::ApiResponse> r =
        plane.Send("PATCH", "/api/v1/nodes/" + NodeName(i), patch.dump(), "application/merge-patch+json");
    return r.ok() && r->status == 200;
  }));

  std::printf("Kubernetes v%s, %d GPU nodes, %d pods that fit nowhere, windows of %d s, each node written every %d s\n",
              version.c_str(), nodes, pending, absl::GetFlag(FLAGS_window_s), absl::GetFlag(FLAGS_period_s));
  std::printf("%-12s %26s %14s %22s\n", "window", "filter calls / pod / min", "node writes", "Tessera's node patches");
  for (const Window& w : windows) {
    std::printf("%-12s %26.2f %14d %22.0f\n", w.name.c_str(), w.filters_per_pod_minute, w.writes, w.capacity_patches);
  }
  return 0;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return tessera::bench::Main();
}
