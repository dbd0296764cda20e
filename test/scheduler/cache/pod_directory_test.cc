// PodDirectory: the watch's last word on each pod, by UID, for bind to look up.
#include "scheduler/cache/pod_directory.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

PodRecord Pod(std::string uid, std::string node = "") {
  PodRecord p;
  p.uid = std::move(uid);
  p.namespace_name = "ml";
  p.name = "p-" + p.uid;
  p.node_name = std::move(node);
  return p;
}

TEST(PodDirectoryTest, UpsertReplacesFindReturnsACopyAndRemoveForgets) {
  PodDirectory pods;
  EXPECT_EQ(pods.Find("a"), std::nullopt);
  pods.Upsert(Pod("a"));
  pods.Upsert(Pod("b"));
  pods.Upsert(Pod("a", "node-1"));  // bound since: the newer record wins
  EXPECT_EQ(pods.size(), 2u);
  ASSERT_TRUE(pods.Find("a").has_value());
  EXPECT_EQ(pods.Find("a")->node_name, "node-1");
  pods.Remove("a");
  pods.Remove("never-seen");  // harmless
  EXPECT_EQ(pods.Find("a"), std::nullopt);
  EXPECT_EQ(pods.size(), 1u);
}

TEST(PodDirectoryTest, WritersAndReadersOnThreadsSeeWholeRecords) {
  PodDirectory pods;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pods, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string uid = "p" + std::to_string((t * 500 + i) % 64);
        pods.Upsert(Pod(uid, "node-" + uid));
        if (std::optional<PodRecord> found = pods.Find(uid)) {
          EXPECT_EQ(found->node_name, "node-" + found->uid);
        }
        if (i % 7 == 0) pods.Remove(uid);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(pods.size(), 64u);
}

}  // namespace
}  // namespace tessera
