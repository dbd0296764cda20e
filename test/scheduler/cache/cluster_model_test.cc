#include "scheduler/cache/cluster_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Holding;
using testing::Inventory;
using testing::Share;

// Every GPU of these tests is a 16 GiB card of model "M".
constexpr int64_t kCardMib = 16384;

// Guaranteed milli-GPU held on GPU `gpu` of `node` in the current snapshot.
int64_t Held(const ClusterModel& m, std::string_view node, int32_t gpu) {
  const auto snapshot = m.Current();
  const auto i = snapshot->FindNode(node);
  return i ? snapshot->View(*i).UsageOf(gpu).guaranteed.value() : -1;
}

TEST(ClusterModel, SharesOfPodsAddUpPerGpu) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  m.UpsertPod(Holding("a", "n1", {0}, 250, 1024));
  m.UpsertPod(Holding("b", "n1", {0, 1}, 500, 2048));
  m.Publish();
  const auto s = m.Current();
  const GpuUsage u = s->View(*s->FindNode("n1")).UsageOf(0);
  EXPECT_EQ(u.guaranteed, MilliGpu(750));
  EXPECT_EQ(u.memory, MemoryMiB(3072));
  EXPECT_EQ(u.pods, 2);
  EXPECT_EQ(Held(m, "n1", 1), 500);
  EXPECT_EQ(s->gpu_count(), 2u);
}

TEST(ClusterModel, PodsAreKeyedByUidSoRepeatsAndMovesNeverCountTwice) {
  struct Step {
    std::string name;
    std::function<void(ClusterModel&)> change;
    int64_t n1_gpu0, n2_gpu0;
  };
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "M", kCardMib), absl::OkStatus());
  m.UpsertNode("n2", Inventory(1, "M", kCardMib), absl::OkStatus());
  const std::vector<Step> steps = {
      {"a pod is counted once", [](ClusterModel& c) { c.UpsertPod(Holding("a", "n1", 0, 300)); }, 300, 0},
      {"the same pod again is still counted once", [](ClusterModel& c) { c.UpsertPod(Holding("a", "n1", 0, 300)); },
       300, 0},
      {"a changed share replaces the old one", [](ClusterModel& c) { c.UpsertPod(Holding("a", "n1", 0, 400)); }, 400,
       0},
      {"a pod that moves frees its old node", [](ClusterModel& c) { c.UpsertPod(Holding("a", "n2", 0, 400)); }, 0, 400},
      {"a removed pod frees its GPUs", [](ClusterModel& c) { c.RemovePod("a"); }, 0, 0},
      {"removing an unknown pod changes nothing", [](ClusterModel& c) { c.RemovePod("zz"); }, 0, 0},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    s.change(m);
    m.Publish();
    EXPECT_EQ(Held(m, "n1", 0), s.n1_gpu0);
    EXPECT_EQ(Held(m, "n2", 0), s.n2_gpu0);
  }
}

TEST(ClusterModel, PublishSharesUnchangedNodesAndViewsPointIntoTheirOwnNode) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  m.UpsertNode("n2", Inventory(4, "M", kCardMib), absl::OkStatus());
  const auto first = m.Publish();
  m.UpsertPod(Holding("a", "n2", 3, 100));
  const auto second = m.Publish();
  const NodeIndex n1 = *second->FindNode("n1"), n2 = *second->FindNode("n2");
  // n1 did not change: the new snapshot shares its state with the old one.
  EXPECT_EQ(&second->node(n1), &first->node(*first->FindNode("n1")));
  EXPECT_NE(&second->node(n2), &first->node(*first->FindNode("n2")));
  EXPECT_EQ(second->View(n2).name, "n2");
  EXPECT_EQ(second->View(n2).gpus.size(), 4u);
  EXPECT_EQ(second->View(n2).UsageOf(3).guaranteed, MilliGpu(100));
  EXPECT_EQ(first->View(*first->FindNode("n2")).UsageOf(3).guaranteed, MilliGpu(0)) << "old snapshots never change";
  EXPECT_GT(second->generation(), first->generation());
}

