// The watch against a fake API server over HTTPS: what reaches the model,
// and that faults (410, dropped streams, 500s, malformed events) lose nothing.
#include "k8s/sync/cluster_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "k8s/annotations.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using testing::FakeApiServer;
using testing::FakeResource;
using testing::WaitFor;

constexpr char kToken[] = "watch-test-token";

// A node with `gpus` A100s declared through Tessera's inventory annotation.
nlohmann::json GpuNode(const std::string& name, int gpus) {
  nlohmann::json node = FakeApiServer::MinimalNode(name);
  std::string inventory = "[";
  for (int i = 0; i < gpus; ++i) {
    absl::StrAppend(&inventory, i ? "," : "", R"({"index":)", i, R"(,"uuid":"GPU-)", name, "-", i,
                    R"(","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920})");
  }
  inventory += "]";
  node["metadata"]["annotations"][std::string(kGpuInventory)] = inventory;
  return node;
}

// A pod bound to `node` holding `milli` of GPU `gpu` there (per its annotation on `assigned`).
nlohmann::json BoundPod(const std::string& name, const std::string& node, int gpu, int milli,
                        const std::string& assigned = "") {
  nlohmann::json pod = FakeApiServer::MinimalPod("ml", name);
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  pod["metadata"]["annotations"][std::string(kGpuFraction)] = absl::StrCat(milli / 10, "%");
  pod["metadata"]["annotations"][std::string(kGpuAssignment)] =
      absl::StrCat(R"({"node":")", assigned.empty() ? node : assigned, R"(","gpus":[{"index":)", gpu,
                   R"(,"milli":)", milli, "}]}");
  return pod;
}

class ClusterWatchTest : public ::testing::Test {
 protected:
  ClusterWatchTest() : server_(Options()) {}

  static testing::FakeApiServerOptions Options() {
    testing::FakeApiServerOptions o;
    o.bearer_token = kToken;
    o.bookmark_interval = std::chrono::milliseconds(100);
    return o;
  }

  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = std::to_string(server_.port());
    config.ca_pem = server_.certs().ca.cert_pem;
    config.token = kToken;
    ApiClientOptions options;
    options.request_timeout = absl::Seconds(5);
    client_ = *ApiClient::Create(config, options);
  }

  // Starts a watch into `model`, small pages and fast retries.
  std::unique_ptr<ClusterWatch> Watch(ClusterModel& model, PodDirectory& pods, int64_t page_size = 500) {
    ClusterWatchOptions o;
    o.page_size = page_size;
    o.min_backoff = absl::Milliseconds(20);
    o.max_backoff = absl::Milliseconds(200);
    o.watch_timeout = absl::Seconds(30);
    auto w = std::make_unique<ClusterWatch>(*client_, model, pods, &metrics_, o);
    w->Start();
    EXPECT_TRUE(w->WaitForSync(absl::Seconds(10)));
    return w;
  }

  static int64_t Held(const ClusterModel& m, std::string_view node, int32_t gpu) {
    const auto s = m.Current();
    const auto i = s->FindNode(node);
    return i ? s->View(*i).UsageOf(gpu).guaranteed.value() : -1;
  }
  static size_t Gpus(const ClusterModel& m) { return m.Current()->gpu_count(); }

  FakeApiServer server_;
  std::unique_ptr<ApiClient> client_;
  MetricsRegistry metrics_;
  ClusterModel model_;
  PodDirectory pods_;
};

TEST_F(ClusterWatchTest, NodesAndPodsAppearThroughTheListAndThenTheWatch) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 4)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("listed", "n1", 0, 250)).ok());
  auto watch = Watch(model_, pods_);
  EXPECT_EQ(Gpus(model_), 4u);
  EXPECT_EQ(Held(model_, "n1", 0), 250);

  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 8)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("watched", "n2", 3, 500)).ok());
  // Nodes and pods arrive on separate streams, in either order.
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n2", 3) == 500 && Gpus(model_) == 12u; }));
  // Every request carried the token.
  for (const auto& r : server_.Requests()) EXPECT_EQ(r.headers.at("authorization"), absl::StrCat("Bearer ", kToken));
}

