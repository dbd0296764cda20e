// Which pods preemption evicts from one node: tables of nodes, pods and
// tenants, judged by the gpu-share policy as the extender runs it.
#include "scheduler/tenancy/victim_choice.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/registry.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::UnorderedElementsAreArray;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// A bound pod: `milli` of GPU `gpu` (whole: 1000), at `priority`, in
// namespace `ns`, bound `age` ago.
struct PodRow {
  std::string uid;
  int32_t gpu;
  int64_t milli;
  int32_t priority = 0;
  std::string ns = "default";
  absl::Duration age = absl::Hours(1);
  bool in_flight = false;
};

struct VictimCase {
  std::string name;
  int gpus;                 // A100s on the node
  std::vector<PodRow> pods;
  testing::Pod preemptor;
  int32_t priority;         // the preemptor's
  std::string ns = "default";
  std::vector<TenantSpec> tenants = {};
  std::optional<std::vector<std::string>> victims;  // nullopt: the node is dropped
};

PodHolding Bound(const PodRow& row) {
  PodHolding p = testing::Holding(row.uid, "n1", row.gpu, row.milli);
  p.pod_key = row.ns + "/" + row.uid;
  p.priority = row.priority;
  p.bound_at = kNow - row.age;
  return p;
}

TenantSpec Tenant(std::string name, std::string ns, int64_t guaranteed_milli) {
  TenantSpec t;
  t.name = std::move(name);
  t.namespaces = {std::move(ns)};
  t.guaranteed = GpuQuota{MilliGpu(guaranteed_milli), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
  return t;
}

// gpu-share with its defaults: what a policy naming only it runs.
std::shared_ptr<const Profile> GpuShareProfile() {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("");
  std::vector<WeightedPlugin> plugins;
  plugins.push_back(WeightedPlugin{*(*registry.Find("gpu-share"))(*args), 1});
  return *Profile::Create(std::move(plugins));
}

std::vector<std::string> Quarters(const std::string& prefix) {
  return {prefix + "a", prefix + "b", prefix + "c", prefix + "d"};
}

class VictimChoiceTest : public ::testing::TestWithParam<VictimCase> {};

TEST_P(VictimChoiceTest, EvictsWhatFreesAGpuAndNoMore) {
  const VictimCase& c = GetParam();
  ClusterModel model;
  model.UpsertNode("n1", testing::Node("n1").Gpus(c.gpus).inventory(), absl::OkStatus());
  for (const PodRow& row : c.pods) {
    if (row.in_flight) {
      ASSERT_TRUE(model.Reserve(Bound(row), kNow + absl::Minutes(1)).ok());
    } else {
      model.UpsertPod(Bound(row));
    }
  }
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  const std::shared_ptr<const Profile> profile = GpuShareProfile();
  absl::StatusOr<TenantSet> tenants = TenantSet::Create(c.tenants);
  ASSERT_TRUE(tenants.ok()) << tenants.status();
  const TenantLedger ledger(*tenants, *snapshot);
  const CycleState cycle(c.preemptor);
  const Preemptor preemptor{.priority = c.priority, .tenant = tenants->TenantOf(c.ns, ""),
                            .ask = TotalsOfRequest(cycle)};

  const std::optional<VictimSet> chosen =
      ChooseVictims(*profile, cycle, preemptor, snapshot->node(0), snapshot->View(0), ledger, kNow);

  ASSERT_EQ(chosen.has_value(), c.victims.has_value());
  if (!chosen.has_value()) return;
  std::vector<std::string> uids;
  for (const PodHolding* p : chosen->pods) uids.push_back(p->uid);
  EXPECT_THAT(uids, UnorderedElementsAreArray(*c.victims));
}

std::vector<PodRow> FullOfQuarters(int gpus, int32_t priority) {
  std::vector<PodRow> rows;
  for (int g = 0; g < gpus; ++g) {
    for (const std::string& uid : Quarters(absl::StrCat("g", g))) rows.push_back({uid, g, 250, priority});
  }
  return rows;
}

std::vector<PodRow> With(std::vector<PodRow> rows, const std::vector<PodRow>& more) {
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, VictimChoiceTest,
    ::testing::Values(
        VictimCase{"AHalfGpuPodEvictsTwoQuartersOfOneGpuNotOneOfEach", 2, FullOfQuarters(2, 0),
                   testing::Pod().Fraction(500), 100, "default", {}, std::vector<std::string>{"g0c", "g0d"}},
        VictimCase{"TheGpuWhoseQuartersHaveTheLowestPriorityIsFreed", 2,
                   With({{"g0a", 0, 250, 50}, {"g0b", 0, 250, 50}, {"g0c", 0, 250, 50}, {"g0d", 0, 250, 50}},
                        {{"g1a", 1, 250, 10}, {"g1b", 1, 250, 10}, {"g1c", 1, 250, 10}, {"g1d", 1, 250, 10}}),
                   testing::Pod().Fraction(500), 100, "default", {}, std::vector<std::string>{"g1c", "g1d"}},
        VictimCase{"OneLargePodGoesRatherThanTwoSmallOnes", 1,
                   {{"big", 0, 500}, {"small1", 0, 250}, {"small2", 0, 250}}, testing::Pod().Fraction(500), 100,
                   "default", {}, std::vector<std::string>{"big"}},
        VictimCase{"ThePodThatRanLeastIsEvictedAmongEqualOnes", 1,
                   {{"old", 0, 500, 0, "default", absl::Hours(9)}, {"young", 0, 500, 0, "default", absl::Minutes(5)}},
                   testing::Pod().Fraction(500), 100, "default", {}, std::vector<std::string>{"young"}},
        VictimCase{"APodThatFitsAlreadyNeedsNoVictims", 2, {{"g0a", 0, 250}}, testing::Pod().Fraction(500), 100,
                   "default", {}, std::vector<std::string>{}},
        VictimCase{"PodsOfEqualOrHigherPriorityAreNeverVictims", 1, {{"same", 0, 500, 100}, {"higher", 0, 500, 200}},
                   testing::Pod().Fraction(500), 100, "default", {}, std::nullopt},
        VictimCase{"ABindInFlightIsNeverAVictim", 1, {{"binding", 0, 1000, 0, "default", absl::Hours(1), true}},
                   testing::Pod(), 100, "default", {}, std::nullopt},
        VictimCase{"AFourGpuPodFreesFourGpusTogether", 4,
                   {{"p0", 0, 1000}, {"p1", 1, 1000}, {"p2", 2, 1000}, {"p3", 3, 1000}}, testing::Pod().Count(4),
                   100, "default", {}, std::vector<std::string>{"p0", "p1", "p2", "p3"}},
        VictimCase{"ABorrowedPodGoesBeforeOneWithinItsTenantsGuarantee", 2,
                   {{"owner", 0, 1000, 0, "team-a"}, {"borrower", 1, 1000, 0, "team-b"}}, testing::Pod(), 100,
                   "team-a",
                   {Tenant("a", "team-a", 2000), Tenant("b", "team-b", 0)},
                   std::vector<std::string>{"borrower"}},
        VictimCase{"ABorrowingPodNeverEvictsAPodWithinItsTenantsGuarantee", 1, {{"owner", 0, 1000, 0, "team-a"}},
                   testing::Pod(), 100, "team-b", {Tenant("a", "team-a", 1000), Tenant("b", "team-b", 0)},
                   std::nullopt},
        VictimCase{"ABorrowingPodTakesFromABorrowingTenantNoMoreThanItBorrows", 2,
                   {{"b1", 0, 1000, 0, "team-b"}, {"b2", 1, 1000, 0, "team-b"}}, testing::Pod().Count(2), 100,
                   "elsewhere", {Tenant("b", "team-b", 1000)}, std::nullopt},
        VictimCase{"AnUntenantedPodIsABorrowerAndGoesFirst", 2,
                   {{"owner", 0, 1000, 0, "team-a"}, {"stray", 1, 1000, 0, "elsewhere"}}, testing::Pod(), 100,
                   "team-a", {Tenant("a", "team-a", 2000)}, std::vector<std::string>{"stray"}}),
    [](const ::testing::TestParamInfo<VictimCase>& info) { return info.param.name; });

TEST(EffectivePriorityTest, APodPastItsTenantsPriorityLifetimeCountsAtTheExpiredPriority) {
  TenantSpec t = Tenant("a", "team-a", 0);
  t.priority_lifetime = absl::Hours(2);
  t.expired_priority = 5;
  absl::StatusOr<TenantSet> tenants = TenantSet::Create({t});
  ASSERT_TRUE(tenants.ok());
  const ClusterSnapshot empty;
  const TenantLedger ledger(*tenants, empty);
  EXPECT_EQ(EffectivePriority(Bound({"young", 0, 1000, 1000, "team-a", absl::Hours(1)}), ledger, kNow), 1000);
  EXPECT_EQ(EffectivePriority(Bound({"old", 0, 1000, 1000, "team-a", absl::Hours(3)}), ledger, kNow), 5);
  EXPECT_EQ(EffectivePriority(Bound({"low", 0, 1000, 1, "team-a", absl::Hours(3)}), ledger, kNow), 1)
      << "expiry never raises a priority";
  EXPECT_EQ(EffectivePriority(Bound({"other", 0, 1000, 1000, "elsewhere", absl::Hours(3)}), ledger, kNow), 1000);
}

TEST(VictimChoiceExpiryTest, AHighPriorityPodPastItsLifetimeBecomesAVictim) {
  TenantSpec t = Tenant("a", "team-a", 0);
  t.priority_lifetime = absl::Hours(2);
  absl::StatusOr<TenantSet> tenants = TenantSet::Create({t});
  ASSERT_TRUE(tenants.ok());
  ClusterModel model;
  model.UpsertNode("n1", testing::Node("n1").Gpus(1).inventory(), absl::OkStatus());
  model.UpsertPod(Bound({"veteran", 0, 1000, 1000, "team-a", absl::Hours(3)}));
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  const std::shared_ptr<const Profile> profile = GpuShareProfile();
  const TenantLedger ledger(*tenants, *snapshot);
  const CycleState cycle(testing::Pod().request());
  const std::optional<VictimSet> chosen =
      ChooseVictims(*profile, cycle, Preemptor{.priority = 500, .tenant = std::nullopt, .ask = TotalsOfRequest(cycle)},
                    snapshot->node(0), snapshot->View(0), ledger, kNow);
  ASSERT_TRUE(chosen.has_value());
  ASSERT_EQ(chosen->pods.size(), 1u);
  EXPECT_EQ(chosen->pods[0]->uid, "veteran");
}

}  // namespace
}  // namespace tessera
