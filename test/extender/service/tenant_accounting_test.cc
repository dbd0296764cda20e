// Per-tenant accounting: chargeback integrals, gauges, and pods past their
// tenant's maximum run time.
#include "extender/service/tenant_accounting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"
#include "test/testing/fake_pod_api.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

class TenantAccountingTest : public ::testing::Test {
 protected:
  TenantAccountingTest() {
    TenantSpec research;
    research.name = "research";
    research.namespaces = {"ml"};
    research.guaranteed = GpuQuota{MilliGpu(1000), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
    research.max_run_time = absl::Hours(1);
    research.evict_past_max_run_time = true;
    tenants_ = *TenantSet::Create({research});
    model_.UpsertNode("n1", testing::Node("n1").Gpus(2).inventory(), absl::OkStatus());
  }
  void Bind(const std::string& uid, int32_t gpu, int64_t milli, absl::Time bound_at) {
    PodHolding p = testing::Holding(uid, "n1", gpu, milli);
    p.pod_key = "ml/" + uid;
    p.assignment.gpus[0].memory = MemoryMiB(1024);
    p.bound_at = bound_at;
    model_.UpsertPod(std::move(p));
    model_.Publish();
  }
  double GaugeOf(std::string_view name, std::string kind) {
    return metrics_.Gauge(name, "", {{"tenant", "research"}, {"kind", std::move(kind)}}).Value();
  }

  ClusterModel model_;
  TenantSet tenants_;
  MetricsRegistry metrics_;
  testing::FakePodApi api_;
};

TEST_F(TenantAccountingTest, ChargebackIntegratesWhatTheTenantHeldOverTime) {
  Bind("a", 0, 1000, kT0);
  Bind("b", 1, 500, kT0);
  TenantAccountant accountant(metrics_, &api_);
  accountant.Tick(*model_.Current(), tenants_, kT0, false);
  accountant.Tick(*model_.Current(), tenants_, kT0 + absl::Seconds(2), false);
  const std::vector<TenantReport> report = accountant.Report();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].gpu_milli_seconds, 3000);  // 1500 milli for 2 s
  EXPECT_EQ(report[0].gpu_memory_mib_seconds, 4096);
  EXPECT_EQ(report[0].used.milli, MilliGpu(1500));
  EXPECT_EQ(report[0].borrowed.milli, MilliGpu(500));
  EXPECT_FALSE(report[0].within_guarantee);
  EXPECT_EQ(GaugeOf("tessera_tenant_gpu_milli", "used"), 1500);
  EXPECT_EQ(GaugeOf("tessera_tenant_gpu_milli", "guaranteed"), 1000);
  EXPECT_EQ(GaugeOf("tessera_tenant_gpu_milli", "borrowed"), 500);
}

TEST_F(TenantAccountingTest, AStallCountsAsTheLongestStepNotAsAllTheTimeItLasted) {
  Bind("a", 0, 1000, kT0);
  TenantAccountant accountant(metrics_, &api_);
  accountant.Tick(*model_.Current(), tenants_, kT0, false);
  accountant.Tick(*model_.Current(), tenants_, kT0 + absl::Hours(1), false);
  EXPECT_EQ(accountant.Report()[0].gpu_milli_seconds, 1000 * absl::ToInt64Seconds(TenantAccountant::kMaxStep));
}

TEST_F(TenantAccountingTest, APodPastItsTenantsMaxRunTimeIsReportedAndEvictedByTheWriterOnce) {
  Bind("old", 0, 1000, kT0 - absl::Hours(2));
  Bind("young", 1, 1000, kT0 - absl::Minutes(10));
  PodRecord old;
  old.uid = "old";
  old.namespace_name = "ml";
  old.name = "old";
  api_.Add(old);
  TenantAccountant accountant(metrics_, &api_);
  accountant.Tick(*model_.Current(), tenants_, kT0, /*may_evict=*/false);
  EXPECT_THAT(accountant.Report()[0].over_max_run_time, ElementsAre("ml/old"));
  EXPECT_THAT(api_.evicted(), IsEmpty()) << "only the writer evicts";
  accountant.Tick(*model_.Current(), tenants_, kT0 + absl::Seconds(1), /*may_evict=*/true);
  ASSERT_EQ(api_.evicted().size(), 1u);
  EXPECT_EQ(api_.evicted()[0].name, "old");
  accountant.Tick(*model_.Current(), tenants_, kT0 + absl::Seconds(2), /*may_evict=*/true);
  EXPECT_EQ(api_.evicted().size(), 1u) << "its grace period runs: not evicted again at once";
}

}  // namespace
}  // namespace tessera