TEST_F(ClusterWatchTest, APaginatedListReadsEveryPage) {
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(server_.AddNode(GpuNode(absl::StrCat("n", i), 1)).ok());
  auto watch = Watch(model_, pods_, /*page_size=*/2);
  EXPECT_EQ(Gpus(model_), 7u);
  int continued = 0;
  for (const auto& r : server_.Requests("GET", "/api/v1/nodes")) continued += r.query.count("continue");
  EXPECT_EQ(continued, 3);  // pages 2, 3 and 4
}

TEST_F(ClusterWatchTest, FinishedAndDeletedPodsFreeTheirGpusAtOnce) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("done", "n1", 0, 300)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("gone", "n1", 1, 700)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_EQ(Held(model_, "n1", 0), 300);
  ASSERT_TRUE(server_.SetPodPhase("ml", "done", "Succeeded").ok());
  ASSERT_TRUE(server_.DeletePod("ml", "gone").ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 0) == 0 && Held(model_, "n1", 1) == 0; }));
}

TEST_F(ClusterWatchTest, AWatchThatExpiresIsFollowedByAFreshListThatMissesNothing) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_TRUE(WaitFor([&] { return server_.OpenWatchStreams(FakeResource::kPods) == 1; }));
  const int64_t lists = watch->pod_status().lists;
  server_.ExpireWatches(FakeResource::kPods);
  ASSERT_TRUE(server_.AddPod(BoundPod("after", "n1", 1, 400)).ok());
  EXPECT_TRUE(WaitFor([&] { return watch->pod_status().lists > lists; }));
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 1) == 400; }));
}

TEST_F(ClusterWatchTest, AWatchFromACompactedVersionGets410AndRelists) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  auto watch = Watch(model_, pods_);
  // Listed and watching before the server goes: the reconnect is from the
  // list's resourceVersion, not a first list.
  ASSERT_TRUE(WaitFor([&] { return server_.OpenWatchStreams(FakeResource::kNodes) == 1; }));
  const int64_t lists = watch->node_status().lists;
  // The server forgets history while the watch is down: reconnecting from
  // the old resourceVersion is refused with 410, and only a list catches up.
  server_.Stop();
  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 4)).ok());
  server_.CompactHistory();
  ASSERT_TRUE(server_.Start().ok());
  // The list's count is bumped once its nodes are applied: wait for both
  // (under ASan the model showed the nodes a moment before the count moved).
  EXPECT_TRUE(WaitFor([&] { return Gpus(model_) == 6u && watch->node_status().lists > lists; }))
      << "GPUs " << Gpus(model_) << ", lists " << watch->node_status().lists << " (were " << lists << ")";
}

TEST_F(ClusterWatchTest, AWatchRefusedAsTooLargeResumesFromItsVersionAfterTheServersRetryAfter) {
  // A v1.36 API server whose watch cache lags the version the list was read
  // at refuses the watch ("Too large resource version", retry after 1 s):
  // the reflector waits what the server said, however short its own backoff
  // (20 ms here), and resumes from the same version; no relist, nothing lost.
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_TRUE(WaitFor([&] { return server_.OpenWatchStreams(FakeResource::kPods) == 1; }));
  const int64_t lists = watch->pod_status().lists;
  const int connections = server_.WatchConnections(FakeResource::kPods);
  server_.RefuseNextWatchesAsTooLarge(FakeResource::kPods, 2, /*retry_after_seconds=*/1);
  const absl::Time dropped = absl::Now();
  server_.DropWatchStreamsAfter(FakeResource::kPods, 0);
  ASSERT_TRUE(server_.AddPod(BoundPod("while-refused", "n1", 0, 600)).ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 0) == 600; }));
  EXPECT_GE(absl::Now() - dropped, absl::Seconds(2)) << "two refusals, each saying retry after 1 s";
  EXPECT_EQ(server_.WatchConnections(FakeResource::kPods), connections + 3) << "two refused, the third served";
  EXPECT_EQ(watch->pod_status().lists, lists) << "a lagging cache is waited for, not relisted around";
  EXPECT_THAT(watch->pod_status().last_error, HasSubstr("Too large resource version"));
}

