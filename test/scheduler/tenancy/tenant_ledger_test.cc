// Quota decisions: what a tenant holds, borrows and lends, and which pods it may place.
#include "scheduler/tenancy/tenant_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

PodHolding Held(std::string uid, std::string ns, int32_t gpu, int64_t milli, std::string label = "") {
  PodHolding p = testing::Holding(uid, "n1", gpu, milli);
  p.pod_key = ns + "/" + uid;
  p.tenant_label = std::move(label);
  return p;
}

TenantSpec Tenant(std::string name, std::string ns, int64_t guaranteed, int64_t max) {
  TenantSpec t;
  t.name = std::move(name);
  t.namespaces = {std::move(ns)};
  t.guaranteed = GpuQuota{};  // guaranteed in compute alone
  t.guaranteed.milli = MilliGpu(guaranteed);
  t.max.milli = MilliGpu(max);
  return t;
}

class TenantLedgerTest : public ::testing::Test {
 protected:
  // Four A100s; research is guaranteed two and may use four, serving one and may use two.
  TenantLedgerTest()
      : tenants_(*TenantSet::Create({Tenant("research", "ml", 2000, 4000), Tenant("serving", "web", 1000, 2000)})) {
    model_.UpsertNode("n1", testing::Node("n1").Gpus(4).inventory(), absl::OkStatus());
  }
  std::shared_ptr<const ClusterSnapshot> With(std::vector<PodHolding> pods) {
    for (PodHolding& p : pods) model_.UpsertPod(std::move(p));
    return model_.Publish();
  }
  static GpuTotals Gpus(int64_t n) { return GpuTotals{MilliGpu(1000 * n), MemoryMiB(0), n}; }

  ClusterModel model_;
  TenantSet tenants_;
};

TEST_F(TenantLedgerTest, PodsCountForTheTenantOfTheirNamespaceOrOfTheirLabel) {
  const auto snapshot = With({Held("a", "ml", 0, 1000), Held("b", "web", 1, 500, "research"), Held("c", "x", 2, 250)});
  const TenantLedger ledger(tenants_, *snapshot);
  EXPECT_EQ(ledger.used(0).milli, MilliGpu(1500));
  EXPECT_EQ(ledger.used(0).gpus, 2);
  EXPECT_EQ(ledger.used(1).milli, MilliGpu(0));
  EXPECT_EQ(ledger.untenanted().milli, MilliGpu(250));
  EXPECT_EQ(ledger.capacity().milli, MilliGpu(4000));
  EXPECT_EQ(ledger.idle().milli, MilliGpu(2250));
}

TEST_F(TenantLedgerTest, APodThatWouldTakeItsTenantOverMaxIsRefusedNamingTenantResourceAndNumbers) {
  const auto snapshot = With({Held("a", "web", 0, 1000), Held("b", "web", 1, 500)});
  const QuotaVerdict v = TenantLedger(tenants_, *snapshot).Admit(1, Gpus(1));
  EXPECT_EQ(v.code, QuotaVerdict::Code::kOverMax);
  EXPECT_EQ(v.message, "tenant serving would hold 2500 gpu-milli, over its max 2000 (it holds 1500, the pod asks 1000)");
}

TEST_F(TenantLedgerTest, BorrowingIsAllowedWhileGpusAreIdle) {
  const auto snapshot = With({Held("a", "ml", 0, 1000), Held("b", "ml", 1, 1000)});
  const TenantLedger ledger(tenants_, *snapshot);
  EXPECT_TRUE(ledger.Admit(0, Gpus(1)).ok()) << "over its guarantee of 2, with 2 GPUs idle";
  EXPECT_TRUE(ledger.WithinGuarantee(0));
  EXPECT_FALSE(ledger.StaysWithinGuarantee(0, Gpus(1)));
}

TEST_F(TenantLedgerTest, BorrowingIsRefusedWhenNothingIsIdleButPreemptionMayHelp) {
  const auto snapshot = With({Held("a", "ml", 0, 1000), Held("b", "ml", 1, 1000), Held("c", "ml", 2, 1000),
                              Held("d", "x", 3, 1000)});
  const QuotaVerdict v = TenantLedger(tenants_, *snapshot).Admit(0, Gpus(1));
  EXPECT_EQ(v.code, QuotaVerdict::Code::kNoIdleToBorrow);
  EXPECT_THAT(v.message, HasSubstr("tenant research would hold 4000 gpu-milli, over its guarantee 2000, and only 0"));
}

