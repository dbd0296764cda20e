#include "config/policy_store.h"

#include <utility>

#include "absl/time/clock.h"
#include "config/policy_loader.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<PolicyStore>> PolicyStore::Open(std::string path,
                                                               const PluginRegistry& registry,
                                                               ReloadCallback on_reload) {
  std::unique_ptr<PolicyStore> store(new PolicyStore(std::move(path), registry, std::move(on_reload)));
  absl::MutexLock reload_lock(&store->reload_mu_);
  absl::StatusOr<LoadedPolicy> policy = store->LoadLocked();
  if (!policy.ok()) return policy.status();
  absl::MutexLock current_lock(&store->current_mu_);
  store->telemetry_ = std::move(policy->telemetry);
  store->tenants_ = std::move(policy->tenants);
  store->file_profiles_ = store->profiles_ = std::move(policy->profiles);
  store->learning_ = policy->learning;
  return store;
}

WorkloadLearning PolicyStore::CurrentLearning() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return learning_;
}

void PolicyStore::PublishLearnedWorkload(std::shared_ptr<const TargetWorkload> workload) {
  absl::MutexLock lock(&current_mu_);
  if (workload == learned_) return;
  learned_ = learning_.enabled ? std::move(workload) : nullptr;
  PutInForceLocked();
}

bool PolicyStore::RetellLearnedWorkload(std::shared_ptr<const TargetWorkload> retold) {
  std::shared_ptr<const ProfileSet> file, in_force;
  {
    absl::ReaderMutexLock lock(&current_mu_);
    if (retold == nullptr || !learning_.enabled || learned_ == nullptr) return false;
    file = file_profiles_;
    in_force = profiles_;
  }
  // Built outside the lock: requests read Current() meanwhile.
  std::shared_ptr<const Profile> candidate =
      file->default_profile()->WithRetoldWorkload(retold, *in_force->default_profile());
  if (candidate == nullptr) return false;
  absl::MutexLock lock(&current_mu_);
  // A reload or a newly learned mix in between: theirs is newer.
  if (profiles_ != in_force || file_profiles_ != file || !learning_.enabled) return false;
  learned_ = std::move(retold);
  profiles_ = file_profiles_->WithDefault(std::move(candidate));
  return true;
}

std::shared_ptr<const TargetWorkload> PolicyStore::LearnedWorkload() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return profiles_ == file_profiles_ ? nullptr : learned_;
}

void PolicyStore::PutInForceLocked() {
  std::shared_ptr<const Profile> learned =
      learned_ != nullptr ? file_profiles_->default_profile()->WithWorkload(learned_) : nullptr;
  // The pools keep the file's profiles: the mix is learned over every
  // arrival, not per pool, and a pool's own list describes its pods better.
  profiles_ = learned != nullptr ? file_profiles_->WithDefault(std::move(learned)) : file_profiles_;
}

std::shared_ptr<const Profile> PolicyStore::Current() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return profiles_->default_profile();
}

std::optional<TelemetrySettings> PolicyStore::CurrentTelemetry() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return telemetry_;
}

std::shared_ptr<const TenantSet> PolicyStore::CurrentTenants() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return tenants_;
}

std::shared_ptr<const ProfileSet> PolicyStore::CurrentProfiles() const {
  absl::ReaderMutexLock lock(&current_mu_);
  return profiles_;
}

absl::StatusOr<LoadedPolicy> PolicyStore::LoadLocked() {
  // Stamp before reading: if the file changes in between, the next poll sees
  // a new stamp and loads it again, rather than missing the change.
  stamp_ = config_internal::StampFile(path_);
  read_at_ns_ = absl::GetCurrentTimeNanos();
  absl::StatusOr<std::string> text = config_internal::ReadPolicyFile(path_);
  if (!text.ok()) {
    content_.reset();
    return text.status();
  }
  content_ = *text;
  return LoadPolicyDocument(*content_, path_, registry_);
}

absl::Status PolicyStore::ReloadLocked() {
  absl::StatusOr<LoadedPolicy> policy = LoadLocked();
  absl::Status status = policy.status();
  if (policy.ok()) {
    absl::MutexLock lock(&current_mu_);
    telemetry_ = std::move(policy->telemetry);
    tenants_ = std::move(policy->tenants);
    file_profiles_ = std::move(policy->profiles);
    learning_ = policy->learning;
    // The mix learned so far carries over (the learner restarts it if the
    // new file changed how it is learned, and says so with its next call).
    if (!learning_.enabled) learned_ = nullptr;
    PutInForceLocked();
  }
  if (on_reload_) on_reload_(status);
  return status;
}

absl::Status PolicyStore::Reload() {
  absl::MutexLock lock(&reload_mu_);
  return ReloadLocked();
}

bool PolicyStore::ReloadIfChanged() {
  absl::MutexLock lock(&reload_mu_);
  const config_internal::FileStamp stamp = config_internal::StampFile(path_);
  if (stamp != stamp_) {
    ReloadLocked().IgnoreError();  // Reported through on_reload.
    return true;
  }
  if (stamp.error != 0 || stamp.mtime_ns < read_at_ns_ - kRacyWindowNs) return false;
  // Racy: the stamp cannot vouch for the content, so compare the content.
  const int64_t read_at = absl::GetCurrentTimeNanos();
  absl::StatusOr<std::string> text = config_internal::ReadPolicyFile(path_);
  if (!text.ok() || !content_.has_value() || *text != *content_) {
    ReloadLocked().IgnoreError();  // Reported through on_reload.
    return true;
  }
  // Unchanged; once this read is far enough past the mtime, stat alone will do.
  read_at_ns_ = read_at;
  return false;
}

}  // namespace tessera
