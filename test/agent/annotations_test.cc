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

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
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
      {.machine = "dgx-a100", .mig = "1,2", .mig_instances = "1:3g.40gb@4,1g.20gb@0,1g.10gb@2;2:7g.80gb@0"},
      {.machine = "pcie-8"},
      {.machine = "dgx-a100", .unhealthy = "0,6"},
      {.machine = "dgx1-v100", .unhealthy = "2"},
  };
  for (const FakeMachine& m : machines) {
    SCOPED_TRACE(absl::StrCat(m.machine, " unhealthy=", m.unhealthy, " mig=", m.mig, " instances=", m.mig_instances));
    const NodeGpus gpus = Probe(m);
    ASSERT_EQ(gpus.gpus.size(), 8u);
    absl::StatusOr<NodeInventory> seen = AsTesseraSeesIt(gpus);
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(seen->source, InventorySource::kAnnotation);
    ASSERT_EQ(seen->gpus.size(), gpus.gpus.size());
    for (size_t i = 0; i < gpus.gpus.size(); ++i) {
      // index, uuid, model, memory, numa, health, MIG mode and instances
      EXPECT_EQ(seen->gpus[i], gpus.gpus[i].device) << "GPU " << i;
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

TEST(Annotations, AMigGpuListsItsInstancesWithProfileStartAndUuid) {
  NodeGpus gpus;
  ProbedGpu g;
  g.device = GpuDevice{.index = 0, .uuid = "GPU-a", .model = "NVIDIA-A100-SXM4-80GB", .memory = MemoryMiB(81920),
                       .mig_mode = true, .mig = {{"3g.40gb", 0, "MIG-x"}, {"1g.10gb", 6, ""}}};
  g.mig_enabled = g.mig_listed = true;
  gpus.gpus.push_back(g);
  gpus.links.resize(1);
  EXPECT_EQ(InventoryAnnotation(gpus),
            R"([{"index":0,"uuid":"GPU-a","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"migEnabled":true,)"
            R"("mig":[{"profile":"3g.40gb","start":0,"uuid":"MIG-x"},{"profile":"1g.10gb","start":6}]}])");
  gpus.gpus[0].device.mig.clear();
  EXPECT_THAT(InventoryAnnotation(gpus), HasSubstr(R"("migEnabled":true,"mig":[]})")) << "MIG mode, none made yet";
  gpus.gpus[0].mig_listed = false;
  EXPECT_THAT(InventoryAnnotation(gpus), AllOf(HasSubstr(R"("migEnabled":true})"), Not(HasSubstr(R"("mig":)"))));
}

TEST(Annotations, MigInstancesTheAgentReadReachTesseraAsMigModeWithThoseInstances) {
  const NodeGpus gpus =
      Probe({.machine = "dgx-a100", .mig = "0,4", .mig_instances = "0:3g.40gb@0,2g.20gb@4,1g.10gb@6;4:4g.40gb@0"});
  ASSERT_EQ(gpus.gpus.size(), 8u);
  const absl::StatusOr<NodeInventory> seen = AsTesseraSeesIt(gpus);
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ(seen->gpus.size(), 8u);
  for (size_t i : {0u, 4u}) {
    SCOPED_TRACE(absl::StrCat("GPU ", i));
    EXPECT_TRUE(seen->gpus[i].mig_mode);
    EXPECT_EQ(seen->gpus[i].mig, gpus.gpus[i].device.mig);
    EXPECT_FALSE(seen->gpus[i].mig_unlisted);
  }
  ASSERT_EQ(seen->gpus[0].mig.size(), 3u);
  EXPECT_EQ(seen->gpus[0].mig[1], (MigInstance{"2g.20gb", 4, gpus.gpus[0].device.mig[1].uuid}));
  EXPECT_THAT(seen->gpus[0].mig[1].uuid, ::testing::StartsWith("MIG-"));
  EXPECT_FALSE(seen->gpus[1].mig_mode);
}

TEST(Annotations, AMigGpuWhoseInstancesCouldNotBeReadReachesTesseraAsMigModeUnlisted) {
  const std::vector<FakeMachine> machines = {
      {.machine = "dgx-a100", .mig = "3", .mig_instances = "3:3g.40gb@0", .fail = "nvmlGpuInstanceGetInfo=999"},
      {.machine = "dgx-a100", .mig = "3", .mig_instances = "3:1g.10gb+me@0"},
  };
  for (const FakeMachine& m : machines) {
    SCOPED_TRACE(absl::StrCat(m.mig_instances, " ", m.fail));
    const NodeGpus gpus = Probe(m);
    ASSERT_EQ(gpus.gpus.size(), 8u);
    const std::string written = InventoryAnnotation(gpus);
    EXPECT_THAT(written, AllOf(HasSubstr(R"("migEnabled":true)"), Not(HasSubstr(R"("mig":)"))));
    const absl::StatusOr<NodeInventory> seen = AsTesseraSeesIt(gpus);
    ASSERT_TRUE(seen.ok()) << seen.status() << " (an unlisted GPU must not cost the node its inventory)";
    ASSERT_EQ(seen->gpus.size(), 8u);
    EXPECT_TRUE(seen->gpus[3].mig.empty());
    EXPECT_TRUE(seen->gpus[3].mig_mode);
    EXPECT_TRUE(seen->gpus[3].mig_unlisted);
  }
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
