// Host CPU and memory end to end: a fake API server's nodes and pods, listed
// and watched over HTTPS, become each node's host in the cluster model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/annotations.h"
#include "k8s/client/api_client.h"
#include "k8s/sync/cluster_watch.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"

namespace tessera {
namespace {

using testing::FakeApiServer;
using testing::WaitFor;

nlohmann::json RunningPod(const std::string& name, const std::string& node, const std::string& cpu,
                          const std::string& memory) {
  nlohmann::json pod = FakeApiServer::MinimalPod("ml", name);
  pod["spec"]["nodeName"] = node;
  pod["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", cpu}, {"memory", memory}};
  pod["status"]["phase"] = "Running";
  return pod;
}

class HostResourcesSync : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start().ok());
    k8s::ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = std::to_string(api_.port());
    config.ca_pem = api_.certs().ca.cert_pem;
    client_ = *k8s::ApiClient::Create(config);
  }
  void Watch() {
    k8s::ClusterWatchOptions options;
    options.min_backoff = absl::Milliseconds(20);
    watch_ = std::make_unique<k8s::ClusterWatch>(*client_, model_, pods_, nullptr, options);
    watch_->Start();
    ASSERT_TRUE(watch_->WaitForSync(absl::Seconds(10)));
  }
  void TearDown() override {
    if (watch_ != nullptr) watch_->Stop();
  }
  // The node's used CPU in milli-CPU and memory in MiB; {-1, -1} while unknown.
  std::pair<int64_t, int64_t> Used(const std::string& node) {
    const auto s = model_.Current();
    const auto i = s->FindNode(node);
    if (!i.has_value() || s->View(*i).host == nullptr) return {-1, -1};
    const HostResources& h = *s->View(*i).host;
    return {h.cpu_used.value(), h.memory_used.value()};
  }

  FakeApiServer api_;
  std::unique_ptr<k8s::ApiClient> client_;
  ClusterModel model_;
  PodDirectory pods_;
  std::unique_ptr<k8s::ClusterWatch> watch_;
};

TEST_F(HostResourcesSync, ListedAndWatchedPodsSumOnTheirNodesAllocatable) {
  ASSERT_TRUE(api_.AddNode(FakeApiServer::MinimalNode("n")).ok());  // allocatable: 8 CPU, 32Gi
  ASSERT_TRUE(api_.AddPod(RunningPod("web", "n", "1500m", "2Gi")).ok());
  nlohmann::json gpu = RunningPod("train", "n", "2", "4Gi");
  gpu["metadata"]["annotations"][std::string(k8s::kGpuAssignment)] = R"({"node":"n","gpus":[]})";
  gpu["metadata"]["annotations"][std::string(k8s::kGpuCount)] = "1";
  ASSERT_TRUE(api_.AddPod(gpu).ok());
  nlohmann::json done = RunningPod("done", "n", "4", "1Gi");
  done["status"]["phase"] = "Succeeded";
  ASSERT_TRUE(api_.AddPod(done).ok());
  Watch();

  const auto s = model_.Current();
  const HostResources& host = *s->View(*s->FindNode("n")).host;
  EXPECT_EQ(host.cpu_capacity, MilliCpu(8000));
  EXPECT_EQ(host.memory_capacity, MemoryMiB(32768));
  EXPECT_EQ(Used("n"), std::make_pair(int64_t{3500}, int64_t{6144})) << "the finished pod counts nothing";

  ASSERT_TRUE(api_.AddPod(RunningPod("late", "n", "500m", "512Mi")).ok());
  EXPECT_TRUE(WaitFor([&] { return Used("n") == std::make_pair(int64_t{4000}, int64_t{6656}); }));
  ASSERT_TRUE(api_.DeletePod("ml", "web").ok());
  EXPECT_TRUE(WaitFor([&] { return Used("n") == std::make_pair(int64_t{2500}, int64_t{4608}); }));
}

}  // namespace
}  // namespace tessera
