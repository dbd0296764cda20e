// The capacity publisher's decisions, with the fake API server for its
// failures (the real API server shows the patch itself works:
// test/control_plane/gpu_capacity_test.cc). Rounds are driven with explicit
// times; nothing sleeps.
#include "k8s/sync/capacity_publisher.h"

#include <atomic>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "absl/strings/str_cat.h"
#include "k8s/client/api_client.h"
#include "scheduler/model/gpu.h"
#include "test/testing/builders.h"
#include "test/testing/fake_api_server.h"

namespace tessera::k8s {
namespace {

using testing::FakeApiServer;
using testing::Inventory;
using testing::kA100;

TEST(GpuCapacityTest, WantedIsAThousandMilliAHealthyGpuAndTheirMemoryWhenAllOfItIsKnown) {
  EXPECT_EQ(WantedCapacity(Inventory(8, kA100, 81920)), (GpuCapacity{.milli = 8000, .memory_mib = 655360}));
  EXPECT_EQ(WantedCapacity(Inventory(2, kA100, 0)), (GpuCapacity{.milli = 2000, .memory_mib = std::nullopt}));
  EXPECT_EQ(WantedCapacity(NodeInventory{}), GpuCapacity{});
  NodeInventory one_broken = Inventory(8, kA100, 81920);
  one_broken.gpus[3].healthy = false;
  EXPECT_EQ(WantedCapacity(one_broken), (GpuCapacity{.milli = 7000, .memory_mib = 573440}))
      << "an unhealthy GPU is not counted";
  NodeInventory two_mig = Inventory(8, kA100, 81920);
  two_mig.gpus[0].mig_mode = two_mig.gpus[7].mig_mode = true;
  EXPECT_EQ(WantedCapacity(two_mig), (GpuCapacity{.milli = 6000, .memory_mib = 491520}))
      << "a GPU in MIG mode takes no share, so it offers no gpu-milli";
}

TEST(GpuCapacityTest, AdvertisedIsWhatCapacityAndAllocatableAgreeOn) {
  simdjson::dom::parser parser;
  auto advertised = [&](const char* status) {
    return AdvertisedCapacity(parser.parse(absl::StrCat(R"({"status":)", status, "}")).value());
  };
  EXPECT_EQ(advertised(R"({"capacity":{"tessera.io/gpu-milli":"2k","tessera.io/gpu-memory-mib":"163840"},
                          "allocatable":{"tessera.io/gpu-milli":"2000","tessera.io/gpu-memory-mib":"163840"}})"),
            (GpuCapacity{.milli = 2000, .memory_mib = 163840}));
  EXPECT_EQ(advertised(R"({"capacity":{"tessera.io/gpu-milli":"2000"},"allocatable":{}})"), GpuCapacity{})
      << "a kubelet that zeroed allocatable must be corrected";
  EXPECT_EQ(advertised(R"({"capacity":{"tessera.io/gpu-milli":"lots"},"allocatable":{"tessera.io/gpu-milli":"lots"}})"),
            GpuCapacity{});
  EXPECT_EQ(advertised("{}"), GpuCapacity{});
}

class CapacityPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = std::to_string(server_.port());
    config.ca_pem = server_.certs().ca.cert_pem;
    client_ = *ApiClient::Create(config);
    publisher_ = std::make_unique<CapacityPublisher>(*client_, [this] { return writer_.load(); }, nullptr,
                                                     CapacityPublisherOptions{.max_patches_per_round = 50,
                                                                              .retry_after = absl::Seconds(10)});
  }

  size_t Patches() { return server_.Requests("PATCH", "/api/v1/nodes/").size(); }

  static NodeGpuCapacity Capacity(std::optional<GpuCapacity> wanted, GpuCapacity advertised) {
    NodeGpuCapacity c;
    c.wanted = wanted;
    c.advertised = advertised;
    return c;
  }
  static NodeGpuCapacity Unadvertised() { return Capacity(Milli(2000, 163840), {}); }
  static GpuCapacity Milli(int64_t milli, std::optional<int64_t> mib = std::nullopt) {
    GpuCapacity c;
    c.milli = milli;
    c.memory_mib = mib;
    return c;
  }

  FakeApiServer server_;
  std::unique_ptr<ApiClient> client_;
  std::atomic<bool> writer_{true};
  std::unique_ptr<CapacityPublisher> publisher_;
  const absl::Time t0_ = absl::Now();
};

