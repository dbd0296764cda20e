// The policy file's `tenants:` section: every field, and errors with
// file:line:col like the rest of the policy file.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/policy_loader.h"
#include "test/testing/policy_document.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

const std::string kHead = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
)";

absl::StatusOr<LoadedPolicy> Load(const std::string& tenants) { return testing::LoadWithBuiltins(kHead + tenants); }

TEST(TenantsSection, AbsentMeansNoTenants) {
  absl::StatusOr<LoadedPolicy> p = Load("");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_NE(p->tenants, nullptr);
  EXPECT_TRUE(p->tenants->empty());
}

TEST(TenantsSection, ReadsEveryField) {
  absl::StatusOr<LoadedPolicy> p = Load(R"(tenants:
  - name: research
    namespaces: [ml, ml-dev]
    guaranteed: {gpuMilli: 8000, gpuMemory: 160Gi, gpus: 8}
    max: {gpuMilli: 16000}
    maxRunTime: 24h
    evictAfterMaxRunTime: true
    priorityLifetime: 2h
    expiredPriority: -5
  - name: serving
)");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->tenants->size(), 2u);
  const TenantSpec& r = p->tenants->tenant(0);
  EXPECT_EQ(r.name, "research");
  EXPECT_EQ(r.namespaces, (std::vector<std::string>{"ml", "ml-dev"}));
  EXPECT_EQ(r.guaranteed, (GpuQuota{MilliGpu(8000), MemoryMiB(160 * 1024), 8}));
  EXPECT_EQ(r.max.milli, MilliGpu(16000));
  EXPECT_EQ(r.max.gpus, GpuQuota::kUnlimited);
  EXPECT_EQ(r.max_run_time, absl::Hours(24));
  EXPECT_TRUE(r.evict_past_max_run_time);
  EXPECT_EQ(r.priority_lifetime, absl::Hours(2));
  EXPECT_EQ(r.expired_priority, -5);
  const TenantSpec& s = p->tenants->tenant(1);
  EXPECT_EQ(s.guaranteed, GpuQuota::None()) << "no guarantee: everything it holds is borrowed";
  EXPECT_EQ(s.max, GpuQuota{});
  EXPECT_EQ(p->tenants->TenantOf("ml-dev", ""), 0u);
}

struct BadTenantsCase {
  std::string name;
  std::string yaml;
  std::string error;
};

class TenantsSectionErrors : public ::testing::TestWithParam<BadTenantsCase> {};

TEST_P(TenantsSectionErrors, AreRefusedWithFileLineAndField) {
  absl::StatusOr<LoadedPolicy> p = Load(GetParam().yaml);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TenantsSectionErrors,
    ::testing::Values(
        BadTenantsCase{"NotAList", "tenants: {a: 1}\n", "policy.yaml:5:10: tenants: must be a list of tenants"},
        BadTenantsCase{"ATenantWithoutAName", "tenants:\n  - namespaces: [a]\n", "policy.yaml:6:5: tenants[0].name: required"},
        BadTenantsCase{"ATenantListedTwice", "tenants:\n  - name: a\n  - name: a\n",
                       "policy.yaml:7:11: tenants[1].name: duplicate tenant \"a\" (first listed as tenants[0])"},
        BadTenantsCase{"ANamespaceOfTwoTenants",
                       "tenants:\n  - name: a\n    namespaces: [x]\n  - name: b\n    namespaces: [y, x]\n",
                       "policy.yaml:9:21: tenants[1].namespaces[1]: namespace \"x\" already belongs to tenant \"a\""},
        BadTenantsCase{"AMaxUnderItsGuarantee",
                       "tenants:\n  - name: a\n    guaranteed: {gpus: 4}\n    max: {gpus: 2}\n",
                       "tenants[0].max.gpus: must be at least the guarantee (4); got 2"},
        BadTenantsCase{"ANegativeAmount", "tenants:\n  - name: a\n    max: {gpuMilli: -1}\n",
                       "policy.yaml:7:21: tenants[0].max.gpuMilli: must be an integer in 0..1099511627776"},
        BadTenantsCase{"AnUnknownField", "tenants:\n  - name: a\n    quota: 3\n", "tenants[0].quota"},
        BadTenantsCase{"EvictionWithoutARunTime", "tenants:\n  - name: a\n    evictAfterMaxRunTime: true\n",
                       "tenants[0].evictAfterMaxRunTime: needs maxRunTime"},
        BadTenantsCase{"AMemoryThatIsNoQuantity", "tenants:\n  - name: a\n    max: {gpuMemory: lots}\n",
                       "tenants[0].max.gpuMemory: must be a memory quantity"}),
    [](const ::testing::TestParamInfo<BadTenantsCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera
