// The probe against the fake NVML's machines: what it finds must be what
// `nvidia-smi topo -m` prints for them (test/testing/topologies.h), GPU by
// GPU and pair by pair, and broken GPUs must be found broken.
#include "agent/gpu_probe.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "test/agent/fake_machine.h"
#include "test/testing/topologies.h"

namespace tessera::agent {
namespace {

using ::testing::HasSubstr;
using testing::FakeMachine;
using testing::LoadFake;

struct MachineCase {
  std::string name;
  std::string machine;
  std::string_view nvidia_smi;  // the matrix nvidia-smi prints for it
  std::string model;
  int64_t memory_mib;
  std::vector<int32_t> numa;
};

NodeGpus Probe(NvmlLibrary& nvml, const std::map<std::string, std::string>& broken = {},
               const NodeGpus* previous = nullptr) {
  absl::StatusOr<NodeGpus> gpus = ProbeGpus(nvml, broken, previous);
  EXPECT_TRUE(gpus.ok()) << gpus.status();
  return gpus.ok() ? *std::move(gpus) : NodeGpus{};
}

TEST(ProbeGpus, FindsEachMachinesGpusAndTheLinksNvidiaSmiPrints) {
  const std::vector<MachineCase> cases = {
      {"a DGX-1's hybrid cube-mesh: NV1 and NV2 between GPUs, SYS across the quads", "dgx1-v100",
       ::tessera::testing::kDgx1V100, "Tesla-V100-SXM2-16GB", 16160, {0, 0, 0, 0, 1, 1, 1, 1}},
      {"a DGX A100: twelve links per GPU to the NVSwitches make NV12 every pair", "dgx-a100",
       ::tessera::testing::kDgxA100, "NVIDIA-A100-SXM4-80GB", 81920, {3, 3, 1, 1, 7, 7, 5, 5}},
      {"a PCIe box: no NVLink, PIX pairs, NODE within a socket, SYS across", "pcie-8",
       ::tessera::testing::kPcie8TwoSockets, "NVIDIA-L40S", 46068, {0, 0, 0, 0, 1, 1, 1, 1}},
  };
  for (const MachineCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = c.machine});
    ASSERT_NE(nvml, nullptr);
    const NodeGpus node = Probe(*nvml);
    EXPECT_THAT(node.notes, ::testing::IsEmpty());
    ASSERT_EQ(node.gpus.size(), 8u);
    std::set<std::string> uuids;
    for (int32_t i = 0; i < 8; ++i) {
      const GpuDevice& d = node.gpus[static_cast<size_t>(i)].device;
      EXPECT_EQ(d.index, i);
      EXPECT_THAT(d.uuid, ::testing::StartsWith("GPU-"));
      uuids.insert(d.uuid);
      EXPECT_EQ(d.model, c.model);
      EXPECT_EQ(d.memory.value(), c.memory_mib);
      EXPECT_EQ(d.numa, c.numa[static_cast<size_t>(i)]);
      EXPECT_TRUE(d.healthy);
      EXPECT_FALSE(node.gpus[static_cast<size_t>(i)].mig_enabled);
    }
    EXPECT_EQ(uuids.size(), 8u) << "UUIDs must differ";
    absl::StatusOr<std::shared_ptr<const GpuTopology>> want = k8s::ParseGpuTopology(c.nvidia_smi, LinkBandwidths{});
    ASSERT_TRUE(want.ok()) << want.status();
    for (int32_t i = 0; i < 8; ++i) {
      for (int32_t j = 0; j < 8; ++j) {
        if (i == j) continue;
        EXPECT_EQ(GpuLinkName(node.Link(static_cast<size_t>(i), static_cast<size_t>(j))),
                  GpuLinkName((*want)->link(i, j)))
            << "GPU" << i << "-GPU" << j;
      }
    }
  }
}

TEST(ProbeGpus, ANodeWhoseDriverSeesNoGpuHasNone) {
  std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = "none"});
  ASSERT_NE(nvml, nullptr);
  const NodeGpus node = Probe(*nvml);
  EXPECT_TRUE(node.gpus.empty());
  EXPECT_TRUE(node.links.empty());
}

TEST(ProbeGpus, ReadsMigMode) {
  std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = "dgx-a100", .mig = "7"});
  ASSERT_NE(nvml, nullptr);
  const NodeGpus node = Probe(*nvml);
  ASSERT_EQ(node.gpus.size(), 8u);
  EXPECT_FALSE(node.gpus[6].mig_enabled);
  EXPECT_TRUE(node.gpus[7].mig_enabled);
}

