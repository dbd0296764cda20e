// An ExtenderService over the demo cluster (config/examples/demo-cluster.yaml)
// for the fuzz targets that send whole requests.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/cluster_file.h"
#include "config/policy_loader.h"
#include "extender/service/extender_service.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::fuzz {

// The one snapshot and policy the targets send requests against; nothing changes them.
class FixedHandle final : public SchedulerHandle {
 public:
  std::shared_ptr<const ClusterSnapshot> snapshot;
  std::shared_ptr<const ProfileSet> profiles;
  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Snapshot() const override { return snapshot; }
  [[nodiscard]] std::shared_ptr<const ProfileSet> Profiles() const override { return profiles; }
};

/// The service, the model and the profile behind it; built once per process.
class FuzzService {
 public:
  /// \param policy a file of config/examples/.
  explicit FuzzService(const std::string& policy) : registry_(NewBuiltinRegistry()) {
    const std::string examples = std::string(TESSERA_SOURCE_DIR) + "/config/examples/";
    Check(LoadClusterFile(examples + "demo-cluster.yaml", model_));
    handle_.snapshot = model_.Publish();
    absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyFile(examples + policy, registry_);
    Check(profile.status());
    handle_.profiles = ProfileSet::Single(*profile);
    service_ = std::make_unique<ExtenderService>(handle_, metrics_);
  }

  [[nodiscard]] const ExtenderService& service() const { return *service_; }
  MetricsRegistry& metrics() { return metrics_; }

 private:
  static void Check(const absl::Status& status) {
    if (status.ok()) return;
    std::fprintf(stderr, "fuzz setup failed: %s\n", std::string(status.message()).c_str());
    std::abort();
  }

  PluginRegistry registry_;
  ClusterModel model_;
  MetricsRegistry metrics_;
  FixedHandle handle_;
  std::unique_ptr<ExtenderService> service_;
};

}  // namespace tessera::fuzz