TEST_F(CapacityPublisherTest, OnlyNodesWhoseStatusIsNotTheirInventoryWait) {
  publisher_->Observe("unadvertised", Unadvertised());
  publisher_->Observe("settled", Capacity(Milli(1000), Milli(1000)));
  publisher_->Observe("unreadable-inventory", Capacity(std::nullopt, Milli(8000)));
  EXPECT_EQ(publisher_->pending(), 1u);
  publisher_->Observe("unadvertised", std::nullopt);  // deleted
  EXPECT_EQ(publisher_->pending(), 0u);
}

TEST_F(CapacityPublisherTest, AReplicaThatIsNotTheWriterWritesNothing) {
  writer_ = false;
  publisher_->Observe("n1", Unadvertised());
  EXPECT_EQ(publisher_->PublishRound(t0_), 0);
  EXPECT_EQ(Patches(), 0u);
  EXPECT_EQ(publisher_->pending(), 1u);
}

TEST_F(CapacityPublisherTest, AFailedPatchIsRetriedAfterItsDelayNotAtEveryRound) {
  server_.FailNext({"PATCH", "/api/v1/nodes/"}, 500, 2);
  publisher_->Observe("n1", Unadvertised());
  EXPECT_EQ(publisher_->PublishRound(t0_), 0);
  EXPECT_EQ(Patches(), 1u);
  const testing::RecordedRequest sent = server_.Requests("PATCH", "/api/v1/nodes/")[0];
  EXPECT_EQ(sent.path, "/api/v1/nodes/n1/status");
  EXPECT_EQ(sent.body, R"({"status":{"capacity":{"tessera.io/gpu-milli":"2000","tessera.io/gpu-memory-mib":"163840"},)"
                       R"("allocatable":{"tessera.io/gpu-milli":"2000","tessera.io/gpu-memory-mib":"163840"}}})");
  EXPECT_EQ(publisher_->PublishRound(t0_ + absl::Seconds(5)), 0);
  EXPECT_EQ(Patches(), 1u) << "retried before its delay";
  EXPECT_EQ(publisher_->PublishRound(t0_ + absl::Seconds(11)), 0);
  EXPECT_EQ(Patches(), 2u);
  EXPECT_EQ(publisher_->pending(), 1u);
}

TEST_F(CapacityPublisherTest, ARoundPatchesABoundedNumberOfNodes) {
  server_.FailNext({"PATCH", "/api/v1/nodes/"}, 503, 1000);
  for (int i = 0; i < 120; ++i) publisher_->Observe(absl::StrCat("n", i), Unadvertised());
  (void)publisher_->PublishRound(t0_);
  EXPECT_EQ(Patches(), 50u);
  (void)publisher_->PublishRound(t0_);
  EXPECT_EQ(Patches(), 100u) << "the next round takes the next nodes, not the failed ones again";
}

TEST_F(CapacityPublisherTest, ANodeWithoutGpusAnyMoreHasItsResourcesRemoved) {
  server_.FailNext({"PATCH", "/api/v1/nodes/"}, 500, 1);
  publisher_->Observe("n1", Capacity(GpuCapacity{}, Milli(8000, 1)));
  (void)publisher_->PublishRound(t0_);
  ASSERT_EQ(Patches(), 1u);
  EXPECT_EQ(server_.Requests("PATCH", "/api/v1/nodes/")[0].body,
            R"({"status":{"capacity":{"tessera.io/gpu-milli":null,"tessera.io/gpu-memory-mib":null},)"
            R"("allocatable":{"tessera.io/gpu-milli":null,"tessera.io/gpu-memory-mib":null}}})");
}

}  // namespace
}  // namespace tessera::k8s
