// Load-aware scheduling end to end with a real Prometheus: the test serves a
// fake DCGM exporter whose values it controls, Prometheus (Debian's package,
// started here on loopback) scrapes it every 200 ms, the refresher queries
// Prometheus into the cluster model, and the policy loaded from a policy file
// text scores and filters from the model's snapshot.
//
// Prometheus is stopped by PrometheusProcess's destructor, also when a test
// fails; a missing binary fails the test with the install hint.
//
// Prometheus 2.42 applies a new scrape target only at its scrape manager's
// 5-second reload tick, so each start costs 5 s before the first sample. The
// binary therefore starts its exporter and Prometheus once, for all its tests
// (ctest runs it as one test, RealPrometheusTests), plus a second Prometheus
// at the same time for the one test that kills it.
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "scheduler/framework/plugin_args.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "policies/load_aware/load_aware.h"
#include "scheduler/model/absl_compat.h"
#include "telemetry/telemetry_refresher.h"
#include "test/telemetry/fake_endpoints.h"
#include "test/testing/builders.h"
#include "test/testing/prometheus_process.h"
#include "test/testing/eventually.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::DcgmGpu;
using testing::FakeEndpoint;
using testing::PrometheusProcess;

constexpr std::string_view kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
  - name: load-aware
    weight: 5
    args: {rejectBusyGpus: true, busyThresholdPercent: 90, podWarmupSeconds: 0}
telemetry:
  refreshInterval: 1s
  staleAfter: 2s
  prometheus:
    url: http://127.0.0.1:PORT
    timeout: 5s
    queries:
      utilization: DCGM_FI_DEV_GPU_UTIL
      sustainedUtilization: max_over_time(DCGM_FI_DEV_GPU_UTIL[1s])
    windows: {utilization: now, sustainedUtilization: 1s max}
)";

// Scrapes every 200 ms, a 1 s window and a 2 s TTL: a test waits for a
// change about a second, for staleness two (they were 1 s, 3 s and 4 s: 6 to
// 10 s a test). The TTL stays well above the scrape interval, because
// load-aware judges freshness by the real clock when it scores.

constexpr absl::Duration kPatience = absl::Seconds(30);

// What the whole binary shares: one exporter, scraped by two Prometheus
// servers (the second, `doomed`, is the one a test kills).
struct SharedPrometheus {
  FakeEndpoint exporter;
  absl::StatusOr<std::unique_ptr<PrometheusProcess>> prometheus = absl::UnknownError("not started");
  absl::StatusOr<std::unique_ptr<PrometheusProcess>> doomed = absl::UnknownError("not started");
};

class RealPrometheusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared_ = new SharedPrometheus();
    shared_->prometheus = PrometheusProcess::Start({.target_port = shared_->exporter.port()});
    shared_->doomed = PrometheusProcess::Start({.target_port = shared_->exporter.port()});
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(shared_->prometheus.ok()) << shared_->prometheus.status();
    ASSERT_TRUE(shared_->doomed.ok()) << shared_->doomed.status();
    prometheus_ = shared_->prometheus->get();
    SetLoad(5, 5);  // the exporter as every test starts: answering, cool

    // Two A100s a node, uuids GPU-<node>-<index> (what the fake exporter reports).
    for (const std::string node : {"node-a", "node-b"}) {
      model_.UpsertNode(node, testing::Node(node).Gpus(2).inventory(), absl::OkStatus());
    }
    model_.Publish();

    UsePrometheus(*prometheus_);

    LoadAwareArgs args;
    args.reject_busy_gpus = true;
    args.pod_warmup = absl::ZeroDuration();
    load_aware_ = std::make_unique<LoadAwarePlugin>(args);
  }

  // Loads the policy with the Prometheus at `p` and points the refresher at it.
  void UsePrometheus(const PrometheusProcess& p) {
    const std::string text = absl::StrReplaceAll(Absl(kPolicy), {{"PORT", std::to_string(p.port())}});
    absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(text, "load-aware-test.yaml", registry_);
    ASSERT_TRUE(policy.ok()) << policy.status();
    policy_ = *std::move(policy);
    ASSERT_TRUE(policy_.telemetry.has_value());
    ASSERT_TRUE(refresher_.Configure(policy_.telemetry).ok());
  }

  // Both GPUs of node-a at `a` percent, of node-b at `b`.
  void SetLoad(double a, double b) { SetGpuLoads({a, a}, b); }

  // node-a's GPU 0 and 1 at `a[0]` and `a[1]` percent, node-b's at `b`.
  void SetGpuLoads(std::array<double, 2> a, double b) {
    std::vector<DcgmGpu> gpus;
    for (int i = 0; i < 2; ++i) {
      gpus.push_back({"node-a", i, absl::StrCat("GPU-node-a-", i), a[static_cast<size_t>(i)], 1024, 80896});
      gpus.push_back({"node-b", i, absl::StrCat("GPU-node-b-", i), b, 1024, 80896});
    }
    shared_->exporter.Set("/metrics", {.content_type = "text/plain; version=0.0.4",
                                       .body = testing::DcgmExposition(gpus)});
  }

  [[nodiscard]] NodeView View(const std::string& node) {
    snapshot_ = model_.Current();
    return snapshot_->View(*snapshot_->FindNode(node));
  }

  // The GPU `gpu` of `node` as the snapshot has it; null when unmeasured.
  const GpuTelemetry* Gpu(const std::string& node, int32_t gpu) {
    const NodeView v = View(node);
    return v.telemetry == nullptr ? nullptr : v.telemetry->Find(gpu);
  }

  // Refresh rounds until `done` holds; false after kPatience.
  bool RefreshUntil(const std::function<bool()>& done) {
    return testing::WaitFor(
        [&] {
          refresher_.RefreshNow().IgnoreError();  // Prometheus may still be warming up
          return done();
        },
        kPatience);
  }

  bool Measured(const std::string& node, int64_t util_permille, int64_t sustained_permille) {
    for (int32_t i = 0; i < 2; ++i) {
      const GpuTelemetry* g = Gpu(node, i);
      if (g == nullptr || g->utilization != PerMille(util_permille) ||
          g->sustained_utilization != PerMille(sustained_permille)) {
        return false;
      }
    }
    return true;
  }

  int64_t LoadAwareScore(const std::string& node, const PodGpuRequest& pod) {
    GpuChoice gpu0;
    gpu0.gpu_indices.push_back(0);
    return load_aware_->ScoreNode(CycleState(pod), View(node), gpu0);
  }

  // The profile's wire scores (0..10) for node-a and node-b.
  std::vector<int64_t> WireScores(const PodGpuRequest& pod) {
    snapshot_ = model_.Current();
    const std::vector<NodeView> views = {View("node-a"), View("node-b")};
    return policy_.profile->Score(CycleState(pod), testing::Pointers(views), nullptr);
  }

  static SharedPrometheus* shared_;
  const PluginRegistry registry_ = NewBuiltinRegistry();
  PrometheusProcess* prometheus_ = nullptr;  // the one the refresher queries
  ClusterModel model_;
  MetricsRegistry metrics_;
  TelemetryRefresher refresher_{model_, metrics_, TelemetryRefresher::Mode::kManual};
  LoadedPolicy policy_;
  std::unique_ptr<LoadAwarePlugin> load_aware_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
};

