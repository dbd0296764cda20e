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

using ::testing::AllOf;
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

// The instances NVML describes, as the fake was told them (uuids aside).
std::vector<std::pair<std::string, int32_t>> ProfilesAndStarts(const std::vector<MigInstance>& instances) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const MigInstance& m : instances) out.emplace_back(m.profile, m.start);
  return out;
}

struct ListedCase {
  std::string name;
  std::string fail;  // FAKE_NVML_FAIL
};

TEST(ProbeGpus, ListsEachMigGpusInstancesWithProfileStartAndMigUuid) {
  // The names come from NVML, or from the sizes when the driver cannot name them.
  const std::vector<ListedCase> cases = {
      {"a driver that names profiles", ""},
      {"a driver without nvmlDeviceGetGpuInstanceProfileInfoV", "nvmlDeviceGetGpuInstanceProfileInfoV=13"},
  };
  for (const ListedCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<NvmlLibrary> nvml = LoadFake(FakeMachine{
        .machine = "dgx-a100", .mig = "5,6,7", .mig_instances = "6:1g.10gb@6,3g.40gb@0,2g.20gb@4;7:7g.80gb@0",
        .fail = c.fail});
    ASSERT_NE(nvml, nullptr);
    const NodeGpus node = Probe(*nvml);
    EXPECT_THAT(node.notes, ::testing::IsEmpty());
    ASSERT_EQ(node.gpus.size(), 8u);
    using Listed = std::vector<std::pair<std::string, int32_t>>;
    EXPECT_EQ(ProfilesAndStarts(node.gpus[6].device.mig), (Listed{{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}));
    EXPECT_EQ(ProfilesAndStarts(node.gpus[7].device.mig), (Listed{{"7g.80gb", 0}}));
    std::set<std::string> uuids;
    for (const MigInstance& m : node.gpus[6].device.mig) {
      EXPECT_THAT(m.uuid, ::testing::StartsWith("MIG-"));
      uuids.insert(m.uuid);
    }
    EXPECT_EQ(uuids.size(), 3u) << "one MIG device each";
    for (size_t i : {5u, 6u, 7u}) {
      EXPECT_TRUE(node.gpus[i].mig_enabled && node.gpus[i].device.mig_mode) << i;
      EXPECT_TRUE(node.gpus[i].mig_listed) << i;
    }
    EXPECT_TRUE(node.gpus[5].device.mig.empty()) << "MIG mode, no instance made yet";
    EXPECT_FALSE(node.gpus[4].mig_listed || node.gpus[4].device.mig_mode);
  }
}

struct UnlistedCase {
  std::string name;
  std::string instances;  // GPU 3's
  std::string fail;       // FAKE_NVML_FAIL
  std::string why;        // in the note
};

TEST(ProbeGpus, AMigGpuWhoseInstancesCannotBeListedKeepsMigModeAndANoteSaysWhy) {
  const std::vector<UnlistedCase> cases = {
      {"a driver without the MIG device calls", "3g.40gb@0", "nvmlDeviceGetMaxMigDeviceCount=13",
       "nvmlDeviceGetMaxMigDeviceCount: Function Not Found (NVML_ERROR_FUNCTION_NOT_FOUND = 13)"},
      {"a MIG device that will not name its GPU instance", "3g.40gb@0", "nvmlDeviceGetGpuInstanceId=999",
       "nvmlDeviceGetGpuInstanceId: Unknown Error"},
      {"a GPU instance that cannot be read", "3g.40gb@0", "nvmlGpuInstanceGetInfo=999", "nvmlGpuInstanceGetInfo"},
      {"a driver without the profile call", "3g.40gb@0", "nvmlDeviceGetGpuInstanceProfileInfo=13",
       "nvmlDeviceGetGpuInstanceProfileInfo(0): Function Not Found"},
      {"a profile Tessera's table lacks", "1g.10gb+me@0,3g.40gb@4", "",
       "has profile \"1g.10gb+me\", which Tessera's A100-80GB table lacks"},
      {"a GPU instance split into compute instances", "3g.40gb@4*2", "",
       "is split into 2 compute instances; Tessera hands out whole GPU instances"},
      {"instances that overlap", "3g.40gb@0,2g.20gb@2", "", "a 2g.20gb instance at slice 2 would overlap"},
      {"a start the table does not allow", "3g.40gb@2", "", "a 3g.40gb instance cannot start at slice 2"},
  };
  for (const UnlistedCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<NvmlLibrary> nvml = LoadFake(
        FakeMachine{.machine = "dgx-a100", .mig = "3", .mig_instances = "3:" + c.instances, .fail = c.fail});
    ASSERT_NE(nvml, nullptr);
    const NodeGpus node = Probe(*nvml);
    ASSERT_EQ(node.gpus.size(), 8u);
    const ProbedGpu& g = node.gpus[3];
    EXPECT_TRUE(g.mig_enabled && g.device.mig_mode);
    EXPECT_FALSE(g.mig_listed);
    EXPECT_TRUE(g.device.mig.empty());
    ASSERT_EQ(node.notes.size(), 1u);
    EXPECT_THAT(node.notes[0], AllOf(HasSubstr(g.device.uuid + ": MIG mode, instances not listed: "), HasSubstr(c.why)));
  }
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
