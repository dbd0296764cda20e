// The real tessera-node-agent with the fake libnvidia-ml: its exit codes and
// messages, --print, and the loop against the fake API server (a GPU that
// breaks mid-run is published at once; SIGTERM exits 0).
#include <signal.h>

#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/node_inventory.h"
#include "scheduler/model/gpu_topology.h"
#include "test/testing/child_process.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"

namespace tessera::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using nlohmann::json;
using tessera::testing::ChildProcess;
using tessera::testing::FakeApiServer;
using tessera::testing::WaitFor;

const std::string kAgent = TESSERA_NODE_AGENT_BINARY;
const std::string kFakeNvml = FAKE_NVML_LIBRARY;

// The child's fake-NVML settings: `set` over all of them cleared (other tests
// of this process set them with setenv, and a child inherits the environment).
std::map<std::string, std::string> Env(std::map<std::string, std::string> set) {
  for (const char* name : {"FAKE_NVML_MACHINE", "FAKE_NVML_UNHEALTHY", "FAKE_NVML_MIG", "FAKE_NVML_MIG_INSTANCES",
                           "FAKE_NVML_FAIL", "FAKE_NVML_CONTROL", "FAKE_NVML_INIT_ERROR", "TESSERA_NVML_LIBRARY"}) {
    set.emplace(name, "");
  }
  return set;
}

TEST(NodeAgentBinary, PrintShowsTheAnnotationsTesseraParses) {
  ChildProcess agent(kAgent, {"--print", "--nvml-library=" + kFakeNvml},
                     Env({{"FAKE_NVML_MACHINE", "dgx-a100"}, {"FAKE_NVML_UNHEALTHY", "4"}}));
  ASSERT_EQ(agent.Wait(), 0) << agent.Stderr();
  const json printed = json::parse(agent.Stdout());
  const std::string inventory = printed.at("tessera.io/gpu-inventory");
  const std::string topology = printed.at("tessera.io/gpu-topology");
  const absl::StatusOr<NodeInventory> seen =
      k8s::ParseNodeInventory({.inventory_annotation = inventory, .topology_annotation = topology});
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ(seen->gpus.size(), 8u);
  EXPECT_FALSE(seen->gpus[4].healthy);
  ASSERT_NE(seen->topology, nullptr);
  EXPECT_EQ(seen->topology->link(0, 7).nvlinks, 12);
}

TEST(NodeAgentBinary, PrintListsMigInstancesAndLogsWhyAGpusCannotBe) {
  ChildProcess agent(kAgent, {"--print", "--nvml-library=" + kFakeNvml},
                     Env({{"FAKE_NVML_MACHINE", "dgx-a100"},
                          {"FAKE_NVML_MIG", "2,3"},
                          {"FAKE_NVML_MIG_INSTANCES", "2:3g.40gb@4,3g.40gb@0;3:1g.10gb+me@0"}}));
  ASSERT_EQ(agent.Wait(), 0) << agent.Stderr();
  const json printed = json::parse(agent.Stdout());
  const absl::StatusOr<NodeInventory> seen =
      k8s::ParseNodeInventory({.inventory_annotation = printed.at("tessera.io/gpu-inventory").get<std::string>()});
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ(seen->gpus.size(), 8u);
  const GpuDevice& listed = seen->gpus[2];
  EXPECT_TRUE(listed.mig_mode);
  ASSERT_EQ(listed.mig.size(), 2u);
  EXPECT_EQ(listed.mig[0].profile, "3g.40gb");
  EXPECT_EQ(listed.mig[0].start, 0);
  EXPECT_EQ(listed.mig[1].start, 4);
  EXPECT_THAT(listed.mig[1].uuid, ::testing::StartsWith("MIG-"));
  EXPECT_TRUE(seen->gpus[3].mig.empty());
  EXPECT_THAT(agent.Stderr(), AllOf(HasSubstr(": MIG mode, instances not listed: "),
                                    HasSubstr("\"1g.10gb+me\", which Tessera's A100-80GB table lacks")));
}

TEST(NodeAgentBinary, TheLibraryPathMayComeFromTheEnvironment) {
  ChildProcess agent(kAgent, {"--print"}, Env({{"FAKE_NVML_MACHINE", "pcie-8"}, {"TESSERA_NVML_LIBRARY", kFakeNvml}}));
  ASSERT_EQ(agent.Wait(), 0) << agent.Stderr();
  EXPECT_THAT(agent.Stdout(), HasSubstr("NVIDIA-L40S"));
}

struct StartupCase {
  std::string name;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  int exit_code;
  std::string message;
};

