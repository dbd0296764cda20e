// An ExtenderService over a cluster and a policy given as text, for tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/cluster_file.h"
#include "scheduler/framework/plugin_args.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"
#include "extender/service/extender_service.h"
#include "test/testing/data_files.h"
#include "test/testing/function_handle.h"

namespace tessera::testing {

inline constexpr const char* kBinpackPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack, gpuStrategy: binpack, maxLimitPercent: 200}
)";

/// Four A100 80 GB, the JSON of a tessera.io/gpu-inventory annotation.
inline constexpr std::string_view kFourA100Inventory =
    R"([{"index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920},)"
    R"({"index":1,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920},)"
    R"({"index":2,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920},)"
    R"({"index":3,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920}])";

/// The same quoted for a cluster file's flow map: `{tessera.io/gpu-inventory: <this>}`.
inline std::string QuotedFourA100Inventory() { return "'" + std::string(kFourA100Inventory) + "'"; }

/// The pod of the recorded v1.26 filter request (nodeCacheCapable), with
/// `uid` when not empty, asking for `fraction` of a GPU (nothing when empty),
/// labelled tessera.io/task-type=`task_type` when not empty.
inline nlohmann::json RecordedFilterPod(const std::string& uid, const std::string& fraction,
                                        const std::string& task_type = "") {
  nlohmann::json pod = nlohmann::json::parse(ReadFile(FixturePath("filter-request-nodecache.json")))["Pod"];
  if (!uid.empty()) pod["metadata"]["uid"] = uid;
  if (!fraction.empty()) pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  if (!task_type.empty()) pod["metadata"]["labels"]["tessera.io/task-type"] = task_type;
  return pod;
}

/// A service over `cluster_yaml` (the cluster-file format) and `policy_yaml`.
class ServiceFixture {
 public:
  explicit ServiceFixture(std::string_view cluster_yaml = "", std::string_view policy_yaml = kBinpackPolicy)
      : registry_(NewBuiltinRegistry()) {
    if (!cluster_yaml.empty()) {
      const absl::Status st = LoadClusterText(cluster_yaml, "cluster.yaml", model_);
      EXPECT_TRUE(st.ok()) << st;
    }
    model_.Publish();
    absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(policy_yaml, "policy.yaml", registry_);
    EXPECT_TRUE(policy.ok()) << policy.status();
    if (policy.ok()) profiles_ = policy->profiles;  // the policy's pools, as the program reads them
    service_ = std::make_unique<ExtenderService>(handle_, metrics_);
  }

  /// The tenants the service reads from now on (none until set).
  void set_tenants(std::vector<TenantSpec> tenants) {
    absl::StatusOr<TenantSet> set = TenantSet::Create(std::move(tenants));
    EXPECT_TRUE(set.ok()) << set.status();
    tenants_ = std::make_shared<const TenantSet>(*std::move(set));
  }

  [[nodiscard]] const ExtenderService& service() const { return *service_; }
  ClusterModel& model() { return model_; }
  MetricsRegistry& metrics() { return metrics_; }
  /// The pods filter refused on every node (what the GPU map lists).
  RecentRefusals& refusals() { return refusals_; }

 private:
  // Reads what the fixture holds now: the model's snapshot, the policy, the tenants set last.
  class Handle final : public SchedulerHandle {
   public:
    explicit Handle(const ServiceFixture& f) : f_(f) {}
    [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Snapshot() const override { return f_.model_.Current(); }
    [[nodiscard]] std::shared_ptr<const ProfileSet> Profiles() const override { return f_.profiles_; }
    [[nodiscard]] std::shared_ptr<const TenantSet> Tenants() const override { return f_.tenants_; }
    [[nodiscard]] RecentRefusals* refusals() const override { return &f_.refusals_; }

   private:
    const ServiceFixture& f_;
  };

  PluginRegistry registry_;
  ClusterModel model_;
  MetricsRegistry metrics_;
  std::shared_ptr<const ProfileSet> profiles_;
  std::shared_ptr<const TenantSet> tenants_;
  mutable RecentRefusals refusals_;
  Handle handle_{*this};
  std::unique_ptr<ExtenderService> service_;
};

}  // namespace tessera::testing
