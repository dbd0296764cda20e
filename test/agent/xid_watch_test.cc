// Critical XIDs as the driver reports them, through the fake's event set.
#include "agent/xid_watch.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/agent/fake_machine.h"

namespace tessera::agent {
namespace {

using testing::FakeMachine;

class XidWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    control_ = ::testing::TempDir() + "/xid-control-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(control_, std::ios::trunc).flush();
    nvml_ = testing::LoadFake(FakeMachine{.machine = "dgx-a100", .control = control_});
    ASSERT_NE(nvml_, nullptr);
    absl::StatusOr<std::unique_ptr<XidWatch>> watch = XidWatch::Start(*nvml_, ApplicationXids(), notes_);
    ASSERT_TRUE(watch.ok()) << watch.status();
    watch_ = *std::move(watch);
  }
  void Append(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }
  std::string Uuid(unsigned int index) { return *nvml_->Uuid(*nvml_->DeviceByIndex(index)); }

  std::string control_;
  std::unique_ptr<NvmlLibrary> nvml_;
  std::vector<std::string> notes_;
  std::unique_ptr<XidWatch> watch_;
};

TEST_F(XidWatchTest, EveryGpuIsWatched) { EXPECT_THAT(notes_, ::testing::IsEmpty()); }

TEST_F(XidWatchTest, NothingHappensWithinTheTimeout) {
  const absl::StatusOr<std::optional<BrokenGpu>> event = watch_->Wait(absl::Milliseconds(20));
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value());
}

TEST_F(XidWatchTest, ACriticalXidBreaksItsGpuAndSaysWhich) {
  Append("xid 3 79");
  const absl::StatusOr<std::optional<BrokenGpu>> event = watch_->Wait(absl::Seconds(5));
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->uuid, Uuid(3));
  EXPECT_EQ((*event)->reason, "XID 79 (GPU has fallen off the bus)");
}

TEST_F(XidWatchTest, AnApplicationsXidLeavesTheGpuHealthy) {
  Append("xid 2 13");
  Append("xid 2 31");
  Append("xid 4 48");
  const absl::StatusOr<std::optional<BrokenGpu>> first = watch_->Wait(absl::Seconds(5));
  const absl::StatusOr<std::optional<BrokenGpu>> second = watch_->Wait(absl::Seconds(5));
  const absl::StatusOr<std::optional<BrokenGpu>> third = watch_->Wait(absl::Seconds(5));
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_FALSE(first->has_value());
  EXPECT_FALSE(second->has_value());
  ASSERT_TRUE(third->has_value());
  EXPECT_EQ((*third)->uuid, Uuid(4));
  EXPECT_EQ((*third)->reason, "XID 48 (double-bit ECC error)");
}

TEST(XidReason, NamesTheCommonXidsAndStillReportsTheOthers) {
  EXPECT_EQ(XidReason(95), "XID 95 (uncontained ECC error)");
  EXPECT_EQ(XidReason(1234), "XID 1234 (critical error reported by the driver)");
}

}  // namespace
}  // namespace tessera::agent