TEST(ClusterModel, EveryViewPacksItsInventoryJoinedWithWhatPodsHoldInInventoryOrder) {
  NodeInventory sparse;  // indices 0, 2 and 5: usage is by index, states by position
  sparse.source = InventorySource::kAnnotation;
  for (int32_t index : {0, 2, 5}) {
    sparse.gpus.push_back(GpuDevice{.index = index, .uuid = "", .model = "M", .memory = MemoryMiB(1000 * (index + 1)), .numa = 0});
  }
  ClusterModel m;
  m.UpsertNode("sparse", sparse, absl::OkStatus());
  m.UpsertNode("dense", Inventory(2, "M", 4096), absl::OkStatus());
  m.UpsertNode("bad", NodeInventory{}, absl::InvalidArgumentError("broken"));
  m.UpsertPod(Holding("a", "sparse", {2}, 300, 100));
  m.UpsertPod(Holding("b", "sparse", {2, 5}, 200));
  m.UpsertPod(Holding("c", "sparse", 4, 100));  // a GPU the inventory does not list
  m.UpsertPod(Holding("d", "dense", 1, 1000));
  const auto Held = [](int64_t milli, int64_t mib, int32_t pods) {
    return GpuUsage{.guaranteed = MilliGpu(milli), .limit = MilliGpu(milli), .memory = MemoryMiB(mib),
                    .memory_limit = MemoryMiB(mib), .pods = pods};
  };
  struct Case {
    std::string node;
    std::vector<GpuState> states;
  };
  const std::vector<Case> cases = {
      {"sparse", {GpuState(0, MemoryMiB(1000), GpuUsage{}),
                  GpuState(2, MemoryMiB(3000), Held(500, 100, 2)),
                  GpuState(5, MemoryMiB(6000), Held(200, 0, 1))}},
      {"dense", {GpuState(0, MemoryMiB(4096), GpuUsage{}),
                 GpuState(1, MemoryMiB(4096), Held(1000, 0, 1))}},
      {"bad", {}},
  };
  for (int round = 0; round < 2; ++round) {  // as built, and once another node changed
    const auto s = m.Publish();
    for (const Case& c : cases) {
      SCOPED_TRACE(c.node);
      const NodeView view = s->View(*s->FindNode(c.node));
      EXPECT_EQ(std::vector<GpuState>(view.gpu_states.begin(), view.gpu_states.end()), c.states);
    }
    m.UpsertNode("other", Inventory(1, "M", kCardMib), absl::OkStatus());
  }
}

TEST(ClusterModel, InconsistenciesAreReportedNotFatal) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "M", 1000), absl::OkStatus());
  m.UpsertNode("bad", NodeInventory{}, absl::InvalidArgumentError("annotation tessera.io/gpu-inventory: broken"));
  m.UpsertPod(Holding("a", "n1", {0}, 700, 800));
  m.UpsertPod(Holding("b", "n1", {0}, 700, 800));
  m.UpsertPod(Holding("c", "n1", 5, 100));
  m.UpsertPod(Holding("d", "elsewhere", 0, 100));
  const auto s = m.Publish();
  const NodeState& n1 = s->node(*s->FindNode("n1"));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("GPU 0 is overcommitted: pods hold 1400/1000 milli")));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("GPU 0 is overcommitted: pods hold 1600 of 1000 MiB")));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("pod ns/c holds GPU 5 which the node's inventory does not list")));
  const NodeView bad = s->View(*s->FindNode("bad"));
  EXPECT_FALSE(bad.inventory_ok());
  EXPECT_TRUE(bad.gpus.empty());
  EXPECT_EQ(s->nodes_with_inventory_errors(), 1u);
  // A pod on a node the model has no inventory for still counts there.
  EXPECT_EQ(Held(m, "elsewhere", 0), 100);
}

// --- binds in flight -----------------------------------------------------------

TEST(Reservations, ABindInFlightCountsFromTheMomentItIsReserved) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 0, 600), absl::Now() + absl::Minutes(1)).ok());
  m.Publish();
  EXPECT_EQ(Held(m, "n1", 0), 600);
  EXPECT_EQ(m.reservation_count(), 1u);
  const auto snapshot = m.Current();
  ASSERT_EQ(snapshot->node(*snapshot->FindNode("n1")).pods.size(), 1u);
  EXPECT_TRUE(snapshot->node(*snapshot->FindNode("n1")).pods[0].in_flight);
}

// A pod whose assignment cannot be read, and nothing else tells what it holds (issue 46).
PodHolding UnknownHolding(std::string uid, std::string node) {
  PodHolding pod = Holding(std::move(uid), std::move(node), 0, 0);
  pod.assignment.gpus.clear();
  pod.unknown_holding = "unreadable tessera.io/gpu-assignment";
  return pod;
}