struct HealthCase {
  std::string name;
  std::string machine;
  std::string reason_part;
};

TEST(ProbeGpus, AGpuWithUnrecoverableMemoryIsUnhealthyAndSaysWhy) {
  const std::vector<HealthCase> cases = {
      {"an A100 whose row remapping failed", "dgx-a100", "row remapping failed (512 rows remapped"},
      {"a V100 with pages pending retirement", "dgx1-v100", "pending retirement: the GPU needs a reset"},
  };
  for (const HealthCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = c.machine, .unhealthy = "3"});
    ASSERT_NE(nvml, nullptr);
    const NodeGpus node = Probe(*nvml);
    ASSERT_EQ(node.gpus.size(), 8u);
    for (const ProbedGpu& g : node.gpus) {
      SCOPED_TRACE(absl::StrCat("GPU ", g.device.index));
      EXPECT_EQ(g.device.healthy, g.device.index != 3);
      EXPECT_THAT(g.unhealthy_reason, HasSubstr(g.device.index == 3 ? c.reason_part : ""));
      EXPECT_EQ(g.unhealthy_reason.empty(), g.device.index != 3);
    }
  }
}

TEST(ProbeGpus, AGpuTheAgentSawBreakStaysUnhealthyWithTheXid) {
  std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = "dgx1-v100"});
  ASSERT_NE(nvml, nullptr);
  const NodeGpus before = Probe(*nvml);
  const std::string uuid = before.gpus[5].device.uuid;
  const NodeGpus after = Probe(*nvml, {{uuid, "XID 48 (double-bit ECC error)"}}, &before);
  EXPECT_FALSE(after.gpus[5].device.healthy);
  EXPECT_EQ(after.gpus[5].unhealthy_reason, "XID 48 (double-bit ECC error)");
  EXPECT_TRUE(after.gpus[4].device.healthy);
}

TEST(ProbeGpus, AGpuThatFellOffTheBusKeepsWhatWasKnownAndTurnsUnhealthy) {
  const std::string control = ::testing::TempDir() + "/probe-lost-control";
  std::ofstream(control, std::ios::trunc).flush();
  std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = "dgx1-v100", .control = control});
  ASSERT_NE(nvml, nullptr);
  const NodeGpus before = Probe(*nvml);
  std::ofstream(control, std::ios::app) << "lost 6\n";
  const NodeGpus after = Probe(*nvml, {}, &before);
  ASSERT_EQ(after.gpus.size(), 8u);
  EXPECT_FALSE(after.gpus[6].device.healthy);
  EXPECT_THAT(after.gpus[6].unhealthy_reason, HasSubstr("fallen off the bus"));
  EXPECT_EQ(after.gpus[6].device.uuid, before.gpus[6].device.uuid);
  EXPECT_EQ(after.gpus[6].device.memory, before.gpus[6].device.memory);
  // Its links are no longer vouched for; the others' stay.
  EXPECT_EQ(GpuLinkName(after.Link(6, 2)), "SYS");
  EXPECT_EQ(GpuLinkName(after.Link(4, 7)), "NV2");
}

TEST(ProbeGpus, AGpuLostBeforeItWasEverSeenIsAnErrorNamingIt) {
  const std::string control = ::testing::TempDir() + "/probe-lost-first-control";
  std::ofstream(control, std::ios::trunc) << "lost 2\n";
  std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{.machine = "pcie-8", .control = control});
  ASSERT_NE(nvml, nullptr);
  const absl::StatusOr<NodeGpus> gpus = ProbeGpus(*nvml, {}, nullptr);
  ASSERT_FALSE(gpus.ok());
  EXPECT_THAT(gpus.status().message(), HasSubstr("GPU 2 cannot be read and was never seen before"));
}

TEST(ModelName, SpellsTheNvmlNameAsGpuFeatureDiscoveryDoes) {
  EXPECT_EQ(ModelName("NVIDIA A100-SXM4-80GB"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(ModelName("Tesla V100-SXM2-16GB"), "Tesla-V100-SXM2-16GB");
  EXPECT_EQ(ModelName("NVIDIA H100 80GB HBM3"), "NVIDIA-H100-80GB-HBM3");
}

}  // namespace
}  // namespace tessera::agent
