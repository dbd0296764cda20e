// The agent's annotations read back through Tessera's own parsers
// (k8s/node_inventory.h, k8s/gpu_topology.h): what the agent found is what
// the scheduler sees, GPU for GPU and link for link.
#include "agent/annotations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "k8s/node_inventory.h"
#include "test/agent/fake_machine.h"

namespace tessera::agent {
namespace {

using ::testing::HasSubstr;
using testing::FakeMachine;

// What Tessera makes of the node the agent annotated.
absl::StatusOr<NodeInventory> AsTesseraSeesIt(const NodeGpus& gpus) {
  const std::string inventory = InventoryAnnotation(gpus);
  const std::optional<std::string> topology = TopologyAnnotation(gpus);
  k8s::NodeInventoryFields fields{.inventory_annotation = inventory};
  if (topology) fields.topology_annotation = *topology;
  // Labels and allocatable a real node would also have: the annotation must win.
  fields.gfd_count = "8";
  fields.allocatable_gpus = "8";
  return k8s::ParseNodeInventory(fields);
}

NodeGpus Probe(const FakeMachine& machine) {
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(machine);
  if (nvml == nullptr) return {};
  absl::StatusOr<NodeGpus> gpus = ProbeGpus(*nvml, {}, nullptr);
  EXPECT_TRUE(gpus.ok()) << gpus.status();
  return gpus.ok() ? *std::move(gpus) : NodeGpus{};
}

TEST(Annotations, EveryFakeMachineReadsBackAsTheAgentFoundIt) {
  const std::vector<FakeMachine> machines = {
      {.machine = "dgx1-v100"},
      {.machine = "dgx-a100", .mig = "5"},
      {.machine = "pcie-8"},
      {.machine = "dgx-a100", .unhealthy = "0,6"},
      {.machine = "dgx1-v100", .unhealthy = "2"},
  };
  for (const FakeMachine& m : machines) {
    SCOPED_TRACE(absl::StrCat(m.machine, " unhealthy=", m.unhealthy, " mig=", m.mig));
    const NodeGpus gpus = Probe(m);
    ASSERT_EQ(gpus.gpus.size(), 8u);
    absl::StatusOr<NodeInventory> seen = AsTesseraSeesIt(gpus);
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(seen->source, InventorySource::kAnnotation);
    ASSERT_EQ(seen->gpus.size(), gpus.gpus.size());
    for (size_t i = 0; i < gpus.gpus.size(); ++i) {
      EXPECT_EQ(seen->gpus[i], gpus.gpus[i].device) << "GPU " << i;  // index, uuid, model, memory, numa, health
    }
    ASSERT_TRUE(seen->topology_error.ok()) << seen->topology_error;
    ASSERT_NE(seen->topology, nullptr);
    ASSERT_EQ(seen->topology->gpu_count(), 8);
    for (int32_t i = 0; i < 8; ++i) {
      for (int32_t j = 0; j < 8; ++j) {
        if (i == j) continue;
        EXPECT_EQ(seen->topology->link(i, j), gpus.Link(i, j)) << "GPU" << i << "-GPU" << j;
      }
    }
  }
}

TEST(Annotations, TheModelDecidesTheLinkBandwidthsAsForAHandWrittenTopology) {
  // No generation is written: the parser takes the model's (V100: NVLink 2.0,
  // PCIe 3.0; A100: NVLink 3.0, PCIe 4.0), as it does for an nvidia-smi paste.
  const absl::StatusOr<NodeInventory> v100 = AsTesseraSeesIt(Probe({.machine = "dgx1-v100"}));
  const absl::StatusOr<NodeInventory> a100 = AsTesseraSeesIt(Probe({.machine = "dgx-a100"}));
  ASSERT_TRUE(v100.ok() && a100.ok());
  ASSERT_NE(v100->topology, nullptr);
  ASSERT_NE(a100->topology, nullptr);
  EXPECT_EQ(v100->topology->bandwidths().sys.value(), 8000);
  EXPECT_EQ(a100->topology->bandwidths().sys.value(), 16000);
  EXPECT_EQ(a100->topology->bandwidth_mbps(0, 1), 12u * 25000);
}

TEST(Annotations, ABrokenGpuIsWrittenWithWhyAndMigModeIsShown) {
  NodeGpus gpus;
  ProbedGpu g;
  g.device = GpuDevice{.index = 0, .uuid = "GPU-a", .model = "NVIDIA-A100-SXM4-80GB", .memory = MemoryMiB(81920),
                       .numa = -1, .healthy = false};
  g.unhealthy_reason = "XID 79 (GPU has fallen off the bus)";
  g.mig_enabled = true;
  g.pci_bus_id = "00000000:07:00.0";
  gpus.gpus.push_back(g);
  gpus.links.resize(1);
  EXPECT_EQ(InventoryAnnotation(gpus),
            R"([{"index":0,"uuid":"GPU-a","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,)"
            R"("pciBusId":"00000000:07:00.0","migEnabled":true,"healthy":false,)"
            R"j("unhealthyReason":"XID 79 (GPU has fallen off the bus)"}])j");
  EXPECT_EQ(TopologyAnnotation(gpus), std::optional<std::string>(R"({"links":[["X"]]})"));
}

TEST(Annotations, ANodeWithoutGpusHasAnEmptyInventoryAndNoTopology) {
  const NodeGpus none = Probe({.machine = "none"});
  EXPECT_EQ(InventoryAnnotation(none), "[]");
  EXPECT_EQ(TopologyAnnotation(none), std::nullopt);
  k8s::NodeInventoryFields fields{.inventory_annotation = "[]", .allocatable_gpus = "0"};
  const absl::StatusOr<NodeInventory> seen = k8s::ParseNodeInventory(fields);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_TRUE(seen->gpus.empty());
}

TEST(Annotations, MoreGpusThanTheTopologyParserTakesGetNoTopology) {
  NodeGpus big;
  for (int32_t i = 0; i < 17; ++i) {
    ProbedGpu g;
    g.device = GpuDevice{.index = i, .uuid = absl::StrCat("GPU-", i), .model = "m", .memory = MemoryMiB(1)};
    big.gpus.push_back(g);
  }
  big.links.resize(17 * 17);
  EXPECT_EQ(TopologyAnnotation(big), std::nullopt);
  const absl::StatusOr<NodeInventory> seen = k8s::ParseNodeInventory({.inventory_annotation = InventoryAnnotation(big)});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->gpus.size(), 17u);
}

TEST(Annotations, StringsAreEscaped) {
  NodeGpus gpus;
  ProbedGpu g;
  g.device = GpuDevice{.index = 0, .uuid = "GPU-\"q\"", .model = "A\\B", .memory = MemoryMiB(1)};
  gpus.gpus.push_back(g);
  gpus.links.resize(1);
  const absl::StatusOr<NodeInventory> seen = k8s::ParseNodeInventory({.inventory_annotation = InventoryAnnotation(gpus)});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->gpus[0].uuid, "GPU-\"q\"");
  EXPECT_EQ(seen->gpus[0].model, "A\\B");
  EXPECT_THAT(InventoryAnnotation(gpus), HasSubstr(R"("uuid":"GPU-\"q\"")"));
}

}  // namespace
}  // namespace tessera::agent