SharedPrometheus* RealPrometheusTest::shared_ = nullptr;

TEST_F(RealPrometheusTest, ScoresAndFilterReasonsFollowTheExportersValues) {
  const PodGpuRequest pod = testing::Pod().Fraction(250);
  SetLoad(95, 5);
  ASSERT_TRUE(RefreshUntil([&] { return Measured("node-a", 950, 950) && Measured("node-b", 50, 50); }))
      << prometheus_->Log();
  const FilterVerdict hot = policy_.profile->Filter(CycleState(pod), View("node-a"));
  EXPECT_FALSE(hot.ok());
  EXPECT_THAT(hot.message, HasSubstr("GPU 0 at 95 percent utilisation (1s max) above the 90 percent threshold"));
  EXPECT_TRUE(policy_.profile->Filter(CycleState(pod), View("node-b")).ok());
  EXPECT_LT(LoadAwareScore("node-a", pod), LoadAwareScore("node-b", pod));
  std::vector<int64_t> wire = WireScores(pod);
  EXPECT_LT(wire[0], wire[1]);

  SetLoad(5, 95);
  ASSERT_TRUE(RefreshUntil([&] { return Measured("node-a", 50, 50) && Measured("node-b", 950, 950); }));
  EXPECT_TRUE(policy_.profile->Filter(CycleState(pod), View("node-a")).ok());
  EXPECT_THAT(policy_.profile->Filter(CycleState(pod), View("node-b")).message, HasSubstr("at 95 percent utilisation (1s max)"));
  EXPECT_GT(LoadAwareScore("node-a", pod), LoadAwareScore("node-b", pod));
  wire = WireScores(pod);
  EXPECT_GT(wire[0], wire[1]);
}

TEST_F(RealPrometheusTest, APodGetsTheCoolGpuOfANodeWhoseOtherGpuIsBusy) {
  const PodGpuRequest one = testing::Pod().Fraction(250);
  const PodGpuRequest two = testing::Pod().Fraction(250).Count(2);
  GpuChoice gpu0, gpu1;
  gpu0.gpu_indices.push_back(0);
  gpu1.gpu_indices.push_back(1);

  SetGpuLoads({95, 5}, 5);
  ASSERT_TRUE(RefreshUntil([&] { return Gpu("node-a", 0) != nullptr && Gpu("node-a", 0)->utilization == PerMille(950) &&
                                        Gpu("node-a", 1) != nullptr && Gpu("node-a", 1)->utilization == PerMille(50); }))
      << prometheus_->Log();
  EXPECT_TRUE(policy_.profile->Filter(CycleState(one), View("node-a")).ok());
  EXPECT_EQ(policy_.profile->ChooseGpus(CycleState(one), View("node-a")), gpu1);
  const FilterVerdict both = policy_.profile->Filter(CycleState(two), View("node-a"));
  EXPECT_FALSE(both.ok());
  EXPECT_EQ(both.message, "GPU 0 at 95 percent utilisation (1s max) above the 90 percent threshold");

  // The load moves: so does the pod.
  SetGpuLoads({5, 95}, 5);
  ASSERT_TRUE(RefreshUntil([&] { return Gpu("node-a", 0)->utilization == PerMille(50) &&
                                        Gpu("node-a", 0)->sustained_utilization == PerMille(50) &&
                                        Gpu("node-a", 1)->utilization == PerMille(950); }));
  EXPECT_EQ(policy_.profile->ChooseGpus(CycleState(one), View("node-a")), gpu0);
}

