// The real tessera-extender process: start-up errors, reloads and SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "test/integration/extender_process.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/http_client.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_test_certs.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack}
)";
constexpr const char* kBadPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: pack}
)";
constexpr const char* kCluster = R"(nodes:
  - {name: n1, labels: {nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
)";
constexpr const char* kFilter =
    R"({"Pod":{"metadata":{"name":"p","annotations":{"tessera.io/gpu-fraction":"0.5"}}},"Nodes":null,"NodeNames":["n1"]})";

using testing::Extender;

class ExtenderBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-binary-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    Write("policy.yaml", kPolicy);
    Write("cluster.yaml", kCluster);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> Args() const {
    return {"--port=0", "--cluster-file=" + Path("cluster.yaml"), "--policy-file=" + Path("policy.yaml"),
            "--policy-poll-interval=100ms"};
  }
  // The binary against `api` with the policy file `policy` (Write it
  // first), once it serves and is ready; `port` is where (0, with a failure
  // recorded, when it never was).
  std::unique_ptr<Extender> StartReady(testing::FakeApiServer& api, const std::string& policy, uint16_t& port) {
    port = 0;
    absl::StatusOr<std::string> kubeconfig = api.WriteKubeconfig();
    if (!kubeconfig.ok()) {
      ADD_FAILURE() << kubeconfig.status();
      return nullptr;
    }
    auto e = std::make_unique<Extender>(
        std::vector<std::string>{"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + Path(policy)});
    const uint16_t serving = Port(*e);
    if (serving == 0) {
      ADD_FAILURE() << "never served: " << e->AllOutput();
      return e;
    }
    testing::HttpClient client(serving);
    if (!testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) {
      ADD_FAILURE() << "never ready: " << e->AllOutput();
      return e;
    }
    port = serving;
    return e;
  }
  static uint16_t Port(Extender& e) {
    const std::vector<std::string> m = e.WaitFor(std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"));
    return m.empty() ? 0 : static_cast<uint16_t>(std::stoi(m[1]));
  }

  fs::path dir_;
};

TEST_F(ExtenderBinaryTest, AnInvalidPolicyFileStopsTheStartWithFileLineAndField) {
  Write("policy.yaml", kBadPolicy);
  Extender e(Args());
  EXPECT_EQ(e.Wait(), 2);
  EXPECT_THAT(e.AllOutput(), HasSubstr("policy.yaml:5:26: plugins[0].args.nodeStrategy: must be one of binpack, spread"));
}

TEST_F(ExtenderBinaryTest, AFlagOutOfRangeStopsTheStartWithExitTwoAndNamesTheFlagAndItsRange) {
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::vector<std::string> messages;
  };
  const std::vector<Case> cases = {
      {"a port past 65535 is refused, not wrapped", {"--port=70000"}, {"--port must be 0..65535, got 70000"}},
      {"a hundred thousand threads are refused", {"--threads=100000"}, {"--threads must be 1..64, got 100000"}},
      {"a negative body limit is not unlimited", {"--max-body-bytes=-1"}, {"--max_body_bytes must be 1024.."}},
      {"a zero read timeout is refused", {"--read-timeout=0"}, {"--read_timeout must be 100ms..1h, got 0"}},
      {"a lease without a namespace is refused",
       {"--leader-elect-lease=tessera"},
       {"--leader-elect-lease must be NAMESPACE/NAME, got \"tessera\""}},
      {"a renew deadline past the lease term is refused",
       {"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=10s"},
       {"the lease duration must be longer than the renew deadline"}},
      {"no bind thread is refused", {"--bind-threads=0"}, {"--bind_threads must be 1..256, got 0"}},
      {"a zero bind timeout is refused", {"--bind-timeout=0"}, {"--bind_timeout must be 100ms..1h, got 0"}},
      {"a body budget smaller than one body is refused",
       {"--max-body-bytes=1048576", "--max-body-bytes-in-flight=1000"},
       {"--max_body_bytes_in_flight must be 1048576..68719476736, got 1000"}},
      {"no connection at all is refused", {"--max-connections=0"}, {"--max_connections must be 1..65536, got 0"}},
      {"a webhook port past 65535 is refused", {"--webhook-port=70000"}, {"--webhook_port must be 0..65535, got 70000"}},
      {"a webhook without a certificate is refused",
       {"--webhook-port=8443"},
       {"--webhook_cert_file must not be empty", "--webhook_key_file must not be empty"}},
      {"an unknown GPU enforcement is refused",
       {"--gpu-enforcement=mig"},
       {"--gpu_enforcement: GPU enforcement \"mig\" must be none, mps or hami-core"}},
      {"every bad flag is named at once",
       {"--score-threads=-2", "--api-timeout=-1s"},
       {"--score_threads must be -1..64, got -2", "--api_timeout must be 100ms..1h, got -1s"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = Args();
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    Extender e(args);
    EXPECT_EQ(e.Wait(), 2);
    for (const std::string& m : c.messages) EXPECT_THAT(e.AllOutput(), HasSubstr(m));
  }
}

TEST_F(ExtenderBinaryTest, TheServersCapsAreFlagsAndWhatTheyRefuseIsCounted) {
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--max-connections=1", "--max-body-bytes=1024"});
  Extender e(args);
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  {
    testing::HttpClient first(port);
    ASSERT_EQ(first.Get("/healthz").status, 200);
    testing::HttpClient second(port);
    EXPECT_EQ(second.Get("/healthz").status, 0) << "a second connection is closed when accepted";
    EXPECT_EQ(first.Post("/filter", std::string(1025, ' ')).status, 413);
  }
  // Refused until the server has seen the first connection go.
  testing::HttpAnswer metrics;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (metrics.status != 200 && std::chrono::steady_clock::now() < deadline) {
    metrics = testing::HttpClient(port).Get("/metrics");
  }
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, ::testing::ContainsRegex("\ntessera_http_connections_refused_total [1-9]"));
  EXPECT_THAT(metrics.body, HasSubstr("\ntessera_http_rejections_total{reason=\"body_too_large\"} 1\n"));
}

TEST_F(ExtenderBinaryTest, AnInvalidReloadKeepsThePolicyInForceAndSigtermExitsZero) {
  Extender e(Args());
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  testing::HttpClient client(port);
  ASSERT_EQ(client.Post("/filter", kFilter).status, 200);

  // The file changes to an invalid policy: refused, the old one stays.
  Write("policy.yaml", kBadPolicy);
  EXPECT_FALSE(e.WaitFor(std::regex("policy reload refused")).empty());
  EXPECT_EQ(client.Post("/filter", kFilter).status, 200);
  // SIGHUP with the invalid file: refused again.
  e.Signal(SIGHUP);
  EXPECT_FALSE(e.WaitFor(std::regex("policy reload refused")).empty());
  const testing::HttpAnswer metrics = client.Get("/metrics");
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_policy_reloads_total{result="failure"} 2)"));
  // A valid file is taken.
  Write("policy.yaml", std::string(kPolicy) + "# changed\n");
  EXPECT_FALSE(e.WaitFor(std::regex("policy reloaded")).empty());

  e.Signal(SIGTERM);
  EXPECT_EQ(e.Wait(), 0);
  EXPECT_THAT(e.AllOutput(), HasSubstr("stopped"));
}

// The fake API server of the tests below, its node and pods, and bind's arguments.
testing::FakeApiServerOptions ApiOptions() {
  testing::FakeApiServerOptions o;
  o.bearer_token = "binary-test-token";
  return o;
}
nlohmann::json TwoL4Node(const std::string& name) {
  nlohmann::json node = testing::FakeApiServer::MinimalNode(name);
  node["metadata"]["labels"] = {{"nvidia.com/gpu.count", "2"}, {"nvidia.com/gpu.product", "NVIDIA-L4"}};
  return node;
}
nlohmann::json GpuPod(const std::string& name, const std::string& fraction) {
  nlohmann::json pod = testing::FakeApiServer::MinimalPod("ml", name);
  pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  return pod;
}
std::string BindTo(const nlohmann::json& pod, const std::string& node) {
  return nlohmann::json{{"PodName", pod["metadata"]["name"]},
                        {"PodNamespace", pod["metadata"]["namespace"]},
                        {"PodUID", pod["metadata"]["uid"]},
                        {"Node", node}}
      .dump();
}

TEST_F(ExtenderBinaryTest, ABurstOfBindsFindsItsApiServerConnectionsOpenedBeforeIt) {
  testing::FakeApiServer api(ApiOptions());
  ASSERT_TRUE(api.Start().ok());
  ASSERT_TRUE(api.AddNode(TwoL4Node("n1")).ok());
  std::vector<nlohmann::json> pods;
  for (int i = 0; i < 8; ++i) {
    pods.push_back(*api.AddPod(GpuPod(absl::StrCat("p", i), "0.25")));  // eight quarters: both GPUs
  }
  absl::StatusOr<std::string> kubeconfig = api.WriteKubeconfig();
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  Extender e({"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + Path("policy.yaml"), "--bind-threads=8"});
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  testing::HttpClient client(port);
  ASSERT_TRUE(testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) << e.AllOutput();
  // One connection per bind thread, opened and kept by the program itself
  // (the initial lists' connections may be idle beside them).
  const auto idle = [&] {
    const std::string metrics = client.Get("/metrics").body;
    const std::string name = "\ntessera_api_connections_idle ";
    const size_t at = metrics.find(name);
    return at == std::string::npos ? -1 : std::atoi(metrics.c_str() + at + name.size());
  };
  ASSERT_TRUE(testing::WaitFor([&] { return idle() >= 8; })) << "idle connections: " << idle();
  // The program's other clients (the nudge, the capacity publisher) open
  // theirs right after the first sync; let them: no new connection for 2 s.
  int accepted_before = api.AcceptedConnections();
  absl::Time quiet_since = absl::Now();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        if (api.AcceptedConnections() != accepted_before) {
          accepted_before = api.AcceptedConnections();
          quiet_since = absl::Now();
        }
        return absl::Now() - quiet_since >= absl::Seconds(2);
      },
      absl::Seconds(30), "2 s without a new connection to the API server"));

  testing::RequestMatch bindings;
  bindings.method = "POST";
  bindings.path_prefix = "/api/v1/namespaces/ml/pods/";
  api.HoldNext(bindings, 8);
  std::vector<std::string> answers(pods.size());
  std::vector<std::thread> binds;
  for (size_t i = 0; i < pods.size(); ++i) {
    binds.emplace_back([&, i] {
      answers[i] = testing::HttpClient(port).Post("/bind", BindTo(pods[i], "n1")).body;
    });
  }
  EXPECT_TRUE(testing::WaitFor([&] { return api.HeldRequests() == 8; })) << api.HeldRequests() << " in flight";
  api.ReleaseHeld();
  for (std::thread& t : binds) t.join();
  for (const std::string& a : answers) EXPECT_EQ(a, R"({"Error":""})");
  EXPECT_EQ(api.AcceptedConnections(), accepted_before)
      << "eight Bindings in flight together opened connections of their own (a TLS handshake each)";

  e.Signal(SIGTERM);
  EXPECT_EQ(e.Wait(), 0);
}

// Issue 46: /readyz is 503 while the model may miss changes (the watches
// lost with the API server), with the reason, and 200 once they follow again.
TEST_F(ExtenderBinaryTest, ItIsNotReadyWhileItsWatchesAreLostAndReadyAgainOnceTheyFollow) {
  testing::FakeApiServer api(ApiOptions());
  ASSERT_TRUE(api.Start().ok());
  ASSERT_TRUE(api.AddNode(TwoL4Node("n1")).ok());
  absl::StatusOr<std::string> kubeconfig = api.WriteKubeconfig();
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  Extender e({"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + Path("policy.yaml")});
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  testing::HttpClient client(port);
  ASSERT_TRUE(testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) << e.AllOutput();

  api.Stop();
  testing::HttpAnswer down;
  ASSERT_TRUE(testing::WaitFor([&] {
    down = client.Get("/readyz");
    return down.status == 503;
  })) << e.AllOutput();
  EXPECT_THAT(down.body, HasSubstr("watch is not following the API server")) << down.body;
  // Each watch notices on its own: the pod watch too, soon.
  EXPECT_TRUE(testing::WaitFor([&] {
    return !nlohmann::json::parse(client.Get("/debug").body)["watches"]["pods"]["inStep"].get<bool>();
  }));

  const absl::Status restarted = api.Start();  // on the same port
  ASSERT_TRUE(restarted.ok()) << restarted;
  EXPECT_TRUE(testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) << e.AllOutput();
  e.Signal(SIGTERM);
  EXPECT_EQ(e.Wait(), 0);
}

TEST_F(ExtenderBinaryTest, AgainstAnApiServerItIsReadyOnlyOnceSyncedAndBindsPods) {
  testing::FakeApiServer api(ApiOptions());
  ASSERT_TRUE(api.Start().ok());
  ASSERT_TRUE(api.AddNode(TwoL4Node("n1")).ok());
  const nlohmann::json pod = *api.AddPod(GpuPod("p", "0.5"));
  absl::StatusOr<std::string> kubeconfig = api.WriteKubeconfig();
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  // The pod list answers late, so the extender is seen not ready first.
  testing::RequestMatch pod_list;
  pod_list.method = "GET";
  pod_list.path_prefix = "/api/v1/pods";
  pod_list.watch = false;
  api.DelayNext(pod_list, std::chrono::milliseconds(3000));  // long enough for a loaded machine to start first

  Extender e({"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + Path("policy.yaml")});
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  testing::HttpClient client(port);
  EXPECT_EQ(client.Get("/readyz").status, 503);
  EXPECT_TRUE(testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) << e.AllOutput();

  const std::string args = nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n1"}}}.dump();
  const testing::HttpAnswer filter = client.Post("/filter", args);
  EXPECT_EQ(nlohmann::json::parse(filter.body)["NodeNames"], nlohmann::json({"n1"})) << filter.body;
  EXPECT_EQ(client.Post("/bind", BindTo(pod, "n1")).body, R"({"Error":""})");
  const nlohmann::json bound = *api.Pod("ml", "p");
  EXPECT_EQ(bound["spec"]["nodeName"], "n1");
  EXPECT_EQ(bound["metadata"]["annotations"]["tessera.io/visible-devices"], "0");
  EXPECT_THAT(client.Get("/metrics").body, HasSubstr(R"(tessera_binds_total{result="success"} 1)"));
  const nlohmann::json debug = nlohmann::json::parse(client.Get("/debug").body);
  EXPECT_EQ(debug["watches"]["nodes"]["synced"], true);

  e.Signal(SIGTERM);
  EXPECT_EQ(e.Wait(), 0);
}

// Issue #22: the control loop publishes a learned mix with the cluster's CPU
// per GPU, from the nodes the watch saw, and /debug says whether CPU is short.
TEST_F(ExtenderBinaryTest, ALearnedMixKnowsTheClustersCpuPerGpuAndDebugSaysWhetherItIsShort) {
  Write("learning.yaml", R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: fgd
    args: {workload: ["1 cpu=1 gpu=1"]}
workloadLearning: {windowPods: 100, warmupPods: 1, publishEveryPods: 1}
)");
  testing::FakeApiServer api(ApiOptions());
  ASSERT_TRUE(api.Start().ok());
  ASSERT_TRUE(api.AddNode(TwoL4Node("n1")).ok());  // 8 cores for 2 GPUs: 4 per GPU
  nlohmann::json pod = GpuPod("p", "0.5");
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "6";  // 12 cores per GPU asked
  pod = *api.AddPod(pod);
  uint16_t port = 0;
  const std::unique_ptr<Extender> e = StartReady(api, "learning.yaml", port);
  ASSERT_NE(port, 0);
  testing::HttpClient client(port);

  const std::string args = nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n1"}}}.dump();
  ASSERT_EQ(client.Post("/filter", args).status, 200);
  nlohmann::json workload;
  EXPECT_TRUE(testing::WaitFor([&] {
    workload = nlohmann::json::parse(client.Get("/debug").body)["workload"];
    return workload["inForce"] == "learned";
  })) << workload.dump();
  EXPECT_EQ(workload["clusterMilliCpuPerGpu"], 4000);
  EXPECT_EQ(workload["askedMilliCpuPerGpu"], 12000);
  EXPECT_EQ(workload["cpuShort"], true);
  EXPECT_EQ(workload["clusterGpuModels"], nlohmann::json::parse(R"([{"model": "NVIDIA-L4", "gpus": 2}])"));
  EXPECT_EQ(workload["scarceGpuModels"], nlohmann::json::array()) << "no pod names a model";
  // The filter's answer named n1 alone, so the pod's half GPU is assumed
  // there (extender/service/binder.h): n1 is no longer idle.
  EXPECT_EQ(workload["clusterIdleNodes"], 0);
  EXPECT_EQ(workload["clusterFreeGpuMilli"], 1500);
  EXPECT_EQ(workload["wholeNodeKinds"], nlohmann::json::array()) << "a share takes no whole node";

  e->Signal(SIGTERM);
  EXPECT_EQ(e->Wait(), 0);
}

// Between two learned mixes the cluster changes with every bind and every
// pod that ends: the control loop re-tells the mix in force where that opens
// or closes an idle-node reserve, with no pod arriving.
TEST_F(ExtenderBinaryTest, APodThatEndsReopensTheIdleNodeAndTheMixInForceIsToldSoWithoutANewArrival) {
  // host-stranding expects a few pods taking both GPUs of a node: reserved
  // while no node is idle (a quarter of the free GPU is more than the 0
  // GPUs of idle nodes), not once n1 is idle again (a quarter of 2000 milli
  // is less than its 2000).
  Write("retell.yaml", R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: fgd
    args: {workload: ["1 cpu=1 gpu=1"]}
  - name: host-stranding
    args: {workload: ["20 cpu=1 gpu=1", "1 cpu=1 gpu=2"]}
workloadLearning: {windowPods: 100, warmupPods: 1, publishEveryPods: 1000, priorPercent: 50}
)");
  testing::FakeApiServer api(ApiOptions());
  ASSERT_TRUE(api.Start().ok());
  ASSERT_TRUE(api.AddNode(TwoL4Node("n1")).ok());
  const nlohmann::json pod = *api.AddPod(GpuPod("p", "0.5"));
  uint16_t port = 0;
  const std::unique_ptr<Extender> e = StartReady(api, "retell.yaml", port);
  ASSERT_NE(port, 0);
  testing::HttpClient client(port);

  const std::string args = nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n1"}}}.dump();
  ASSERT_EQ(client.Post("/filter", args).status, 200);
  ASSERT_EQ(client.Post("/bind", BindTo(pod, "n1")).body, R"({"Error":""})");
  nlohmann::json workload;
  ASSERT_TRUE(testing::WaitFor([&] {
    workload = nlohmann::json::parse(client.Get("/debug").body)["workload"];
    return workload["inForce"] == "learned" && workload["clusterIdleNodes"] == 0;
  })) << workload.dump();
  EXPECT_EQ(workload["publications"], 1);
  const int64_t retellings = workload["retellings"];

  ASSERT_TRUE(api.DeletePod("ml", "p").ok());
  EXPECT_TRUE(testing::WaitFor([&] {
    workload = nlohmann::json::parse(client.Get("/debug").body)["workload"];
    return workload["clusterIdleNodes"] == 1;
  })) << workload.dump();
  EXPECT_EQ(workload["retellings"], retellings + 1);
  EXPECT_EQ(workload["publications"], 1) << "nothing arrived: re-told, not learned";
  EXPECT_EQ(workload["clusterFreeGpuMilli"], 2000);

  e->Signal(SIGTERM);
  EXPECT_EQ(e->Wait(), 0);
}

// Issue #18: binds wait on the API server on threads of their own, not on the
// two HTTP threads. With sixteen Bindings held at the API server, all sixteen
// are in flight at once and /healthz still answers within a probe's timeout;
// SIGTERM then waits for them and they are answered before the exit.
TEST_F(ExtenderBinaryTest, BindsWaitingOnTheApiServerLeaveTheProbesFastAndSigtermWaitsForThem) {
  testing::FakeApiServer api;
  ASSERT_TRUE(api.Start().ok());
  nlohmann::json node = testing::FakeApiServer::MinimalNode("n1");
  node["metadata"]["labels"] = {{"nvidia.com/gpu.count", "4"}, {"nvidia.com/gpu.product", "NVIDIA-L4"}};
  ASSERT_TRUE(api.AddNode(node).ok());
  constexpr int kBinds = 16;
  std::vector<nlohmann::json> pods;
  for (int i = 0; i < kBinds; ++i) {
    nlohmann::json pod = testing::FakeApiServer::MinimalPod("ml", "p" + std::to_string(i));
    pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "0.25";
    pods.push_back(*api.AddPod(pod));
  }
  absl::StatusOr<std::string> kubeconfig = api.WriteKubeconfig();
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  Extender e({"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + Path("policy.yaml"), "--scheduler-name="});
  const uint16_t port = Port(e);
  ASSERT_NE(port, 0) << e.AllOutput();
  testing::HttpClient probe(port, std::chrono::seconds(2));
  ASSERT_TRUE(testing::WaitFor([&] { return probe.Get("/readyz").status == 200; })) << e.AllOutput();

  api.HoldNext({"POST", "/api/v1/namespaces/ml/pods/"}, kBinds);
  std::vector<std::string> answers(kBinds);
  std::vector<std::thread> binds;
  for (int i = 0; i < kBinds; ++i) {
    binds.emplace_back([&, i] {
      testing::HttpClient client(port);
      const nlohmann::json& pod = pods[static_cast<size_t>(i)];
      answers[static_cast<size_t>(i)] =
          client.Post("/bind", nlohmann::json{{"PodName", pod["metadata"]["name"]}, {"PodNamespace", "ml"},
                                              {"PodUID", pod["metadata"]["uid"]}, {"Node", "n1"}}.dump())
              .body;
    });
  }
  const bool all_in_flight = testing::WaitFor([&] { return api.HeldRequests() == kBinds; });
  EXPECT_TRUE(all_in_flight) << api.HeldRequests() << " of " << kBinds << " Bindings in flight at once";
  const testing::HttpAnswer health = probe.Get("/healthz");
  EXPECT_EQ(health.status, 200) << "/healthz did not answer within 2 s while binds were in flight";

  e.Signal(SIGTERM);
  EXPECT_EQ(e.Wait(std::chrono::milliseconds(500)), -1) << "exited with binds in flight";
  api.ReleaseHeld();
  for (std::thread& t : binds) t.join();
  for (const std::string& a : answers) EXPECT_EQ(a, R"({"Error":""})");
  EXPECT_EQ(e.Wait(), 0) << e.AllOutput();
}

// --- TLS on the extender listener, and the read-only port ----------------------------------

TEST_F(ExtenderBinaryTest, BeyondLoopbackWithoutTlsTheStartIsRefusedNamingTheFlags) {
  std::vector<std::string> args = Args();
  args.push_back("--address=0.0.0.0");
  Extender e(args);
  EXPECT_EQ(e.Wait(), 2);
  const std::string out = e.AllOutput();
  EXPECT_THAT(out, HasSubstr("--address=0.0.0.0 is beyond loopback"));
  EXPECT_THAT(out, HasSubstr("--tls-cert-file"));
  EXPECT_THAT(out, HasSubstr("--allow-insecure-listen"));
}

TEST_F(ExtenderBinaryTest, BeyondLoopbackPlainHttpNeedsAllowInsecureListenByName) {
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--address=0.0.0.0", "--allow-insecure-listen"});
  Extender e(args);
  const std::vector<std::string> m = e.WaitFor(std::regex(R"(serving on http://0\.0\.0\.0:(\d+))"));
  ASSERT_FALSE(m.empty()) << e.AllOutput();
  EXPECT_EQ(testing::HttpClient(static_cast<uint16_t>(std::stoi(m[1]))).Get("/healthz").status, 200);
}

TEST_F(ExtenderBinaryTest, TlsFlagsThatDoNotFitTogetherStopTheStart) {
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a certificate without its key", {"--tls-cert-file=/x.crt"}, "--tls-cert-file and --tls-key-file go together"},
      {"a client CA without TLS", {"--tls-client-ca-file=/ca.crt"}, "--tls-client-ca-file needs --tls-cert-file"},
      {"client auth without a client CA",
       {"--tls-cert-file=/x.crt", "--tls-key-file=/x.key", "--tls-client-auth=verbs"},
       "--tls-client-auth=verbs needs --tls-client-ca-file"},
      {"an unknown client-auth mode", {"--tls-client-auth=some"}, "--tls-client-auth must be none, verbs or all"},
      {"a read-only port on the extender port", {"--port=9000", "--read-only-port=9000"}, "must differ"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = Args();
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    Extender e(args);
    EXPECT_EQ(e.Wait(), 2);
    EXPECT_THAT(e.AllOutput(), HasSubstr(c.message));
  }
}

TEST_F(ExtenderBinaryTest, OverTlsFilterIsOpenAndBindNeedsAClientCertificate) {
  absl::StatusOr<testing::TlsTestCerts> certs = testing::TlsTestCerts::Generate();
  ASSERT_TRUE(certs.ok()) << certs.status();
  absl::StatusOr<testing::TlsTestCertFiles> files = testing::TlsTestCertFiles::Write(*certs);
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--address=0.0.0.0", "--tls-cert-file=" + files->server_cert(),
                           "--tls-key-file=" + files->server_key(), "--tls-client-ca-file=" + files->ca_cert(),
                           "--tls-client-auth=verbs"});
  Extender e(args);
  const std::vector<std::string> m = e.WaitFor(std::regex(R"(serving on https://0\.0\.0\.0:(\d+).*bind and preempt need)"));
  ASSERT_FALSE(m.empty()) << e.AllOutput();
  const auto port = static_cast<uint16_t>(std::stoi(m[1]));
  namespace http = boost::beast::http;
  const testing::HttpsClientConfig anonymous = testing::TrustingCa(certs->ca.cert_pem);
  const testing::HttpsClientConfig scheduler =
      testing::WithClientCert(anonymous, certs->client.cert_pem, certs->client.key_pem);
  const std::string bind = R"({"PodName":"p","PodNamespace":"ml","PodUID":"u","Node":"n1"})";
  std::string error;

  EXPECT_EQ(testing::HttpsExchange(port, anonymous, http::verb::post, "/filter", kFilter, &error).status, 200)
      << error;
  EXPECT_EQ(testing::HttpsExchange(port, anonymous, http::verb::get, "/readyz", "", &error).status, 200) << error;
  const testing::HttpAnswer refused = testing::HttpsExchange(port, anonymous, http::verb::post, "/bind", bind, &error);
  EXPECT_EQ(refused.status, 403) << error;
  EXPECT_THAT(refused.body, HasSubstr("client certificate"));
  EXPECT_EQ(testing::HttpsExchange(port, anonymous, http::verb::post, "/preempt", "{}", &error).status, 403) << error;
  // Authenticated, the bind reaches the binder: with a cluster file there is
  // no API server to bind through, and it says so.
  EXPECT_EQ(testing::HttpsExchange(port, scheduler, http::verb::post, "/bind", bind, &error).status, 501) << error;
  // Plain HTTP on the TLS port gets no answer, only a close.
  EXPECT_EQ(testing::HttpClient(port, std::chrono::seconds(5)).Get("/healthz").status, 0);
}

TEST_F(ExtenderBinaryTest, TheReadOnlyPortAnswersProbesAndMetricsAndRefusesTheVerbs) {
  // A free port for it (0 would mean "no read-only port").
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor free(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t read_only = free.local_endpoint().port();
  free.close();
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--read-only-port=" + std::to_string(read_only), "--read-only-address=127.0.0.1"});
  Extender e(args);
  ASSERT_FALSE(e.WaitFor(std::regex(R"(read-only port on http://127\.0\.0\.1:\d+)")).empty()) << e.AllOutput();
  testing::HttpClient client(read_only);
  EXPECT_EQ(client.Get("/healthz").status, 200);
  EXPECT_EQ(client.Get("/readyz").status, 200);
  const testing::HttpAnswer metrics = client.Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("tessera_model_nodes"));
  for (const char* verb : {"/filter", "/prioritize", "/bind", "/preempt"}) {
    SCOPED_TRACE(verb);
    const testing::HttpAnswer refused = client.Post(verb, kFilter);
    EXPECT_EQ(refused.status, 403);
    EXPECT_THAT(refused.body, HasSubstr("read-only port answers GET only"));
  }
}

}  // namespace
}  // namespace tessera
