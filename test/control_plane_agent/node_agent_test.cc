// tessera-node-agent on a real API server, with Tessera under the real
// kube-scheduler: a DGX-1 node that starts with nothing but an allocatable
// GPU count gets its inventory, topology and health from the agent (through
// the fake libnvidia-ml), and pods then land where only that knowledge
// puts them.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "k8s/gpu_assignment.h"
#include "test/testing/child_process.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using nlohmann::json;
using testing::Annotation;
using testing::ChildProcess;
using testing::ControlPlaneTest;
using testing::IsBound;

class NodeAgentTest : public ControlPlaneTest {
 protected:
  // The GPU indices the bound pod holds, from its assignment annotation.
  static std::vector<int32_t> HeldGpus(const json& pod) {
    absl::StatusOr<GpuAssignment> a = k8s::ParseGpuAssignment(Annotation(pod, "tessera.io/gpu-assignment"));
    EXPECT_TRUE(a.ok()) << a.status();
    std::vector<int32_t> held;
    if (a.ok()) {
      for (const GpuShare& s : a->gpus) held.push_back(s.index);
    }
    std::sort(held.begin(), held.end());
    return held;
  }

  // Asks Tessera directly whether an 8-GPU pod fits the node, until its
  // answer contains `part`: the moment Tessera's watch has what the agent wrote.
  bool TesseraSays(const std::string& node, const std::string& part) {
    const std::string probe =
        json{{"Pod", {{"metadata", {{"name", "probe"}, {"namespace", ns()}, {"uid", "probe-uid"},
                                    {"annotations", {{"tessera.io/gpu-count", "8"}}}}}}},
             {"Nodes", nullptr},
             {"NodeNames", {node}}}
            .dump();
    return testing::WaitFor(
        [&] { return plane().TesseraPost("filter", probe).body.find(part) != std::string::npos; }, absl::Seconds(20));
  }

  absl::StatusOr<json> GpuPod(const std::string& name, int gpus) {
    return plane().CreatePod({.namespace_name = ns(), .name = name,
                              .annotations = {{"tessera.io/gpu-count", std::to_string(gpus)}},
                              .node_selector = {{"tessera.io/test", ns()}}});
  }

  absl::StatusOr<json> BoundPod(const std::string& name) {
    absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(ns(), name + " to be bound", [&](const auto& all) {
      for (const json& p : all) {
        if (p["metadata"]["name"] == name && IsBound(p)) return true;
      }
      return false;
    });
    if (!pods.ok()) return pods.status();
    for (const json& p : *pods) {
      if (p["metadata"]["name"] == name) return p;
    }
    return absl::NotFoundError(name);
  }
};

TEST_F(NodeAgentTest, TheAgentsInventoryAndTopologyPlaceAFourGpuPodOnTheBestNvlinkSet) {
  testing::GpuNodeSpec spec;
  spec.name = "dgx1";
  spec.gpus = 8;
  spec.inventory_annotation = false;
  absl::StatusOr<json> created = Node(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string node = (*created)["metadata"]["name"];
  const std::string control = ::testing::TempDir() + "/cp-agent-control-" + std::to_string(getpid());
  std::ofstream(control, std::ios::trunc).flush();

  // GPU 0 has pages pending retirement from the start; 1h: only an XID makes
  // the agent write again.
  ChildProcess agent(TESSERA_NODE_AGENT_BINARY,
                     {"--node-name=" + node, "--kubeconfig=" + plane().run_dir() + "/admin.kubeconfig",
                      "--interval=1h", std::string("--nvml-library=") + FAKE_NVML_LIBRARY},
                     {{"FAKE_NVML_MACHINE", "dgx1-v100"}, {"FAKE_NVML_UNHEALTHY", "0"}, {"FAKE_NVML_CONTROL", control}});
  ASSERT_TRUE(agent.WaitForLog(std::regex("published 8 GPUs; unhealthy: GPU 0"), std::chrono::seconds(20)))
      << agent.Stderr();
  absl::StatusOr<json> annotated = plane().GetNode(node);
  ASSERT_TRUE(annotated.ok()) << annotated.status();
  EXPECT_TRUE((*annotated)["metadata"]["annotations"].contains("tessera.io/gpu-topology"));
  ASSERT_TRUE(TesseraSays(node, "1 unhealthy (GPU 0")) << agent.Stderr();

  // The best four healthy GPUs of a cube-mesh without GPU 0: the other quad,
  // 4-7, each pair on NVLink. Without the topology the pod would take 1-4;
  // without health, 0-3.
  ASSERT_TRUE(GpuPod("quad", 4).ok());
  absl::StatusOr<json> quad = BoundPod("quad");
  ASSERT_TRUE(quad.ok()) << quad.status() << plane().LogTails();
  EXPECT_EQ((*quad)["spec"]["nodeName"], node);
  EXPECT_THAT(HeldGpus(*quad), ElementsAre(4, 5, 6, 7));
  // The devices the pod is given are the agent's UUIDs.
  EXPECT_THAT(Annotation(*quad, "tessera.io/visible-devices"), HasSubstr("GPU-00000085-fake"));

  // GPU 2 breaks while the agent runs: the pair left with NVLink is 1-3
  // (without the news it would be 2-3 or 1-2, joined by two links).
  std::ofstream(control, std::ios::app) << "xid 2 79\n";
  ASSERT_TRUE(TesseraSays(node, "2 unhealthy (GPU 0, 2")) << agent.Stderr();
  ASSERT_TRUE(GpuPod("pair", 2).ok());
  absl::StatusOr<json> pair = BoundPod("pair");
  ASSERT_TRUE(pair.ok()) << pair.status() << plane().LogTails();
  EXPECT_THAT(HeldGpus(*pair), ElementsAre(1, 3));

  agent.Signal(SIGTERM);
  EXPECT_EQ(agent.Wait(std::chrono::seconds(5)), 0) << agent.Stderr();
  std::remove(control.c_str());
}

}  // namespace
}  // namespace tessera