TEST_F(RealPrometheusTest, EstimatesForJustBoundPodsApplyUntilNewSamplesArrive) {
  const PodGpuRequest pod = testing::Pod().Fraction(100);
  SetLoad(10, 10);
  ASSERT_TRUE(RefreshUntil([&] { return Measured("node-a", 100, 100); })) << prometheus_->Log();
  const int64_t before = LoadAwareScore("node-a", pod);

  // A pod lands on node-a's GPU 0 after its last sample.
  const absl::Time bound_at = absl::Now();
  model_.UpsertPod(testing::BoundAt(testing::Holding("uid-burst-1", "node-a", 0, 500), bound_at));
  model_.Publish();
  ASSERT_LT(Gpu("node-a", 0)->sampled_at, bound_at);
  const int64_t estimated = LoadAwareScore("node-a", pod);
  EXPECT_LT(estimated, before);

  // Samples taken after the bind show the GPU as it is (the pod did not
  // really start here, so the load stays at 10%): the estimate is dropped.
  ASSERT_TRUE(RefreshUntil([&] { return Gpu("node-a", 0) != nullptr && Gpu("node-a", 0)->sampled_at > bound_at; }));
  EXPECT_EQ(LoadAwareScore("node-a", pod), before);
}

TEST_F(RealPrometheusTest, DataGoesStaleWhenTheExporterFails) {
  const PodGpuRequest pod = testing::Pod().Fraction(250);
  SetLoad(95, 5);
  ASSERT_TRUE(RefreshUntil([&] { return Measured("node-a", 950, 950); })) << prometheus_->Log();
  ASSERT_FALSE(policy_.profile->Filter(CycleState(pod), View("node-a")).ok());

  // Scrapes fail (the next test's SetUp brings the exporter back).
  shared_->exporter.Set("/metrics", {.status = 503, .content_type = "text/plain", .body = "exporter down"});
  ASSERT_TRUE(RefreshUntil([&] { return View("node-a").telemetry == nullptr; }));
  EXPECT_TRUE(policy_.profile->Filter(CycleState(pod), View("node-a")).ok());
  EXPECT_EQ(LoadAwareScore("node-a", pod), load_aware_->args().neutral_score);
  EXPECT_EQ(LoadAwareScore("node-b", pod), load_aware_->args().neutral_score);
}

TEST_F(RealPrometheusTest, PrometheusDownGivesNeutralScoresAndIsCounted) {
  prometheus_ = shared_->doomed->get();
  UsePrometheus(*prometheus_);
  const PodGpuRequest pod = testing::Pod().Fraction(250);
  SetLoad(95, 5);
  ASSERT_TRUE(RefreshUntil([&] { return Measured("node-a", 950, 950); })) << prometheus_->Log();
  EXPECT_NE(LoadAwareScore("node-a", pod), load_aware_->args().neutral_score);

  prometheus_->Kill();
  const absl::Status down = refresher_.RefreshNow();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable) << down;
  EXPECT_THAT(metrics_.Render(),
              HasSubstr(R"(tessera_telemetry_queries_total{query="utilization",result="unreachable"} )"));
  // The last values hold until their TTL, then nothing is trusted.
  ASSERT_TRUE(RefreshUntil([&] { return View("node-a").telemetry == nullptr; }));
  EXPECT_EQ(LoadAwareScore("node-a", pod), load_aware_->args().neutral_score);
  EXPECT_EQ(LoadAwareScore("node-b", pod), load_aware_->args().neutral_score);
  EXPECT_TRUE(policy_.profile->Filter(CycleState(pod), View("node-a")).ok());
}

TEST(PrometheusProcessTest, AMissingBinaryIsAnErrorWithTheInstallHint) {
  ::setenv("TESSERA_PROMETHEUS", "/nonexistent/prometheus", 1);
  const absl::StatusOr<std::string> binary = PrometheusProcess::FindBinary();
  ::unsetenv("TESSERA_PROMETHEUS");
  ASSERT_FALSE(binary.ok());
  EXPECT_THAT(binary.status().message(), HasSubstr("/nonexistent/prometheus"));
  EXPECT_TRUE(PrometheusProcess::FindBinary().ok())
      << "scripts/install-deps.sh installs Debian's prometheus package; the load-aware tests need it";
}

}  // namespace
}  // namespace tessera