const std::string* Withheld(const ClusterModel& m, std::string_view node) {
  const auto snapshot = m.Current();
  return snapshot->View(*snapshot->FindNode(node)).gpus_withheld;
}

TEST(UnknownHoldings, APodWhoseHoldingIsUnknownWithholdsItsNodeUntilItIsRemoved) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  m.UpsertNode("n2", Inventory(2, "M", kCardMib), absl::OkStatus());
  m.UpsertPod(UnknownHolding("u1", "n1"));
  m.Publish();
  ASSERT_NE(Withheld(m, "n1"), nullptr);
  EXPECT_THAT(*Withheld(m, "n1"), HasSubstr("holds GPUs here that Tessera cannot count"));
  EXPECT_EQ(Withheld(m, "n2"), nullptr);
  const absl::Status refused = m.Reserve(Holding("u2", "n1", 1, 100), absl::Now() + absl::Minutes(1));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("whose GPUs Tessera cannot count"));
  EXPECT_TRUE(m.Reserve(Holding("u3", "n2", 1, 100), absl::Now() + absl::Minutes(1)).ok());

  m.RemovePod("u1");
  m.Publish();
  EXPECT_EQ(Withheld(m, "n1"), nullptr);
  EXPECT_TRUE(m.Reserve(Holding("u2", "n1", 1, 100), absl::Now() + absl::Minutes(1)).ok());
}

TEST(UnknownHoldings, AReadableUpdateOfThePodLiftsTheHold) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  m.UpsertPod(UnknownHolding("u1", "n1"));
  m.Publish();
  ASSERT_NE(Withheld(m, "n1"), nullptr);
  m.UpsertPod(Holding("u1", "n1", 0, 300));
  m.Publish();
  EXPECT_EQ(Withheld(m, "n1"), nullptr);
  EXPECT_EQ(Held(m, "n1", 0), 300);
}

TEST(UnknownHoldings, ABindInFlightKnowsWhatItsPodHoldsSoTheNodeIsNotWithheld) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 0, 400), absl::Now() + absl::Minutes(1)).ok());
  m.UpsertPod(UnknownHolding("u1", "n1"));  // the watch shows it bound, its annotation unreadable
  m.Publish();
  EXPECT_EQ(Withheld(m, "n1"), nullptr);
  EXPECT_EQ(Held(m, "n1", 0), 400);
}

TEST(Reservations, TheWatchShowingThePodConfirmsItWithoutCountingTwice) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "M", kCardMib), absl::OkStatus());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 0, 600), absl::Now() + absl::Minutes(1)).ok());
  m.UpsertPod(Holding("u1", "n1", 0, 600));
  m.Publish();
  EXPECT_EQ(Held(m, "n1", 0), 600);
  EXPECT_EQ(m.reservation_count(), 0u);
  EXPECT_FALSE(m.FindReservation("u1").has_value());
  ASSERT_TRUE(m.FindPod("u1").has_value());
  EXPECT_FALSE(m.FindPod("u1")->in_flight);
}

TEST(Reservations, ReservingTheSamePodAgainReplacesTheFirstReservation) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 0, 600), absl::Now() + absl::Minutes(1)).ok());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 1, 600), absl::Now() + absl::Minutes(1)).ok());
  m.Publish();
  EXPECT_EQ(Held(m, "n1", 0), 0);
  EXPECT_EQ(Held(m, "n1", 1), 600);
}

