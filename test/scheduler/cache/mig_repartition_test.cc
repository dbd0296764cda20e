// Where re-partitioning a MIG GPU would make a waiting pod's profile: the
// fewest pods evicted, then the fewest free instances destroyed.
#include "scheduler/cache/mig_repartition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::MigInstances;
using testing::Node;

std::vector<MigInstance> Join(std::vector<MigInstance> a, const std::vector<MigInstance>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// What an advice says, in short: where, and what it disturbs.
struct Said {
  std::string node;
  int32_t gpu = 0;
  int32_t start = 0;
  std::vector<int32_t> destroyed_starts;
  int32_t evicted = 0;
  bool operator==(const Said&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Said& s) {
  os << s.node << " GPU " << s.gpu << " start " << s.start << " destroys";
  for (int32_t d : s.destroyed_starts) os << " " << d;
  return os << " evicts " << s.evicted;
}

std::optional<Said> Advise(const std::string& profile, const std::vector<Node>& nodes) {
  std::vector<NodeView> views;
  for (const Node& n : nodes) views.push_back(n.View());
  const std::optional<MigRepartitionAdvice> a = AdviseMigRepartition(profile, testing::Pointers(views));
  if (!a.has_value()) return std::nullopt;
  EXPECT_EQ(a->profile, profile);
  Said said{.node = a->node, .gpu = a->gpu_index, .start = a->start, .destroyed_starts = {}, .evicted = a->pods_to_evict};
  for (const MigInstance& m : a->destroy) said.destroyed_starts.push_back(m.start);
  return said;
}

struct Case {
  std::string name;
  std::string profile;
  std::vector<Node> nodes;
  std::optional<Said> want;
};

TEST(AdviseMigRepartition, NamesTheGpuThatNeedsTheLeastDisruption) {
  const std::vector<Case> cases = {
      {"free slices suffice: nothing is destroyed", "3g.40gb",
       {Node("a").Gpus(1).Mig(0, MigInstances("3g.40gb", {0})).HoldMig(0, 0)},
       Said{.node = "a", .gpu = 0, .start = 4, .destroyed_starts = {}, .evicted = 0}},
      {"free instances in the way are destroyed, the fewest wins", "3g.40gb",
       {Node("small").Gpus(1).Mig(0, MigInstances("1g.10gb", {0, 1, 2, 3, 4, 5, 6})).HoldMig(0, 0),
        Node("mixed").Gpus(1)
            .Mig(0, Join(MigInstances("3g.40gb", {0}), Join(MigInstances("2g.20gb", {4}), MigInstances("1g.10gb", {6}))))
            .HoldMig(0, 0)},
       Said{.node = "mixed", .gpu = 0, .start = 4, .destroyed_starts = {4, 6}, .evicted = 0}},
      {"when every place holds pods, the fewest are evicted", "3g.40gb",
       {Node("a").Gpus(1)
            .Mig(0, MigInstances("1g.10gb", {0, 1, 2, 3, 4, 5, 6}))
            .HoldMig(0, 0).HoldMig(0, 1).HoldMig(0, 2).HoldMig(0, 3).HoldMig(0, 4).HoldMig(0, 5).HoldMig(0, 6)},
       Said{.node = "a", .gpu = 0, .start = 4, .destroyed_starts = {}, .evicted = 3}},
      {"a GPU with a free instance of the profile needs none", "3g.40gb",
       {Node("a").Gpus(1).Mig(0, MigInstances("3g.40gb", {0, 4})).HoldMig(0, 4)}, std::nullopt},
      {"a GPU whose instances are unknown is never advised", "3g.40gb",
       {Node("a").Gpus(1).MigUnlisted(0)}, std::nullopt},
      {"no GPU offering the profile gives no advice", "3g.40gb",
       {Node("a").Gpus(1, "NVIDIA-A100-SXM4-40GB", 40960).Mig(0, MigInstances("3g.20gb", {0})), Node("b").Gpus(8)},
       std::nullopt},
      {"an unhealthy GPU is never advised", "1g.10gb",
       {Node("a").Gpus(2).Mig(0).Mig(1, MigInstances("7g.80gb", {0})).Unhealthy(0)},
       // The free 7g.80gb goes whatever the start; slice 6 keeps the most of the rest.
       Said{.node = "a", .gpu = 1, .start = 6, .destroyed_starts = {0}, .evicted = 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Advise(c.profile, c.nodes), c.want);
  }
}

TEST(AdviseMigRepartition, AmongEqualDisruptionsTheOneThatKeepsMoreGeometryWins) {
  // An empty GPU in MIG mode: a 1g.10gb fits anywhere without destroying
  // anything; slice 6 breaks the fewest larger profiles (MigGeometryLoss).
  const std::optional<Said> said = Advise("1g.10gb", {Node("a").Gpus(1).Mig(0)});
  ASSERT_TRUE(said.has_value());
  EXPECT_EQ(said->start, 6);
}

}  // namespace
}  // namespace tessera