TEST_F(TenantLedgerTest, APodWithinItsGuaranteeIsAdmittedEvenWhenTheClusterIsFull) {
  const auto snapshot = With({Held("a", "ml", 0, 1000), Held("b", "x", 1, 1000), Held("c", "x", 2, 1000),
                              Held("d", "x", 3, 1000)});
  const TenantLedger ledger(tenants_, *snapshot);
  EXPECT_TRUE(ledger.Admit(0, Gpus(1)).ok()) << "research reclaims its guarantee by preemption";
  EXPECT_TRUE(ledger.StaysWithinGuarantee(0, Gpus(1)));
}

TEST_F(TenantLedgerTest, BorrowersFillWhatNoTenantIsGuaranteedBeforeTheyCountAsLent) {
  // Guarantees: 2 + 1 of 4 GPUs; 1 GPU is no tenant's. Serving holds none.
  const auto one_stray = With({Held("s1", "x", 0, 1000)});
  EXPECT_EQ(TenantLedger(tenants_, *one_stray).lent(1).milli, MilliGpu(0));
  const auto two_strays = With({Held("s2", "x", 1, 1000)});
  const TenantLedger ledger(tenants_, *two_strays);
  // One GPU borrowed from the idle guarantees (research 2, serving 1): a third is serving's.
  EXPECT_EQ(ledger.lent(1).milli, MilliGpu(333));
  EXPECT_EQ(ledger.lent(0).milli, MilliGpu(666));
  EXPECT_EQ(ledger.borrowed(0).milli, MilliGpu(0));
}

TEST_F(TenantLedgerTest, SharedGpusDoNotMakeATenantWithAGpuGuaranteeLookShortOfIdleGpus) {
  TenantSpec counted = Tenant("counted", "ml", 0, 4000);
  counted.guaranteed.gpus = 1;
  const TenantSet tenants = *TenantSet::Create({counted});
  // Eight quarter pods on two GPUs: eight holdings of four GPUs, two GPUs idle.
  std::vector<PodHolding> quarters;
  for (int i = 0; i < 8; ++i) quarters.push_back(Held(absl::StrCat("q", i), "x", i / 4, 250));
  const auto snapshot = With(std::move(quarters));
  const QuotaVerdict v = TenantLedger(tenants, *snapshot).Admit(0, Gpus(1));
  EXPECT_TRUE(v.ok()) << v.message;
}

TEST_F(TenantLedgerTest, PodsOfNoTenantAreNeverRefused) {
  const auto snapshot = With({Held("a", "x", 0, 1000), Held("b", "x", 1, 1000), Held("c", "x", 2, 1000),
                              Held("d", "x", 3, 1000)});
  EXPECT_TRUE(TenantLedger(tenants_, *snapshot).Admit(std::nullopt, Gpus(1)).ok());
}

TEST(TenantSetTest, ALabelWinsOverTheNamespaceAndAnUnknownLabelBelongsToNoTenant) {
  TenantSpec a;
  a.name = "a";
  a.namespaces = {"team-a"};
  TenantSpec b;
  b.name = "b";
  const TenantSet set = *TenantSet::Create({a, b});
  EXPECT_EQ(set.TenantOf("team-a", ""), 0u);
  EXPECT_EQ(set.TenantOf("team-a", "b"), 1u);
  EXPECT_EQ(set.TenantOf("team-a", "typo"), std::nullopt);
  EXPECT_EQ(set.TenantOf("elsewhere", ""), std::nullopt);
}

TEST(TenantSetTest, ANamespaceOfTwoTenantsIsRefused) {
  TenantSpec a;
  a.name = "a";
  a.namespaces = {"shared"};
  TenantSpec b = a;
  b.name = "b";
  EXPECT_THAT(TenantSet::Create({a, b}).status().message(), HasSubstr("namespace shared already belongs to tenant a"));
}

}  // namespace
}  // namespace tessera