TEST(Reservations, AMigInstanceIsReservedOnceAndOnlyOnAGpuInMigMode) {
  ClusterModel m;
  NodeInventory inventory = Inventory(2);
  inventory.gpus[0].mig_mode = true;
  inventory.gpus[0].mig = testing::MigInstances("3g.40gb", {0, 4});
  m.UpsertNode("n1", inventory, absl::OkStatus());
  const absl::Time later = absl::Now() + absl::Minutes(1);
  ASSERT_TRUE(m.Reserve(Holding("a", "n1", {Share(0, 428, 40960).Mig("3g.40gb", 0)}), later).ok());
  const absl::Status twice = m.Reserve(Holding("b", "n1", {Share(0, 428, 40960).Mig("3g.40gb", 0)}), later);
  EXPECT_EQ(twice.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(twice.message()), HasSubstr("the MIG instance at slice 0 of GPU 0 of node n1 is held by another pod"));
  EXPECT_TRUE(m.Reserve(Holding("b", "n1", {Share(0, 428, 40960).Mig("3g.40gb", 4)}), later).ok())
      << "the other instance of the same GPU is free";
  const absl::Status share = m.Reserve(Holding("c", "n1", 0, 100), later);
  EXPECT_THAT(std::string(share.message()), HasSubstr("is in MIG mode"));
  const absl::Status instance = m.Reserve(Holding("d", "n1", {Share(1, 142).Mig("1g.10gb", 0)}), later);
  EXPECT_THAT(std::string(instance.message()), HasSubstr("is not in MIG mode"));
  m.Publish();
  const auto snapshot = m.Current();
  EXPECT_EQ(snapshot->View(*snapshot->FindNode("n1")).UsageOf(0).mig_held_starts, 0b0001'0001);
}

TEST(Reservations, ARemovedPodHoldingLeavesItsBindInFlightAlone) {
  // The watch shows the pod pending (annotation written, Binding not yet):
  // the sink removes any confirmed holding, but the bind still counts.
  ClusterModel m;
  m.UpsertNode("n1", Inventory(1, "M", kCardMib), absl::OkStatus());
  ASSERT_TRUE(m.Reserve(Holding("u1", "n1", 0, 300), absl::Now() + absl::Minutes(1)).ok());
  m.RemovePod("u1");
  m.Publish();
  EXPECT_EQ(Held(m, "n1", 0), 300);
}

TEST(Reservations, ReleasingAndExpiringFreeTheGpus) {
  ClusterModel m;
  m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
  const absl::Time now = absl::Now();
  ASSERT_TRUE(m.Reserve(Holding("failed", "n1", 0, 500), now + absl::Minutes(1)).ok());
  ASSERT_TRUE(m.Reserve(Holding("late", "n1", 1, 400), now + absl::Seconds(1)).ok());
  EXPECT_TRUE(m.ReleaseReservation("failed"));
  EXPECT_FALSE(m.ReleaseReservation("failed"));
  EXPECT_TRUE(m.ExpireReservations(now).empty());
  const std::vector<PodHolding> expired = m.ExpireReservations(now + absl::Seconds(2));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].uid, "late");
  m.Publish();
  EXPECT_EQ(Held(m, "n1", 0), 0);
  EXPECT_EQ(Held(m, "n1", 1), 0);
  EXPECT_EQ(m.reservation_count(), 0u);
}

TEST(Reservations, TheModelRefusesAReservationPastAGpusCapacityWhateverChoseIt) {
  struct Case {
    std::string name;
    PodHolding reservation;
    absl::StatusCode code;  // kOk: reserved
    std::string message;
  };
  // n1: GPU 0 holds 600 milli and 10 GiB (one pod confirmed, one in flight); 16 GiB cards.
  const std::vector<Case> cases = {
      {"the last 400 milli of a GPU can be reserved", Holding("new", "n1", 0, 400), absl::StatusCode::kOk, ""},
      {"one milli more than is left is refused", Holding("new", "n1", 0, 401), absl::StatusCode::kResourceExhausted,
       "GPU 0 of node n1 would hold 1001/1000 milli guaranteed"},
      {"memory past the card is refused", Holding("new", "n1", {1}, 100, 16385), absl::StatusCode::kResourceExhausted,
       "GPU 1 of node n1 would hold 16385 of its 16384 MiB"},
      {"memory adds up with what pods hold", Holding("new", "n1", {0}, 100, 6145), absl::StatusCode::kResourceExhausted,
       "would hold 16385 of its 16384 MiB"},
      {"a GPU the inventory does not list is refused", Holding("new", "n1", 7, 100),
       absl::StatusCode::kFailedPrecondition, "node n1 has no GPU 7 in its inventory"},
      {"a pod listing one GPU twice counts both shares", Holding("new", "n1", {1, 1}, 600),
       absl::StatusCode::kResourceExhausted, "GPU 1 of node n1 would hold 1200/1000"},
      {"the pod's own earlier reservation is replaced, not added", Holding("flight", "n1", 0, 700),
       absl::StatusCode::kOk, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterModel m;
    m.UpsertNode("n1", Inventory(2, "M", kCardMib), absl::OkStatus());
    m.UpsertPod(Holding("held", "n1", {0}, 300, 4096));
    ASSERT_TRUE(m.Reserve(Holding("flight", "n1", {0}, 300, 6144), absl::Now() + absl::Minutes(1)).ok());
    const absl::Status st = m.Reserve(c.reservation, absl::Now() + absl::Minutes(1));
    EXPECT_EQ(st.code(), c.code) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message));
    m.Publish();
    if (!st.ok()) {
      EXPECT_EQ(Held(m, "n1", 0), 600) << "a refused reservation holds nothing";
      EXPECT_EQ(Held(m, "n1", 1), 0);
      EXPECT_EQ(m.reservation_count(), 1u);
    }
  }
}

