// Nodes' allocatable and every bound pod's request reach the model as each
// node's host CPU and memory, through the watch's sinks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "k8s/sync/node_sink.h"
#include "k8s/sync/pod_sink.h"

namespace tessera::k8s {
namespace {

std::string Node(const std::string& name, const std::string& cpu = "8", const std::string& memory = "32Gi") {
  return absl::StrCat(R"({"metadata":{"name":")", name, R"("},"status":{"allocatable":{"cpu":")", cpu,
                      R"(","memory":")", memory, R"(","pods":"110"}}})");
}

// A pod asking `cpu` and `memory`, bound to `node` ("" = pending), in `phase`;
// `gpu_milli` > 0 gives it a GPU request and, when `assigned`, GPU 0 there.
std::string Pod(const std::string& uid, const std::string& node, const std::string& cpu, const std::string& memory,
                const std::string& phase = "Running", int gpu_milli = 0, bool assigned = true) {
  std::string annotations = "{}";
  if (gpu_milli > 0) {
    annotations = absl::StrCat(R"({"tessera.io/gpu-fraction":")", gpu_milli / 10, R"(%")",
                               node.empty() || !assigned ? "" : absl::StrCat(R"(,"tessera.io/gpu-assignment":"{\"node\":\")", node,
                                                                R"(\",\"gpus\":[{\"index\":0,\"milli\":)", gpu_milli, "}]}\""),
                               "}");
  }
  return absl::StrCat(R"({"metadata":{"name":")", uid, R"(","namespace":"ml","uid":")", uid,
                      R"(","annotations":)", annotations, R"(},"spec":{)",
                      node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)"),
                      R"("containers":[{"resources":{"requests":{"cpu":")", cpu, R"(","memory":")", memory,
                      R"("}}}]},"status":{"phase":")", phase, R"("}})");
}

class HostSyncTest : public ::testing::Test {
 protected:
  void ApplyNode(const std::string& json) {
    ASSERT_TRUE(nodes_.Upsert(Parse(json)).ok());
    nodes_.Flush();
  }
  void ApplyPod(const std::string& json) {
    ASSERT_TRUE(pods_.Upsert(Parse(json)).ok());
    pods_.Flush();
  }
  void DeletePod(const std::string& json) {
    ASSERT_TRUE(pods_.Delete(Parse(json)).ok());
    pods_.Flush();
  }
  simdjson::dom::element Parse(const std::string& json) {
    simdjson::dom::element e;
    EXPECT_EQ(parser_.parse(json).get(e), simdjson::SUCCESS) << json;
    return e;
  }
  // The node's host as plugins see it; nullopt when unknown.
  std::optional<HostResources> Host(const std::string& node) {
    const auto snapshot = model_.Current();
    const std::optional<NodeIndex> i = snapshot->FindNode(node);
    if (!i.has_value() || snapshot->View(*i).host == nullptr) return std::nullopt;
    return *snapshot->View(*i).host;
  }
  static HostResources Used(int64_t cpu_capacity, int64_t cpu, int64_t memory_capacity, int64_t memory) {
    return HostResources{.cpu_capacity = MilliCpu(cpu_capacity), .cpu_used = MilliCpu(cpu),
                         .memory_capacity = MemoryMiB(memory_capacity), .memory_used = MemoryMiB(memory)};
  }

  simdjson::dom::parser parser_;
  ClusterModel model_;
  PodDirectory directory_;
  NodeSink nodes_{model_, nullptr};
  PodSink pods_{model_, directory_, nullptr};
};

TEST_F(HostSyncTest, ANodesAllocatableIsItsHostAndANodeWithoutOneHasNone) {
  ApplyNode(Node("n", "7910m", "31Gi"));
  EXPECT_EQ(Host("n"), Used(7910, 0, 31744, 0));
  ApplyNode(R"({"metadata":{"name":"bare"},"status":{}})");
  EXPECT_EQ(Host("bare"), std::nullopt);
  ApplyNode(Node("bad", "lots"));
  EXPECT_EQ(Host("bad"), std::nullopt) << "unreadable allocatable: unknown, and the node stays";
  EXPECT_TRUE(model_.Current()->FindNode("bad").has_value());
}

TEST_F(HostSyncTest, EveryBoundPodCountsOnItsNodeGpuOrNotUntilItFinishesOrGoes) {
  ApplyNode(Node("n"));
  ApplyPod(Pod("cpu-only", "n", "1500m", "1Gi"));
  ApplyPod(Pod("gpu", "n", "2", "4Gi", "Running", 250));
  ApplyPod(Pod("pending", "", "4", "8Gi"));
  EXPECT_EQ(Host("n"), Used(8000, 3500, 32768, 5120)) << "the pending pod holds nothing yet";

  ApplyPod(Pod("cpu-only", "n", "1500m", "1Gi", "Succeeded"));
  EXPECT_EQ(Host("n"), Used(8000, 2000, 32768, 4096)) << "a finished pod frees its request";
  DeletePod(Pod("gpu", "n", "2", "4Gi", "Running", 250));
  EXPECT_EQ(Host("n"), Used(8000, 0, 32768, 0));
  ApplyPod(Pod("pending", "n", "4", "8Gi"));
  EXPECT_EQ(Host("n"), Used(8000, 4000, 32768, 8192)) << "bound now";
}