TEST(NodeAgentBinary, StartupProblemsExitWithACodeAndAClearMessage) {
  const std::vector<StartupCase> cases = {
      {"a node without the driver's library", {"--node-name=n1", "--nvml-library=/nonexistent/libnvidia-ml.so.1"}, {}, 1,
       "cannot load NVML from \"/nonexistent/libnvidia-ml.so.1\""},
      {"a driver that is not loaded", {"--node-name=n1", "--nvml-library=" + kFakeNvml},
       {{"FAKE_NVML_MACHINE", "pcie-8"}, {"FAKE_NVML_INIT_ERROR", "9"}}, 1,
       "NVML: nvmlInit_v2: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED = 9)"},
      {"no node name", {"--nvml-library=" + kFakeNvml}, {{"NODE_NAME", ""}}, 2, "pass --node-name or set $NODE_NAME"},
      {"an interval out of range", {"--node-name=n1", "--interval=0s"}, {}, 2, "--interval=0: must be 1s..1h"},
      {"an XID that is not a number", {"--node-name=n1", "--ignored-xids=48,x"}, {}, 2,
       "--ignored-xids: \"x\" is not an XID number"},
      {"no API server to reach", {"--node-name=n1", "--nvml-library=" + kFakeNvml, "--kubeconfig=/nonexistent/kubeconfig"},
       {{"FAKE_NVML_MACHINE", "pcie-8"}}, 2, "API server: "},
  };
  for (const StartupCase& c : cases) {
    SCOPED_TRACE(c.name);
    ChildProcess agent(kAgent, c.args, Env(c.env));
    EXPECT_EQ(agent.Wait(), c.exit_code);
    EXPECT_THAT(agent.Stderr(), HasSubstr(c.message));
  }
}

class NodeAgentLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    ASSERT_TRUE(server_.AddNode(FakeApiServer::MinimalNode("gpu-1")).ok());
    absl::StatusOr<std::string> kubeconfig = server_.WriteKubeconfig();
    ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    kubeconfig_ = *kubeconfig;
    control_ = ::testing::TempDir() + "/agent-control-" + std::to_string(getpid());
    std::ofstream(control_, std::ios::trunc).flush();
  }
  void TearDown() override { std::remove(control_.c_str()); }

  std::unique_ptr<ChildProcess> StartAgent(const std::string& interval) {
    return std::make_unique<ChildProcess>(
        kAgent,
        std::vector<std::string>{"--node-name=gpu-1", "--kubeconfig=" + kubeconfig_, "--interval=" + interval,
                                 "--nvml-library=" + kFakeNvml},
        Env({{"FAKE_NVML_MACHINE", "dgx1-v100"}, {"FAKE_NVML_CONTROL", control_}}));
  }
  // The node's inventory as Tessera parses it; empty when there is none yet.
  std::vector<GpuDevice> Inventory() {
    const json annotations = server_.Node("gpu-1").value()["metadata"].value("annotations", json::object());
    if (!annotations.contains("tessera.io/gpu-inventory")) return {};
    const std::string text = annotations["tessera.io/gpu-inventory"];
    absl::StatusOr<NodeInventory> parsed = k8s::ParseNodeInventory({.inventory_annotation = text});
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? parsed->gpus : std::vector<GpuDevice>{};
  }

  FakeApiServer server_;
  std::string kubeconfig_;
  std::string control_;
};

TEST_F(NodeAgentLoopTest, AGpuThatBreaksMidRunIsPublishedAtOnceAndSigtermExitsZero) {
  std::unique_ptr<ChildProcess> agent = StartAgent("1h");  // only the XID can cause the second write
  ASSERT_TRUE(WaitFor([&] { return Inventory().size() == 8; })) << agent->Stderr();
  EXPECT_EQ(server_.Requests("PATCH").size(), 1u);
  for (const GpuDevice& g : Inventory()) EXPECT_TRUE(g.healthy) << g.index;

  std::ofstream(control_, std::ios::app) << "xid 3 48\n";
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<GpuDevice> gpus = Inventory();
    return gpus.size() == 8 && !gpus[3].healthy;
  })) << agent->Stderr();
  EXPECT_THAT(server_.Node("gpu-1").value()["metadata"]["annotations"]["tessera.io/gpu-inventory"].get<std::string>(),
              HasSubstr(R"j("unhealthyReason":"XID 48 (double-bit ECC error)")j"));
  EXPECT_EQ(server_.Requests("PATCH").size(), 2u);
  EXPECT_TRUE(agent->WaitForLog(std::regex("is unhealthy: XID 48")));

  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->Wait(std::chrono::seconds(5)), 0) << agent->Stderr();
}

TEST_F(NodeAgentLoopTest, AnAnnotationSomeoneRemovedIsPutBackAtTheNextPeriod) {
  std::unique_ptr<ChildProcess> agent = StartAgent("1s");
  ASSERT_TRUE(WaitFor([&] { return Inventory().size() == 8; })) << agent->Stderr();
  json node = server_.Node("gpu-1").value();
  node["metadata"]["annotations"].erase("tessera.io/gpu-inventory");
  ASSERT_TRUE(server_.UpdateNode(node).ok());
  ASSERT_TRUE(WaitFor([&] { return Inventory().size() == 8; })) << agent->Stderr();
  // Between the two writes the agent read the node every second and wrote nothing.
  EXPECT_EQ(server_.Requests("PATCH").size(), 2u);
  agent->Signal(SIGINT);
  EXPECT_EQ(agent->Wait(std::chrono::seconds(5)), 0);
}

TEST_F(NodeAgentLoopTest, ANodeThatDoesNotExistYetIsRetriedUntilItDoes) {
  ASSERT_TRUE(server_.DeleteNode("gpu-1").ok());
  std::unique_ptr<ChildProcess> agent = StartAgent("1s");
  ASSERT_TRUE(agent->WaitForLog(std::regex("node gpu-1: GET /api/v1/nodes/gpu-1: HTTP 404")));
  ASSERT_TRUE(server_.AddNode(FakeApiServer::MinimalNode("gpu-1")).ok());
  EXPECT_TRUE(WaitFor([&] { return Inventory().size() == 8; })) << agent->Stderr();
}

}  // namespace
}  // namespace tessera::agent