// What a v1.36 API server on etcd 3.4 answers in a quiet cluster until its
// watch cache catches up: nothing is missed meanwhile, so /readyz must not
// flap to 503 through it.
TEST_F(ClusterWatchTest, WatchesTheServerAsksToRetryLaterStayInStep) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  server_.RefuseNextWatchesAsTooLarge(FakeResource::kPods, 2, /*retry_after_seconds=*/1);
  auto watch = Watch(model_, pods_);
  bool ever_out_of_step = false;
  EXPECT_TRUE(WaitFor([&] {
    ever_out_of_step |= !watch->pod_status().in_step;
    return server_.OpenWatchStreams(FakeResource::kPods) == 1;
  })) << "two refused, the third served";
  EXPECT_FALSE(ever_out_of_step);
  EXPECT_THAT(watch->pod_status().last_error, HasSubstr("Too large resource version"));
}

TEST_F(ClusterWatchTest, ADroppedStreamReconnectsFromItsResourceVersion) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_TRUE(WaitFor([&] { return server_.OpenWatchStreams(FakeResource::kPods) == 1; }));
  const int64_t lists = watch->pod_status().lists;
  server_.DropWatchStreamsAfter(FakeResource::kPods, 0);
  ASSERT_TRUE(server_.AddPod(BoundPod("during-the-drop", "n1", 0, 600)).ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 0) == 600; }));
  EXPECT_GE(server_.WatchConnections(FakeResource::kPods), 2);
  EXPECT_EQ(watch->pod_status().lists, lists);  // no relist was needed
  EXPECT_THAT(watch->pod_status().last_error, HasSubstr("watch lost"));
}

TEST_F(ClusterWatchTest, AMalformedEventIsCountedAndResyncsWithoutLosingState) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("p", "n1", 0, 500)).ok());
  auto watch = Watch(model_, pods_);
  const int64_t lists = watch->pod_status().lists;
  for (auto kind : {testing::MalformedEvent::kNotJson, testing::MalformedEvent::kMissingObject,
                    testing::MalformedEvent::kUnknownType}) {
    server_.InjectMalformedEvent(FakeResource::kPods, kind);
  }
  EXPECT_TRUE(WaitFor([&] { return watch->pod_status().malformed_events >= 1 && watch->pod_status().lists > lists; }));
  EXPECT_EQ(Held(model_, "n1", 0), 500);
  ASSERT_TRUE(server_.AddPod(BoundPod("later", "n1", 1, 100)).ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 1) == 100; }));
  EXPECT_THAT(metrics_.Render(), HasSubstr("tessera_watch_malformed_objects_total{resource=\"pods\"}"));
}

// Issue 46: a server that sends every new watch the same bad event is not
// listed as fast as it answers; the lists come after a backoff that grows
// (20 ms doubling here, jittered to no less than half), and the watch then
// works as before.
TEST_F(ClusterWatchTest, AServerThatMalformsEveryWatchIsListedAgainOnlyAfterAGrowingBackoff) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("p", "n1", 0, 500)).ok());
  auto watch = Watch(model_, pods_);
  // The pod watch open, so that the injected event reaches it and not the next.
  ASSERT_TRUE(WaitFor([&] { return server_.WatchConnections(FakeResource::kPods) >= 1; }));
  const size_t seen = server_.Requests().size();
  const int64_t lists = watch->pod_status().lists;
  server_.MalformNextWatches(FakeResource::kPods, 3);
  server_.InjectMalformedEvent(FakeResource::kPods);  // the open watch's: 4 in a row
  ASSERT_TRUE(WaitFor([&] { return watch->pod_status().lists >= lists + 4; }));
  std::vector<std::chrono::steady_clock::time_point> listed;
  const std::vector<testing::RecordedRequest> requests = server_.Requests();
  for (size_t i = seen; i < requests.size(); ++i) {
    if (requests[i].method == "GET" && !requests[i].watch && absl::StartsWith(requests[i].path, "/api/v1/pods")) {
      listed.push_back(requests[i].received);
    }
  }
  ASSERT_GE(listed.size(), 4u);
  // Backoffs of at least 10, 20 and 40 ms lie between the four lists.
  EXPECT_GE(listed[3] - listed[0], std::chrono::milliseconds(70));
  EXPECT_GE(listed[3] - listed[2], std::chrono::milliseconds(40));
  EXPECT_EQ(Held(model_, "n1", 0), 500);
  ASSERT_TRUE(server_.AddPod(BoundPod("later", "n1", 1, 100)).ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 1) == 100; }));
}

