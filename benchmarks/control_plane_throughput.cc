// Pods bound per second on a real control plane (test/testing/control_plane.h):
// kube-scheduler v1.26 with Tessera as its extender (filter, prioritize,
// bind), or kube-scheduler alone, the baseline of issue #18.
//
//   build/benchmarks/control_plane_throughput [--alone] [--extender=PATH] [--nodes=50] [--gpus=8]
//                                             [--pods=400] [--fraction=0.5] [--runs=3]
//
// Each run creates the nodes, then the pods, which select a label no node has
// yet (kube-scheduler finds no node and parks them), then labels the nodes:
// from then on kube-scheduler schedules the whole batch, so the rate measured
// is its own and not the rate at which this program creates pods, and
// Tessera's watch knows every node before the first filter. The rate is
// taken between the 10th and the 90th percent of the pods bound (the start
// waits out kube-scheduler's first backoff of a second; the end, the last
// poll).
// Needs the plane where the control-plane tests find it (TESSERA_KUBE_DIR).
// The numbers depend on the machine's cores: the plane, Tessera and this
// program share them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/testing/control_plane.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  bool alone = false;
  std::string extender = TESSERA_EXTENDER_BINARY;
  int nodes = 50;
  int gpus = 8;
  int pods = 400;
  std::string fraction = "0.5";
  int runs = 3;
};

bool Flag(std::string_view arg, std::string_view name, std::string* value) {
  const std::string prefix = "--" + std::string(name) + "=";
  if (arg.substr(0, prefix.size()) != prefix) return false;
  *value = std::string(arg.substr(prefix.size()));
  return true;
}

Settings Parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string v;
    if (a == "--alone") {
      s.alone = true;
    } else if (Flag(a, "extender", &v)) {
      s.extender = v;
    } else if (Flag(a, "nodes", &v)) {
      s.nodes = std::stoi(v);
    } else if (Flag(a, "gpus", &v)) {
      s.gpus = std::stoi(v);
    } else if (Flag(a, "pods", &v)) {
      s.pods = std::stoi(v);
    } else if (Flag(a, "fraction", &v)) {
      s.fraction = v;
    } else if (Flag(a, "runs", &v)) {
      s.runs = std::stoi(v);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return s;
}

// Runs `work(i)` for i in [0, n) on 16 threads; false if any failed.
template <typename Work>
bool Parallel(int n, Work work) {
  std::atomic<int> next{0};
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        if (!work(i)) ok = false;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return ok.load();
}

