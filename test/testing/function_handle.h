// A fake of the program as the extender service sees it, for tests and
// benchmarks: each answer of the SchedulerHandle is a function the caller sets.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "extender/service/scheduler_handle.h"

namespace tessera::testing {

/// A handle whose answers are functions a test sets: a fake of the program,
/// one profile or a set with pools. Unset functions answer as SchedulerHandle's defaults.
struct FunctionHandle final : SchedulerHandle {
  std::function<std::shared_ptr<const TenantSet>()> tenants;
  WorkerPool* pool = nullptr;
  std::function<std::shared_ptr<const ClusterSnapshot>()> snapshot;
  std::function<std::shared_ptr<const Profile>()> profile;
  std::function<std::shared_ptr<const ProfileSet>()> profiles;  ///< set: read in place of `profile` (pools)
  std::function<bool()> synced;
  std::function<void(std::string_view uid, const PodGpuRequest& request)> arrived;
  Binder* bind = nullptr;
  RecentRefusals* refusal_log = nullptr;

  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Snapshot() const override { return snapshot(); }
  [[nodiscard]] std::shared_ptr<const ProfileSet> Profiles() const override {
    return profiles ? profiles() : ProfileSet::Single(profile());
  }
  [[nodiscard]] bool Synced() const override { return !synced || synced(); }
  [[nodiscard]] std::shared_ptr<const TenantSet> Tenants() const override { return tenants ? tenants() : nullptr; }
  [[nodiscard]] Binder* binder() const override { return bind; }
  [[nodiscard]] WorkerPool* score_pool() const override { return pool; }
  [[nodiscard]] RecentRefusals* refusals() const override { return refusal_log; }
  void PodArrived(std::string_view uid, const PodGpuRequest& request) const override {
    if (arrived) arrived(uid, request);
  }
};

}  // namespace tessera::testing
