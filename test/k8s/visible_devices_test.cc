// tessera.io/visible-devices read back (k8s/visible_devices.h): what a pod
// whose assignment cannot be read is known to hold.
#include "k8s/visible_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testing/builders.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

struct ParseCase {
  std::string name;
  std::string text;
  std::vector<VisibleDevice> devices;  // when it parses
  std::string error;                   // else, part of the message
};

VisibleDevice Uuid(std::string uuid) { return VisibleDevice{.uuid = std::move(uuid), .index = -1}; }
VisibleDevice Index(int32_t index) { return VisibleDevice{.uuid = "", .index = index}; }

class ParseVisibleDevicesTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseVisibleDevicesTest, ReadsWhatTheBindWroteAndRefusesTheRestWithAReason) {
  const ParseCase& c = GetParam();
  absl::StatusOr<std::vector<VisibleDevice>> parsed = ParseVisibleDevices(c.text);
  if (c.error.empty()) {
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c.devices);
  } else {
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.error));
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("tessera.io/visible-devices"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseVisibleDevicesTest,
    ::testing::Values(
        ParseCase{"OneUuid", "GPU-1a2b", {Uuid("GPU-1a2b")}, ""},
        ParseCase{"UuidsInOrder", "GPU-b, GPU-a", {Uuid("GPU-b"), Uuid("GPU-a")}, ""},
        ParseCase{"Indices", "0,3", {Index(0), Index(3)}, ""},
        ParseCase{"Empty", "", {}, "an empty device name"},
        ParseCase{"AnEmptyItem", "GPU-a,,GPU-b", {}, "an empty device name"},
        ParseCase{"AMix", "GPU-a,1", {}, "a mix of UUIDs and device indices"},
        ParseCase{"Twice", "2,2", {}, "\"2\" is named twice"},
        ParseCase{"AHugeIndex", "123456", {}, "is not a device index"},
        ParseCase{"NotANumber", "1x", {}, "is not a device index"},
        ParseCase{"ForeignCharacters", "GPU-a;rm", {}, "neither a device index nor a UUID"},
        ParseCase{"TooLong", "GPU-" + std::string(200, 'a'), {}, "longer than 128 bytes"},
        ParseCase{"TooMany", [] {
                    std::string s;
                    for (int i = 0; i < 65; ++i) s += (i ? "," : "") + std::to_string(i);
                    return s;
                  }(),
                  {}, "more than 64 devices"}),
    [](const auto& info) { return info.param.name; });

// Two A100s with UUIDs GPU-0 and GPU-1 (testing::Inventory).
std::vector<GpuDevice> TwoGpus() { return testing::Inventory(2).gpus; }

TEST(AssignmentFromVisibleDevicesTest, EachNamedGpuHoldsTheShareThePodAsks) {
  PodGpuRequest quarter;
  quarter.whole_gpu = false;
  quarter.guaranteed = MilliGpu(250);
  quarter.limit = MilliGpu(500);
  quarter.memory = MemoryMiB(1024);
  absl::StatusOr<GpuAssignment> a = AssignmentFromVisibleDevices("GPU-1", "n1", TwoGpus(), &quarter);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->node, "n1");
  ASSERT_EQ(a->gpus.size(), 1u);
  EXPECT_EQ(a->gpus[0].index, 1);
  EXPECT_EQ(a->gpus[0].guaranteed.value(), 250);
  EXPECT_EQ(a->gpus[0].limit.value(), 500);
  EXPECT_EQ(a->gpus[0].memory.value(), 1024);
}

TEST(AssignmentFromVisibleDevicesTest, AnUnknownRequestCountsTheWholeGpuAndItsMemory) {
  absl::StatusOr<GpuAssignment> a = AssignmentFromVisibleDevices("0", "n1", TwoGpus(), nullptr);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->gpus.size(), 1u);
  EXPECT_EQ(a->gpus[0].index, 0);
  EXPECT_EQ(a->gpus[0].guaranteed.value(), 1000);
  EXPECT_EQ(a->gpus[0].memory, TwoGpus()[0].memory);
}

TEST(AssignmentFromVisibleDevicesTest, ADeviceTheNodeDoesNotHaveIsRefused) {
  absl::StatusOr<GpuAssignment> a = AssignmentFromVisibleDevices("GPU-7", "n1", TwoGpus(), nullptr);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("GPU-7 is not a GPU of node n1"));
}

TEST(AssignmentFromVisibleDevicesTest, AGpuInMigModeIsRefusedForItsInstanceIsNotWritten) {
  std::vector<GpuDevice> gpus = TwoGpus();
  gpus[0].mig_mode = true;
  absl::StatusOr<GpuAssignment> a = AssignmentFromVisibleDevices("0", "n1", gpus, nullptr);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("is in MIG mode"));
}

}  // namespace
}  // namespace tessera::k8s