TEST_F(ClusterWatchTest, ServerErrorsAtStartAreRetriedUntilTheListSucceeds) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 8)).ok());
  testing::RequestMatch node_lists;
  node_lists.method = "GET";
  node_lists.path_prefix = "/api/v1/nodes";
  node_lists.watch = false;
  server_.FailNext(node_lists, 500, 3);
  auto watch = Watch(model_, pods_);
  EXPECT_EQ(Gpus(model_), 8u);
  EXPECT_THAT(watch->node_status().last_error, HasSubstr("HTTP 500"));
}

TEST_F(ClusterWatchTest, BookmarksAdvanceTheResourceVersionWithoutEvents) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 1)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 1)).ok());  // moves the global version past the pod list's
  const std::string rv = std::to_string(server_.ResourceVersion());
  EXPECT_TRUE(WaitFor([&] { return watch->pod_status().resource_version == rv; }));
}

TEST_F(ClusterWatchTest, ARestartedTesseraRebuildsExactlyTheSameAllocations) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 4)).ok());
  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 4)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("a", "n1", 0, 250)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("b", "n1", 0, 500)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("c", "n2", 3, 1000)).ok());
  std::vector<GpuUsage> before;
  {
    ClusterModel first;
    PodDirectory pods;
    auto watch = Watch(first, pods);
    for (const char* n : {"n1", "n2"}) {
      const auto s = first.Current();
      for (int g = 0; g < 4; ++g) before.push_back(s->View(*s->FindNode(n)).UsageOf(g));
    }
  }
  ClusterModel second;
  PodDirectory pods;
  auto watch = Watch(second, pods);
  std::vector<GpuUsage> after;
  for (const char* n : {"n1", "n2"}) {
    const auto s = second.Current();
    for (int g = 0; g < 4; ++g) after.push_back(s->View(*s->FindNode(n)).UsageOf(g));
  }
  EXPECT_EQ(before, after);
  EXPECT_EQ(Held(second, "n1", 0), 750);
}

TEST_F(ClusterWatchTest, AnAssignmentNamingAnotherNodeIsReportedAndCountedWhereThePodRuns) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 2)).ok());
  ASSERT_TRUE(server_.AddPod(BoundPod("moved", "n2", 1, 400, /*assigned=*/"n1")).ok());
  nlohmann::json broken = BoundPod("broken", "n1", 0, 100);
  broken["metadata"]["annotations"][std::string(kGpuAssignment)] = "{not json";
  ASSERT_TRUE(server_.AddPod(broken).ok());
  auto watch = Watch(model_, pods_);
  EXPECT_EQ(Held(model_, "n2", 1), 400);
  EXPECT_EQ(Held(model_, "n1", 1), 0);
  const std::vector<PodProblem> problems = watch->pod_problems();
  ASSERT_EQ(problems.size(), 2u);
  std::vector<std::string> kinds{problems[0].kind, problems[1].kind};
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"invalid_assignment", "node_mismatch"}));
}

// Issue 46: an unreadable assignment is never counted as free GPUs.
TEST_F(ClusterWatchTest, APodWhoseAssignmentIsUnreadableHoldsTheGpusItsVisibleDevicesName) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  auto watch = Watch(model_, pods_);  // the node known before the pod comes
  nlohmann::json broken = BoundPod("broken", "n1", 1, 250);
  broken["metadata"]["annotations"][std::string(kGpuAssignment)] = "{not json";
  broken["metadata"]["annotations"][std::string(kVisibleDevices)] = "GPU-n1-1";
  ASSERT_TRUE(server_.AddPod(broken).ok());
  EXPECT_TRUE(WaitFor([&] { return Held(model_, "n1", 1) == 250; })) << "its GPU-fraction 25% on GPU 1";
  EXPECT_EQ(Held(model_, "n1", 0), 0);
  const std::vector<PodProblem> problems = watch->pod_problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "invalid_assignment");
  EXPECT_THAT(problems[0].message, HasSubstr("counted as holding the GPUs its tessera.io/visible-devices names"));
}