TEST(Reservations, AReservationOnANodeTheModelDoesNotKnowDisappearsWithIt) {
  ClusterModel m;
  ASSERT_TRUE(m.Reserve(Holding("u1", "ghost", 0, 500), absl::Now() + absl::Minutes(1)).ok());
  EXPECT_EQ(m.Publish()->node_count(), 1u);
  m.ReleaseReservation("u1");
  EXPECT_EQ(m.Publish()->node_count(), 0u);
}

// --- incremental publish ----------------------------------------------------------

TEST(IncrementalPublish, RebuildsOnlyChangedNodesAndMatchesAFullRebuild) {
  ClusterModel m;
  for (int i = 0; i < 20; ++i) m.UpsertNode(absl::StrCat("n", i), Inventory(4, "M", kCardMib), absl::OkStatus());
  const auto before = m.Publish();
  m.UpsertPod(Holding("u1", "n3", 1, 250));
  m.UpsertPod(Holding("u2", "n7", {0, 1}, 1000));
  const auto after = m.Publish();
  EXPECT_EQ(after->node_count(), 20u);
  EXPECT_EQ(after->gpu_count(), 80u);
  for (NodeIndex i = 0; i < after->node_count(); ++i) {
    const std::string& name = after->node(i).name;
    const bool changed = name == "n3" || name == "n7";
    EXPECT_EQ(&after->node(i) == &before->node(i), !changed) << name;
    EXPECT_EQ(after->View(i).name, name);
  }
  EXPECT_EQ(Held(m, "n3", 1), 250);
  EXPECT_EQ(Held(m, "n7", 0), 1000);
  // The earlier snapshot is untouched.
  EXPECT_EQ(before->View(*before->FindNode("n3")).UsageOf(1).guaranteed.value(), 0);
  // A node whose inventory turns unreadable keeps the counts right.
  m.UpsertNode("n5", NodeInventory{}, absl::InvalidArgumentError("bad"));
  const auto broken = m.Publish();
  EXPECT_EQ(broken->gpu_count(), 76u);
  EXPECT_EQ(broken->nodes_with_inventory_errors(), 1u);
  EXPECT_FALSE(broken->View(*broken->FindNode("n5")).inventory_ok());
}

TEST(ClusterModelTest, EveryViewReadsItsNodesGpuStatesThroughPublishesThatChangeAFewNodes) {
  // 600 nodes: three blocks of GPU states. Publishes change what pods hold
  // on a node (its block is patched), a node's GPU count (its block is laid
  // out anew) and nothing in the third block (shared with the last snapshot).
  ClusterModel m;
  const auto name = [](int i) { return absl::StrCat("node-", 1000 + i); };  // name order is index order
  for (int i = 0; i < 600; ++i) m.UpsertNode(name(i), Inventory(1 + i % 8, "M", kCardMib), absl::OkStatus());
  std::shared_ptr<const ClusterSnapshot> last = m.Publish();
  const auto expect_every_view_right = [](const ClusterSnapshot& s) {
    for (NodeIndex i = 0; i < s.node_count(); ++i) {
      const std::vector<GpuState>& want = s.node(i).gpu_states;
      ASSERT_EQ(std::vector<GpuState>(s.View(i).gpu_states.begin(), s.View(i).gpu_states.end()), want)
          << s.node(i).name;
    }
  };
  expect_every_view_right(*last);
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    m.UpsertPod(Holding(absl::StrCat("p", round), name(7 + round), 0, 100 * (1 + round)));
    if (round % 2 == 1) {
      m.UpsertNode(name(300 + round), Inventory(1 + (round + 3) % 8, "M", kCardMib), absl::OkStatus());
    }
    const std::shared_ptr<const ClusterSnapshot> next = m.Publish();
    expect_every_view_right(*next);
    EXPECT_EQ(next->View(599).gpu_states.data(), last->View(599).gpu_states.data()) << "an untouched block is shared";
    last = next;
  }
}

}  // namespace
}  // namespace tessera
