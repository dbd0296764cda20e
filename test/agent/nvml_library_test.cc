// Loading NVML at run time: what a node without the driver, a library that
// is not NVML, or a driver that will not start look like to an operator.
#include "agent/nvml/nvml_library.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/agent/fake_machine.h"

namespace tessera::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::FakeMachine;

TEST(NvmlLibrary, AMissingLibraryIsAClearErrorThatSaysHowToProvideIt) {
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nvml.status().message(),
              AllOf(HasSubstr("cannot load NVML from \"/nonexistent/libnvidia-ml.so.1\""),
                    HasSubstr("No such file"), HasSubstr("NVIDIA container toolkit"), HasSubstr("--nvml-library")));
}

TEST(NvmlLibrary, ALibraryThatIsNotNvmlIsRefusedNamingWhatItLacks) {
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load("libc.so.6");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nvml.status().message(), AllOf(HasSubstr("lacks nvmlInit_v2"), HasSubstr("nvmlDeviceGetPciInfo_v3")));
}

TEST(NvmlLibrary, ADriverThatIsNotLoadedFailsInitWithNvmlsOwnWords) {
  testing::Describe(FakeMachine{.machine = "dgx1-v100", .init_error = "9"});
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  const absl::Status st = (*nvml)->Init();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "nvmlInit_v2: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED = 9)");
}

TEST(NvmlLibrary, AnswersAreReadThroughTheDeclaredLayouts) {
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(FakeMachine{.machine = "dgx-a100"});
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(*nvml->DriverVersion(), "535.183.01-fake");
  ASSERT_EQ(*nvml->DeviceCount(), 8u);
  absl::StatusOr<nvmlDevice_t> gpu2 = nvml->DeviceByIndex(2);
  ASSERT_TRUE(gpu2.ok()) << gpu2.status();
  absl::StatusOr<nvmlPciInfo_t> pci = nvml->PciInfo(*gpu2);
  ASSERT_TRUE(pci.ok()) << pci.status();
  EXPECT_STREQ(pci->busId, "00000000:47:00.0");
  EXPECT_STREQ(pci->busIdLegacy, "0000:47:00.0");
  EXPECT_EQ(pci->bus, 0x47u);
  EXPECT_EQ(pci->pciDeviceId & 0xffff, 0x10deu);  // NVIDIA's vendor id, in the low half
  EXPECT_EQ(*nvml->MemoryTotalBytes(*gpu2), uint64_t{81920} << 20);
  EXPECT_EQ(*nvml->NumaNode(*gpu2), std::optional<int32_t>(1));
  EXPECT_EQ(*nvml->NvLinkRemoteType(*gpu2, 0), NVML_NVLINK_DEVICE_TYPE_SWITCH);
}

