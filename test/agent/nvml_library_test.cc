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

}  // namespace
}  // namespace tessera::agent