TEST_F(ClusterWatchTest, APodWhoseHoldingCannotBeToldWithholdsItsNodeUntilItIsResolved) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  nlohmann::json broken = BoundPod("broken", "n1", 0, 100);
  broken["metadata"]["annotations"][std::string(kGpuAssignment)] = "{not json";  // and no visible devices
  ASSERT_TRUE(server_.AddPod(broken).ok());
  auto watch = Watch(model_, pods_);
  auto withheld = [&]() -> std::string {
    const auto s = model_.Current();
    const auto i = s->FindNode("n1");
    return i && s->View(*i).gpus_withheld != nullptr ? *s->View(*i).gpus_withheld : "";
  };
  EXPECT_THAT(withheld(), HasSubstr("pod ml/broken holds GPUs here that Tessera cannot count"));
  ASSERT_EQ(watch->pod_problems().size(), 1u);
  EXPECT_THAT(watch->pod_problems()[0].message, HasSubstr("its node n1 takes no GPU pod until it is resolved"));
  // Resolved: the pod's assignment is written again, readable.
  ASSERT_TRUE(server_.UpdatePod(BoundPod("broken", "n1", 0, 100)).ok());
  EXPECT_TRUE(WaitFor([&] { return withheld().empty() && Held(model_, "n1", 0) == 100; }));
  EXPECT_TRUE(watch->pod_problems().empty());
}

TEST_F(ClusterWatchTest, ANodeDeletedWhileTheWatchWasDownIsGoneAfterTheRelist) {
  ASSERT_TRUE(server_.AddNode(GpuNode("n1", 2)).ok());
  ASSERT_TRUE(server_.AddNode(GpuNode("n2", 2)).ok());
  auto watch = Watch(model_, pods_);
  ASSERT_EQ(Gpus(model_), 4u);
  server_.Stop();
  ASSERT_TRUE(server_.DeleteNode("n2").ok());
  server_.CompactHistory();
  ASSERT_TRUE(server_.Start().ok());
  EXPECT_TRUE(WaitFor([&] { return Gpus(model_) == 2u; }));
  EXPECT_FALSE(model_.Current()->FindNode("n2").has_value());
}

TEST_F(ClusterWatchTest, UtilizationAnnotationsAndBindTimesReachLoadAwareScoring) {
  nlohmann::json node = GpuNode("n1", 1);
  node["metadata"]["annotations"]["tessera.io/gpu-utilization"] = R"({"gpus":[]})";
  ASSERT_TRUE(server_.AddNode(node).ok());
  nlohmann::json pod = BoundPod("p", "n1", 0, 200);
  pod["status"]["conditions"] = {{{"type", "PodScheduled"}, {"status", "True"},
                                  {"lastTransitionTime", "2026-11-22T01:02:03Z"}}};
  ASSERT_TRUE(server_.AddPod(pod).ok());
  absl::Mutex mu;
  std::map<std::string, std::optional<std::string>> seen;
  ClusterWatchOptions o;
  ClusterWatch watch(*client_, model_, pods_, nullptr, o);
  watch.set_utilization_observer([&](const std::string& n, std::optional<std::string_view> v) {
    absl::MutexLock lock(&mu);
    seen[n] = v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
  });
  watch.Start();
  ASSERT_TRUE(watch.WaitForSync(absl::Seconds(10)));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(seen["n1"], std::optional<std::string>(R"({"gpus":[]})"));
  }
  const std::string uid = (*server_.Pod("ml", "p"))["metadata"]["uid"].get<std::string>();
  const std::optional<PodHolding> held = model_.FindPod(uid);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->bound_at, absl::FromUnixSeconds(1795309323));
  ASSERT_TRUE(server_.DeleteNode("n1").ok());
  EXPECT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return !seen["n1"].has_value();
  }));
}

}  // namespace
}  // namespace tessera::k8s
