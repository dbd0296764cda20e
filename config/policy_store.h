// The scheduling policy in force, and its reload.
//
// Request threads call Current() once per request and use that profile
// throughout, so a reload never changes the rules halfway through a request.
// A reload builds a whole new profile from the file and publishes it only if
// it is valid; an invalid file leaves the old policy in force (a typo pushed
// to a ConfigMap must not stop scheduling) and is reported to `on_reload`.
//
// main.cc triggers reloads: Reload() on SIGHUP, ReloadIfChanged() from a timer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "config/file_util.h"
#include "config/policy_loader.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/registry.h"

namespace tessera {

class PolicyStore {
 public:
  /// Called after every reload attempt with OK or the full error list. Runs on
  /// the thread that reloads, with reloads serialised; it must not call
  /// Reload() or ReloadIfChanged() (that would deadlock).
  using ReloadCallback = std::function<void(const absl::Status&)>;

  /// Loads the policy file at `path`.
  /// \param registry the plugin factories; must outlive the store.
  /// \param on_reload may be empty. Not called for this first load.
  /// \return the load's error list if the file is unreadable or invalid: at
  ///   start-up there is no old policy to fall back on.
  static absl::StatusOr<std::unique_ptr<PolicyStore>> Open(std::string path,
                                                           const PluginRegistry& registry,
                                                           ReloadCallback on_reload);

  PolicyStore(const PolicyStore&) = delete;
  PolicyStore& operator=(const PolicyStore&) = delete;

  /// The profile in force; never null. Cheap (a lock and a shared_ptr copy)
  /// and safe from any thread.
  [[nodiscard]] std::shared_ptr<const Profile> Current() const;

  /// The file's `telemetry:` section in force (nullopt: none), published
  /// together with the profile: a reload that fails keeps both.
  [[nodiscard]] std::optional<TelemetrySettings> CurrentTelemetry() const;

  /// The file's `tenants:` in force (never null; empty: none), published
  /// with the profile.
  [[nodiscard]] std::shared_ptr<const TenantSet> CurrentTenants() const;

  /// The file's `workloadLearning:` in force (its defaults when absent).
  [[nodiscard]] WorkloadLearning CurrentLearning() const;

  /// Puts a learned workload in force (scheduler/cache/workload_learner.h):
  /// Current() becomes the file's profile with its workload-measuring
  /// plugins measuring against `workload`; null goes back to the file's own
  /// lists. Kept across reloads while the file leaves learning on; ignored
  /// while it turns it off.
  void PublishLearnedWorkload(std::shared_ptr<const TargetWorkload> workload);
  /// Puts `retold`, the learned workload in force told the cluster anew
  /// (WorkloadLearner::Retold), in force where that changes what a plugin
  /// concludes from the cluster (Profile::WithRetoldWorkload); else keeps
  /// the profile in force (and its memo). Nothing while no learned workload
  /// is in force. \return whether it put it in force.
  bool RetellLearnedWorkload(std::shared_ptr<const TargetWorkload> retold);
  /// The learned workload Current() measures against; null when it is the
  /// file's (not learned yet, learning off, or no plugin takes a workload).
  [[nodiscard]] std::shared_ptr<const TargetWorkload> LearnedWorkload() const;
  /// The profiles in force: Current() (with a learned workload, when one is
  /// in force) and the `pools:` section's as the file says them, as one set
  /// (never null), published with the profile. A request that routes
  /// pods by task type reads this once, and not Current() besides, so that
  /// a reload between two reads cannot mix two policies.
  [[nodiscard]] std::shared_ptr<const ProfileSet> CurrentProfiles() const;

  /// Loads the file again: on success publishes the new profile, on failure
  /// keeps the old one. Either way calls on_reload with the outcome.
  /// \return the outcome.
  absl::Status Reload();

  /// Reloads only if the file changed since the last attempt: a stat(2)
  /// (inode, size, mtime and ctime to the nanosecond). File times tick
  /// coarsely (jiffies; seconds on some file systems), so while the file's
  /// mtime is within kRacyWindowNs of when it was last read, a same-size
  /// rewrite in the same tick would leave the stamp unchanged; then the
  /// content is also read and compared (git's "racy clean" rule).
  /// A file that stays invalid or missing is reported once, not every poll.
  /// \return whether a reload was attempted.
  bool ReloadIfChanged();

  /// How close to its last read a file's mtime must be for ReloadIfChanged to
  /// distrust an unchanged stamp; covers file systems with 2 s timestamps.
  static constexpr int64_t kRacyWindowNs = 2'000'000'000;

  /// The policy file's path.
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  PolicyStore(std::string path, const PluginRegistry& registry, ReloadCallback on_reload)
      : path_(std::move(path)), registry_(registry), on_reload_(std::move(on_reload)) {}

  // Stamps, reads and loads the file; records what it saw for ReloadIfChanged.
  absl::StatusOr<LoadedPolicy> LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  absl::Status ReloadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  const std::string path_;
  const PluginRegistry& registry_;
  const ReloadCallback on_reload_;

  // Serialises reloads (SIGHUP and the poll timer may fire together); held
  // across the load, so it is not the lock Current() takes.
  absl::Mutex reload_mu_;
  // What the last attempt saw. The content is kept whole rather than hashed:
  // a policy file is small, and equality is then exact.
  config_internal::FileStamp stamp_ ABSL_GUARDED_BY(reload_mu_);
  std::optional<std::string> content_ ABSL_GUARDED_BY(reload_mu_);  // nullopt: unreadable
  // Wall-clock time (Unix ns) just before the file was last read.
  int64_t read_at_ns_ ABSL_GUARDED_BY(reload_mu_) = 0;

  // profiles_ from file_profiles_ and learned_.
  void PutInForceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(current_mu_);

  mutable absl::Mutex current_mu_;
  std::shared_ptr<const TargetWorkload> learned_ ABSL_GUARDED_BY(current_mu_);
  WorkloadLearning learning_ ABSL_GUARDED_BY(current_mu_);
  std::optional<TelemetrySettings> telemetry_ ABSL_GUARDED_BY(current_mu_);
  std::shared_ptr<const TenantSet> tenants_ ABSL_GUARDED_BY(current_mu_);
  // In force: the default profile measuring against learned_ (when set),
  // the pools' as the file says them.
  std::shared_ptr<const ProfileSet> profiles_ ABSL_GUARDED_BY(current_mu_);
  std::shared_ptr<const ProfileSet> file_profiles_ ABSL_GUARDED_BY(current_mu_);  // as the file says
};

}  // namespace tessera
