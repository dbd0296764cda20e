#include "scheduler/cache/pool_usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Holding;
using testing::Inventory;
using testing::Share;

constexpr int64_t kCardMib = 16384;

// The entry of (pool, model); a test failure and an empty entry when absent.
PoolModelUsage Find(const std::vector<PoolModelUsage>& all, std::string_view pool, std::string_view model) {
  for (const PoolModelUsage& u : all) {
    if (u.pool == pool && u.model == model) return u;
  }
  ADD_FAILURE() << "no entry for pool " << pool << ", model " << model;
  return {};
}

TEST(UsageByPoolAndModel, SumsEachPoolsGpusOfEachModelByState) {
  ClusterModel m;
  m.UpsertNode("a1", Inventory(4, "A100", kCardMib), absl::OkStatus(), std::nullopt, "train");
  m.UpsertNode("a2", Inventory(2, "A100", kCardMib), absl::OkStatus(), std::nullopt, "train");
  m.UpsertNode("l1", Inventory(2, "L4", kCardMib), absl::OkStatus(), std::nullopt, "serve");
  m.UpsertPod(Holding("whole", "a1", {0}, 1000, kCardMib));  // a1 gpu0 full
  m.UpsertPod(Holding("quarter", "a1", {1}, 250, 1024));     // a1 gpu1 partial, 750 free
  m.UpsertPod(Holding("half", "l1", {0}, 500, 2048));        // l1 gpu0 partial, 500 free
  m.Publish();
  const std::vector<PoolModelUsage> all = UsageByPoolAndModel(*m.Current());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].pool, "serve") << "sorted by pool";

  const PoolModelUsage train = Find(all, "train", "A100");
  EXPECT_EQ(train.gpus_idle, 4);  // a1 gpu2-3, a2 gpu0-1
  EXPECT_EQ(train.gpus_partial, 1);
  EXPECT_EQ(train.gpus_full, 1);
  EXPECT_EQ(train.gpus_unhealthy, 0);
  EXPECT_EQ(train.milli_capacity, MilliGpu(6000));
  EXPECT_EQ(train.milli_allocated, MilliGpu(1250));
  EXPECT_EQ(train.milli_free_fragmented, MilliGpu(750));
  EXPECT_EQ(train.memory_capacity, MemoryMiB(6 * kCardMib));
  EXPECT_EQ(train.memory_allocated, MemoryMiB(kCardMib + 1024));
  EXPECT_EQ(train.nodes, 2);
  EXPECT_EQ(train.nodes_idle, 1) << "a2 only";

  const PoolModelUsage serve = Find(all, "serve", "L4");
  EXPECT_EQ(serve.gpus_idle, 1);
  EXPECT_EQ(serve.gpus_partial, 1);
  EXPECT_EQ(serve.milli_free_fragmented, MilliGpu(500));
  EXPECT_EQ(serve.nodes_idle, 0);
}

TEST(UsageByPoolAndModel, NodesWithoutPoolAndGpusWithoutModelHaveLabelsNoPoolCanHave) {
  ClusterModel m;
  NodeInventory count_only = Inventory(2, "", 0);
  count_only.source = InventorySource::kAllocatable;
  m.UpsertNode("n1", count_only, absl::OkStatus());
  m.Publish();
  const std::vector<PoolModelUsage> all = UsageByPoolAndModel(*m.Current());
  const PoolModelUsage u = Find(all, kNoPool, kUnknownModel);
  EXPECT_EQ(u.gpus_idle, 2);
  EXPECT_EQ(u.memory_capacity, MemoryMiB(0)) << "unknown memory is not capacity";
}

TEST(UsageByPoolAndModel, AnUnhealthyGpuIsNeitherCapacityNorFreeAndLeavesTheNodeIdleIfTheRestIs) {
  ClusterModel m;
  NodeInventory inventory = Inventory(2, "A100", kCardMib);
  inventory.gpus[1].healthy = false;
  m.UpsertNode("n1", inventory, absl::OkStatus(), std::nullopt, "p");
  m.UpsertPod(Holding("stuck", "n1", {1}, 500, 1024));  // still held on the broken GPU
  m.Publish();
  const PoolModelUsage u = Find(UsageByPoolAndModel(*m.Current()), "p", "A100");
  EXPECT_EQ(u.gpus_unhealthy, 1);
  EXPECT_EQ(u.gpus_idle, 1);
  EXPECT_EQ(u.milli_capacity, MilliGpu(1000));
  EXPECT_EQ(u.milli_allocated, MilliGpu(0));
  EXPECT_EQ(u.nodes_idle, 1);
}

TEST(UsageByPoolAndModel, AGpuWhoseMemoryIsAllHeldIsFullNotFragmented) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "A100", kCardMib), absl::OkStatus(), std::nullopt, "p");
  m.UpsertPod(Holding("big", "n1", {Share(0, 300).Memory(kCardMib)}));
  m.Publish();
  const PoolModelUsage u = Find(UsageByPoolAndModel(*m.Current()), "p", "A100");
  EXPECT_EQ(u.gpus_full, 1);
  EXPECT_EQ(u.gpus_partial, 0);
  EXPECT_EQ(u.milli_free_fragmented, MilliGpu(0));
}

TEST(UsageByPoolAndModel, ANodeRelabelledIntoAnotherPoolMovesThere) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "A100", kCardMib), absl::OkStatus(), std::nullopt, "old");
  m.Publish();
  m.UpsertNode("n1", Inventory(1, "A100", kCardMib), absl::OkStatus(), std::nullopt, "new");
  m.Publish();
  const std::vector<PoolModelUsage> all = UsageByPoolAndModel(*m.Current());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pool, "new");
}

TEST(UsageByPoolAndModel, ANodeWithAnUnreadableInventoryAddsNothing) {
  ClusterModel m;
  m.UpsertNode("n1", NodeInventory{}, absl::InvalidArgumentError("bad"), std::nullopt, "p");
  m.Publish();
  EXPECT_TRUE(UsageByPoolAndModel(*m.Current()).empty());
}

}  // namespace
}  // namespace tessera