// One batch; returns pods per second between 10% and 90% bound, or -1.
double RunOnce(testing::ControlPlane& plane, const Settings& s, int run) {
  const std::string ns = absl::StrCat("bench-", run);
  if (!plane.CreateNamespace(ns).ok()) return -1;
  const std::string label = absl::StrCat("bench-", run);
  auto node_name = [&](int i) { return absl::StrCat(label, "-node-", i); };
  const bool nodes = Parallel(s.nodes, [&](int i) {
    testing::GpuNodeSpec spec;
    spec.name = node_name(i);
    spec.gpus = s.gpus;
    absl::StatusOr<nlohmann::json> node = plane.CreateGpuNode(spec);
    if (!node.ok()) std::fprintf(stderr, "%s\n", std::string(node.status().message()).c_str());
    return node.ok();
  });
  if (!nodes) return -1;
  const bool created = Parallel(s.pods, [&](int i) {
    absl::StatusOr<nlohmann::json> pod =
        plane.CreatePod({.namespace_name = ns, .name = absl::StrCat("pod-", i),
                         .annotations = {{"tessera.io/gpu-fraction", s.fraction}},
                         .node_selector = {{"tessera.io/bench", label}}});
    if (!pod.ok()) std::fprintf(stderr, "%s\n", std::string(pod.status().message()).c_str());
    return pod.ok();
  });
  if (!created) return -1;
  // Wait until kube-scheduler has tried every pod once and parked it.
  const auto parked_by = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    absl::StatusOr<std::vector<nlohmann::json>> pods = plane.ListPods(ns);
    if (!pods.ok()) return -1;
    const auto parked = std::count_if(pods->begin(), pods->end(), [](const nlohmann::json& p) {
      return !testing::UnschedulableMessage(p).empty();
    });
    if (parked == s.pods) break;
    if (Clock::now() > parked_by) {
      std::fprintf(stderr, "only %ld of %d pods were tried before the nodes were labelled\n", static_cast<long>(parked), s.pods);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  const auto start = Clock::now();
  const bool labelled = Parallel(s.nodes, [&](int i) {
    const absl::Status st = plane.LabelNode(node_name(i), "tessera.io/bench", label);
    if (!st.ok()) std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return st.ok();
  });
  if (!labelled) return -1;
  std::vector<std::pair<double, int>> samples;  // seconds since start, pods bound
  const auto give_up = start + std::chrono::seconds(300);
  for (;;) {
    absl::StatusOr<std::vector<nlohmann::json>> pods = plane.ListPods(ns);
    if (!pods.ok()) return -1;
    const int bound = static_cast<int>(std::count_if(pods->begin(), pods->end(), testing::IsBound));
    samples.emplace_back(std::chrono::duration<double>(Clock::now() - start).count(), bound);
    if (bound == s.pods || Clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto when = [&](int count) {
    for (const auto& [t, bound] : samples) {
      if (bound >= count) return t;
    }
    return -1.0;
  };
  const int low = s.pods / 10;
  const int high = s.pods * 9 / 10;
  const double t_low = when(low);
  const double t_high = when(high);
  const double t_all = when(s.pods);
  std::printf("run %d: %d of %d pods bound; 10%% at %.2f s, 90%% at %.2f s, all at %.2f s after the nodes were labelled\n", run,
              samples.back().second, s.pods, t_low, t_high, t_all);
  for (int i = 0; i < s.nodes; ++i) (void)plane.DeleteNode(node_name(i));
  (void)plane.DeleteAllPods(ns);
  if (t_low < 0 || t_high <= t_low) return -1;
  return (high - low) / (t_high - t_low);
}

int Main(int argc, char** argv) {
  const Settings s = Parse(argc, argv);
  absl::StatusOr<std::string> kube = testing::FindControlPlane();
  if (!kube.ok()) {
    std::fprintf(stderr, "%s\n", std::string(kube.status().message()).c_str());
    return 2;
  }
  if (s.alone) setenv("SCHED_CONFIG_TMPL", (*kube + "/scheduler-config-alone.yaml.tmpl").c_str(), 1);
  absl::StatusOr<std::unique_ptr<testing::ControlPlane>> plane = testing::ControlPlane::Start(
      {.kube_dir = *kube, .extender_binary = s.extender,
       .policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"});
  if (!plane.ok()) {
    std::fprintf(stderr, "%s\n", std::string(plane.status().message()).c_str());
    return 1;
  }
  if (!s.alone) {
    if (absl::Status st = (*plane)->StartTessera(); !st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      return 1;
    }
  }
  std::printf("%s; %d nodes x %d GPUs, %d pods asking %s of a GPU\n",
              s.alone ? "kube-scheduler alone" : absl::StrCat("kube-scheduler with ", s.extender).c_str(), s.nodes,
              s.gpus, s.pods, s.fraction.c_str());
  for (int run = 1; run <= s.runs; ++run) {
    const double rate = RunOnce(**plane, s, run);
    if (rate < 0) {
      std::fprintf(stderr, "run %d failed\n%s\n", run, (*plane)->LogTails().c_str());
      return 1;
    }
    std::printf("run %d: %.0f pods/s\n", run, rate);
    std::fflush(stdout);
  }
  if (!s.alone) {
    // How the binds ended (a refused bind sends its pod back to kube-scheduler's queue).
    const std::string metrics = (*plane)->TesseraGet("/metrics").body;
    size_t at = 0;
    while ((at = metrics.find("\ntessera_binds_total{", at)) != std::string::npos) {
      const size_t end = metrics.find('\n', at + 1);
      std::printf("%s\n", metrics.substr(at + 1, end - at - 1).c_str());
      at = end;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::Main(argc, argv); }