TEST(NvmlLibrary, AFeatureTheGpuLacksIsUnimplementedAndALostGpuIsDataLoss) {
  const std::string control = ::testing::TempDir() + "/nvml-lost-control";
  std::ofstream(control) << "lost 1\n";
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(FakeMachine{.machine = "pcie-8", .control = control});
  ASSERT_NE(nvml, nullptr);
  absl::StatusOr<nvmlDevice_t> gpu0 = nvml->DeviceByIndex(0);
  ASSERT_TRUE(gpu0.ok()) << gpu0.status();
  const absl::StatusOr<bool> nvlink = nvml->NvLinkActive(*gpu0, 0);
  EXPECT_EQ(nvlink.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(nvlink.status().message(), HasSubstr("NVML_ERROR_NOT_SUPPORTED"));
  const absl::StatusOr<nvmlDevice_t> gpu1 = nvml->DeviceByIndex(1);
  EXPECT_TRUE(IsGpuLost(gpu1.status())) << gpu1.status();
  EXPECT_FALSE(IsGpuLost(nvlink.status()));
}

// The A100-80GB's GPU instance profiles as its driver reports them: the id
// instances report, compute slices, MiB, name.
struct ProfileCase {
  unsigned int id;
  unsigned int slices;
  uint64_t memory_mib;
  std::string name;
};

TEST(NvmlLibrary, MigInstancesAreReadThroughTheDeclaredLayouts) {
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(
      FakeMachine{.machine = "dgx-a100", .mig = "6", .mig_instances = "6:3g.40gb@0,2g.20gb@4,1g.10gb@6"});
  ASSERT_NE(nvml, nullptr);
  const nvmlDevice_t gpu6 = *nvml->DeviceByIndex(6);
  ASSERT_EQ(*nvml->MaxMigDevices(gpu6), 7u);
  // Three MIG devices in the last slots: the first four are empty, not errors.
  std::vector<nvmlDevice_t> devices;
  for (unsigned int slot = 0; slot < 7; ++slot) {
    absl::StatusOr<std::optional<nvmlDevice_t>> device = nvml->MigDeviceByIndex(gpu6, slot);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ(device->has_value(), slot >= 4) << "slot " << slot;
    if (device->has_value()) devices.push_back(**device);
  }
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_THAT(*nvml->Uuid(devices[1]), ::testing::StartsWith("MIG-"));
  const absl::StatusOr<unsigned int> id = nvml->GpuInstanceId(devices[1]);
  ASSERT_TRUE(id.ok()) << id.status();
  const absl::StatusOr<nvmlGpuInstanceInfo_t> info = nvml->GpuInstanceInfo(gpu6, *id);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->device, gpu6);
  EXPECT_EQ(info->id, *id);
  EXPECT_EQ(info->profileId, 14u);  // 2g.20gb's id, not its size (NVML_GPU_INSTANCE_PROFILE_2_SLICE = 1)
  EXPECT_EQ(info->placement.start, 4u);
  EXPECT_EQ(info->placement.size, 2u);
  EXPECT_EQ(nvml->GpuInstanceInfo(gpu6, 99).status().code(), absl::StatusCode::kNotFound);

  const std::vector<ProfileCase> profiles = {
      {19, 1, 9728, "1g.10gb"}, {20, 1, 9728, "1g.10gb+me"}, {15, 1, 19968, "1g.20gb"}, {14, 2, 19968, "2g.20gb"},
      {9, 3, 40192, "3g.40gb"}, {5, 4, 40192, "4g.40gb"},   {0, 7, 80640, "7g.80gb"},
  };
  for (const ProfileCase& c : profiles) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<GpuInstanceProfile> p = nvml->GpuInstanceProfileById(gpu6, c.id);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->id, c.id);
    EXPECT_EQ(p->slice_count, c.slices);
    EXPECT_EQ(p->memory_mib, c.memory_mib);
    EXPECT_EQ(p->name, c.name) << "NVML's name, less its \"MIG \"";
  }
  EXPECT_EQ(nvml->GpuInstanceProfileById(gpu6, 42).status().code(), absl::StatusCode::kNotFound);
}

TEST(NvmlLibrary, WithoutTheNamingCallAProfileHasItsSizesAndNoName) {
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(FakeMachine{
      .machine = "dgx-a100", .mig = "0", .fail = "nvmlDeviceGetGpuInstanceProfileInfoV=13"});
  ASSERT_NE(nvml, nullptr);
  const absl::StatusOr<GpuInstanceProfile> p = nvml->GpuInstanceProfileById(*nvml->DeviceByIndex(0), 9);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->slice_count, 3u);
  EXPECT_EQ(p->memory_mib, 40192u);
  EXPECT_EQ(p->name, "");
}

TEST(NvmlLibrary, AMigCallTheDriverLacksIsUnimplemented) {
  std::unique_ptr<NvmlLibrary> nvml = testing::LoadFake(
      FakeMachine{.machine = "dgx-a100", .mig = "0", .fail = "nvmlDeviceGetMaxMigDeviceCount=13"});
  ASSERT_NE(nvml, nullptr);
  const absl::StatusOr<unsigned int> slots = nvml->MaxMigDevices(*nvml->DeviceByIndex(0));
  EXPECT_EQ(slots.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(slots.status().message(),
              AllOf(HasSubstr("nvmlDeviceGetMaxMigDeviceCount"), HasSubstr("NVML_ERROR_FUNCTION_NOT_FOUND")));
}

}  // namespace
}  // namespace tessera::agent
