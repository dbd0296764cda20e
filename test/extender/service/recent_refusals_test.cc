// The record of pods filter refused everywhere: bounded, expiring, thread-safe,
// and written by filter as kube-scheduler calls it.
#include "extender/service/recent_refusals.h"

#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/testing/fake_clock.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

FilterRefusal Refusal(std::string key) { return FilterRefusal{.key = key, .pod = "ml/" + key}; }

std::vector<std::string> Keys(const RecentRefusals& r) {
  std::vector<std::string> keys;
  for (const FilterRefusal& f : r.List()) keys.push_back(f.key);
  return keys;
}

TEST(RecentRefusalsTest, ListsTheMostRecentlyRefusedFirstAndARefusalAgainMovesThePodUp) {
  testing::FakeClock clock;
  RecentRefusals r({.clock = &clock});
  r.Record(Refusal("a"));
  clock.Advance(absl::Seconds(1));
  r.Record(Refusal("b"));
  clock.Advance(absl::Seconds(1));
  r.Record(Refusal("a"));
  EXPECT_THAT(Keys(r), ElementsAre("a", "b"));
  EXPECT_EQ(r.List()[0].at, clock.Now());
}

TEST(RecentRefusalsTest, ForgettingAPodDropsItAndForgettingAnUnknownOneDoesNothing) {
  RecentRefusals r;
  r.Record(Refusal("a"));
  r.Record(Refusal("b"));
  r.Forget("a");
  r.Forget("never-seen");
  EXPECT_THAT(Keys(r), ElementsAre("b"));
}

TEST(RecentRefusalsTest, PastItsCapacityTheLeastRecentlyRefusedPodIsForgotten) {
  RecentRefusals r({.capacity = 3});
  for (const char* key : {"a", "b", "c", "d"}) r.Record(Refusal(key));
  EXPECT_THAT(Keys(r), ElementsAre("d", "c", "b"));
  EXPECT_EQ(r.size(), 3u);
}

TEST(RecentRefusalsTest, APodNotRefusedForTheTtlIsForgotten) {
  testing::FakeClock clock;
  RecentRefusals r({.ttl = absl::Minutes(10), .clock = &clock});
  r.Record(Refusal("old"));
  clock.Advance(absl::Minutes(6));
  r.Record(Refusal("new"));
  clock.Advance(absl::Minutes(5));
  EXPECT_THAT(Keys(r), ElementsAre("new"));  // listing skips it at once
  r.Record(Refusal("newer"));                // a write drops it
  EXPECT_EQ(r.size(), 2u);
}

TEST(RecentRefusalsTest, ReasonsAreKeptMostNodesFirstAndTextsAreCut) {
  RecentRefusals r({.max_reasons = 2, .max_text_bytes = 8});
  FilterRefusal f = Refusal("a");
  f.reasons = {{.code = "few", .nodes = 1}, {.code = "most", .nodes = 9}, {.code = "some", .nodes = 3}};
  f.error = "a long error message";
  r.Record(f);
  const FilterRefusal kept = r.List().at(0);
  EXPECT_THAT(kept.reasons, ElementsAre(Field(&FilterRefusal::Reason::code, "most"),
                                        Field(&FilterRefusal::Reason::code, "some")));
  EXPECT_EQ(kept.error, "a long e...");
}

TEST(RecentRefusalsTest, WritersOnManyThreadsKeepItWithinItsCapacity) {
  RecentRefusals r({.capacity = 100});
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&r, t] {
      for (int i = 0; i < 2000; ++i) {
        r.Record(Refusal(std::to_string(t) + "-" + std::to_string(i)));
        if (i % 3 == 0) r.Forget(std::to_string(t) + "-" + std::to_string(i - 1));
        if (i % 100 == 0) (void)r.List();
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(r.size(), 100u);
  EXPECT_EQ(r.List().size(), 100u);
}

// ---- written by filter -------------------------------------------------------

constexpr const char* kCluster = R"(nodes:
  - {name: n1, labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
  - {name: n2, labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
pods:
  - namespace: ml
    name: big
    annotations: {tessera.io/gpu-assignment: '{"node":"n1","gpus":[{"index":0,"milli":800}]}'}
  - namespace: ml
    name: big2
    annotations: {tessera.io/gpu-assignment: '{"node":"n2","gpus":[{"index":0,"milli":800}]}'}
)";

std::string FilterArgs(const std::string& fraction, const std::vector<std::string>& nodes,
                       const std::string& uid = "pod-uid") {
  nlohmann::json pod = {{"metadata", {{"name", "waiting"}, {"namespace", "ml"}, {"uid", uid}}}};
  pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  pod["metadata"]["labels"]["tessera.io/tenant"] = "research";
  return nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
}

TEST(FilterRefusalsTest, APodRefusedOnEveryNodeIsKeptWithEachReasonItsNodeCountAndAnExample) {
  testing::ServiceFixture f(kCluster);
  ASSERT_TRUE(f.service().Filter(FilterArgs("0.5", {"n1", "n2", "n3"})).ok());
  const std::vector<FilterRefusal> kept = f.refusals().List();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].key, "pod-uid");
  EXPECT_EQ(kept[0].pod, "ml/waiting");
  EXPECT_EQ(kept[0].tenant_label, "research");
  EXPECT_EQ(kept[0].request, "1 GPU × 500 milli");
  EXPECT_EQ(kept[0].nodes, 3);
  ASSERT_EQ(kept[0].reasons.size(), 2u);
  EXPECT_EQ(kept[0].reasons[0].nodes, 2);  // most nodes first
  EXPECT_EQ(kept[0].reasons[0].node, "n1");
  EXPECT_THAT(kept[0].reasons[0].example, HasSubstr("GPU"));
  EXPECT_EQ(kept[0].reasons[1].code, "unknown_node");
  EXPECT_EQ(kept[0].reasons[1].node, "n3");
}

TEST(FilterRefusalsTest, APodThatFitsSomewhereLaterIsForgotten) {
  testing::ServiceFixture f(kCluster);
  ASSERT_TRUE(f.service().Filter(FilterArgs("0.5", {"n1", "n2"})).ok());
  ASSERT_EQ(f.refusals().size(), 1u);
  ASSERT_TRUE(f.service().Filter(FilterArgs("0.1", {"n1", "n2"})).ok());
  EXPECT_EQ(f.refusals().size(), 0u);
}

TEST(FilterRefusalsTest, APodWithAnInvalidRequestIsKeptWithTheAnswersError) {
  testing::ServiceFixture f(kCluster);
  ASSERT_TRUE(f.service().Filter(FilterArgs("1.5", {"n1"})).ok());
  const std::vector<FilterRefusal> kept = f.refusals().List();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_THAT(kept[0].error, HasSubstr("invalid GPU request"));
  EXPECT_EQ(kept[0].request, "invalid request");
}

TEST(FilterRefusalsTest, APodWithoutUidIsKeptByNamespaceAndName) {
  testing::ServiceFixture f(kCluster);
  ASSERT_TRUE(f.service().Filter(FilterArgs("0.5", {"n1"}, "")).ok());
  EXPECT_THAT(Keys(f.refusals()), ElementsAre("ml/waiting"));
}

}  // namespace
}  // namespace tessera