TEST_F(HostSyncTest, APodsUpdatesCountItOnceAndOnItsCurrentNode) {
  ApplyNode(Node("a"));
  ApplyNode(Node("b"));
  const std::string pod = Pod("p", "a", "1", "1Gi");
  for (int i = 0; i < 3; ++i) ApplyPod(pod);
  EXPECT_EQ(Host("a"), Used(8000, 1000, 32768, 1024));
  ApplyPod(Pod("p", "b", "1", "1Gi"));  // not in Kubernetes, but the model must not double count
  EXPECT_EQ(Host("a"), Used(8000, 0, 32768, 0));
  EXPECT_EQ(Host("b"), Used(8000, 1000, 32768, 1024));
}

TEST_F(HostSyncTest, ABindInFlightCountsItsRequestUntilTheWatchShowsThePodBound) {
  ApplyNode(Node("n"));
  PodHolding bind;
  bind.uid = "p";
  bind.pod_key = "ml/p";
  bind.assignment.node = "n";
  bind.host = HostRequest{.cpu = MilliCpu(2000), .memory = MemoryMiB(1024)};
  ASSERT_TRUE(model_.Reserve(bind, absl::InfiniteFuture()).ok());
  model_.Publish();
  EXPECT_EQ(Host("n"), Used(8000, 2000, 32768, 1024));
  ApplyPod(Pod("p", "", "2", "1Gi", "Pending"));
  EXPECT_EQ(Host("n"), Used(8000, 2000, 32768, 1024)) << "still pending: the reservation stays";
  ApplyPod(Pod("p", "n", "2", "1Gi"));
  EXPECT_EQ(Host("n"), Used(8000, 2000, 32768, 1024)) << "counted once, now from the watch";
  EXPECT_EQ(model_.reservation_count(), 0u) << "a CPU-only bind is confirmed by the pod being bound";
}

TEST_F(HostSyncTest, AGpuBindConfirmedWithoutItsAssignmentKeepsItsGpusButCountsItsRequestOnce) {
  // One GPU, as the device plugin's allocatable count says (the model
  // refuses a reservation on a GPU the node does not list).
  ApplyNode(R"({"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110",)"
            R"("nvidia.com/gpu":"1"}}})");
  PodHolding bind;
  bind.uid = "p";
  bind.pod_key = "ml/p";
  bind.assignment.node = "n";
  GpuShare share;
  share.guaranteed = share.limit = MilliGpu(500);
  bind.assignment.gpus.push_back(share);
  bind.host = HostRequest{.cpu = MilliCpu(1000), .memory = MemoryMiB(0)};
  ASSERT_TRUE(model_.Reserve(bind, absl::InfiniteFuture()).ok());
  // Bound, with a GPU request but (not yet) its assignment annotation.
  ApplyPod(Pod("p", "n", "1", "0", "Running", 500, /*assigned=*/false));
  EXPECT_EQ(Host("n"), Used(8000, 1000, 32768, 0));
  EXPECT_EQ(model_.reservation_count(), 1u) << "its GPUs stay reserved";
  const auto snapshot = model_.Current();
  EXPECT_EQ(snapshot->View(*snapshot->FindNode("n")).UsageOf(0).guaranteed, MilliGpu(500));
}

TEST_F(HostSyncTest, ARestartRebuildsTheSameTotalsFromTheLists) {
  const std::string node = Node("n");
  const std::vector<std::string> pods = {Pod("a", "n", "1", "1Gi"), Pod("b", "n", "2", "2Gi", "Running", 300),
                                         Pod("c", "n", "4", "4Gi", "Failed"), Pod("d", "", "8", "8Gi", "Pending")};
  auto sync = [&](NodeSink& node_sink, PodSink& pod_sink, const std::vector<std::string>& listed) {
    node_sink.BeginList();
    ASSERT_TRUE(node_sink.Upsert(Parse(node)).ok());
    node_sink.EndList();
    node_sink.Flush();
    pod_sink.BeginList();
    for (const std::string& p : listed) ASSERT_TRUE(pod_sink.Upsert(Parse(p)).ok());
    pod_sink.EndList();
    pod_sink.Flush();
  };
  sync(nodes_, pods_, pods);
  const std::optional<HostResources> before = Host("n");
  EXPECT_EQ(before, Used(8000, 3000, 32768, 3072));

  ClusterModel restarted;
  PodDirectory directory;
  NodeSink node_sink(restarted, nullptr);
  PodSink pod_sink(restarted, directory, nullptr);
  sync(node_sink, pod_sink, pods);
  const auto snapshot = restarted.Current();
  ASSERT_NE(snapshot->View(*snapshot->FindNode("n")).host, nullptr);
  EXPECT_EQ(*snapshot->View(*snapshot->FindNode("n")).host, *before);

  // Relisted without "a" (deleted while no watch ran): its request is freed.
  sync(nodes_, pods_, {pods[1], pods[2], pods[3]});
  EXPECT_EQ(Host("n"), Used(8000, 2000, 32768, 2048));
}

}  // namespace
}  // namespace tessera::k8s
