// The API server's pods, in memory, behind k8s::PodApi: for tests of the code
// that writes pods (bind, preemption) without a server, where every failure
// and race can be staged exactly. It records every call, in order, so tests
// can assert on what was written. (Tests of KubePodApi itself, over HTTP, use
// fake_api_server.h.)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/pod_api.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::testing {

/// Thread-safe, as PodApi must be.
class FakePodApi final : public k8s::PodApi {
 public:
  /// Stores the pod (by namespace/name), replacing one of the same name.
  void Add(PodRecord pod) {
    absl::MutexLock lock(&mu_);
    std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    pods_[key] = std::move(pod);
  }
  /// The pod stored under "namespace/name"; nullopt when absent (never added,
  /// or evicted).
  std::optional<PodRecord> Pod(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  /// Every call so far, in order: "get ns/name", "annotate ns/name",
  /// "bind ns/name node[ with annotations]", "evict ns/name",
  /// "nominate ns/name node" ("nominate ns/name -" to clear).
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  /// The deadline of each GetPod, Bind, Evict and Nominate call, in order.
  std::vector<absl::Time> deadlines() {
    absl::MutexLock lock(&mu_);
    return deadlines_;
  }
  /// Every Bind answers `s` without binding (OkStatus() to stop).
  void FailBind(absl::Status s) {
    absl::MutexLock lock(&mu_);
    bind_error_ = std::move(s);
  }
  /// The next Evict answers `s` without evicting, e.g.
  /// absl::ResourceExhaustedError("... disruption budget web-pdb ...") as the
  /// API server's 429 when a PodDisruptionBudget forbids it.
  void FailNextEvict(absl::Status s) {
    absl::MutexLock lock(&mu_);
    evict_errors_.push_back(std::move(s));
  }
  /// The pods evicted (accepted evictions only), in order.
  std::vector<k8s::PodRef> evicted() {
    absl::MutexLock lock(&mu_);
    return evicted_;
  }
  /// uid -> status.nominatedNodeName of the pods nominated and not cleared.
  std::map<std::string, std::string> nominated() {
    absl::MutexLock lock(&mu_);
    return nominated_;
  }

  absl::StatusOr<PodRecord> GetPod(std::string_view ns, std::string_view name, absl::Time deadline) override {
    absl::MutexLock lock(&mu_);
    deadlines_.push_back(deadline);
    calls_.push_back(absl::StrCat("get ", Absl(ns), "/", Absl(name)));
    auto it = pods_.find(absl::StrCat(Absl(ns), "/", Absl(name)));
    if (it == pods_.end()) return absl::NotFoundError("pods \"x\" not found");
    return it->second;
  }
  absl::Status Annotate(const k8s::PodRef& pod, const Annotations& annotations) override {
    absl::MutexLock lock(&mu_);
    const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    calls_.push_back(absl::StrCat("annotate ", key));
    auto it = pods_.find(key);
    if (it == pods_.end()) return absl::NotFoundError("not found");
    if (it->second.uid != pod.uid) return absl::FailedPreconditionError("Precondition failed: UID");
    for (const auto& [k, v] : annotations) it->second.annotations[k] = v;
    return absl::OkStatus();
  }
  absl::Status Bind(const k8s::PodRef& pod, std::string_view node, const Annotations& annotations,
                    absl::Time deadline) override {
    absl::MutexLock lock(&mu_);
    deadlines_.push_back(deadline);
    const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    calls_.push_back(absl::StrCat("bind ", key, " ", Absl(node), annotations.empty() ? "" : " with annotations"));
    if (!bind_error_.ok()) return bind_error_;
    auto it = pods_.find(key);
    if (it == pods_.end()) return absl::NotFoundError("not found");
    if (it->second.uid != pod.uid) return absl::FailedPreconditionError("Precondition failed: UID");
    if (!it->second.node_name.empty()) return absl::FailedPreconditionError("pod is already assigned to a node");
    // As the API server: the annotations and the node in one write.
    it->second.node_name = std::string(node);
    for (const auto& [k, v] : annotations) it->second.annotations[k] = v;
    return absl::OkStatus();
  }
  /// An accepted eviction removes the pod at once, as the API server does
  /// for a pod whose grace period is 0 (KubePodApi::Evict says when not).
  absl::Status Evict(const k8s::PodRef& pod, absl::Time deadline) override {
    absl::MutexLock lock(&mu_);
    deadlines_.push_back(deadline);
    const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    calls_.push_back(absl::StrCat("evict ", key));
    if (!evict_errors_.empty()) {
      absl::Status refused = std::move(evict_errors_.front());
      evict_errors_.erase(evict_errors_.begin());
      return refused;
    }
    auto it = pods_.find(key);
    if (it == pods_.end()) return absl::NotFoundError(absl::StrCat("pods \"", pod.name, "\" not found"));
    if (it->second.uid != pod.uid) return absl::FailedPreconditionError("the UID in the precondition does not match");
    pods_.erase(it);
    nominated_.erase(pod.uid);
    evicted_.push_back(pod);
    return absl::OkStatus();
  }
  absl::Status Nominate(const k8s::PodRef& pod, std::string_view node, absl::Time deadline) override {
    absl::MutexLock lock(&mu_);
    deadlines_.push_back(deadline);
    const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
    calls_.push_back(absl::StrCat("nominate ", key, " ", node.empty() ? "-" : Absl(node)));
    auto it = pods_.find(key);
    if (it == pods_.end()) return absl::NotFoundError("not found");
    if (it->second.uid != pod.uid) return absl::FailedPreconditionError("metadata.uid: field is immutable");
    if (node.empty()) {
      nominated_.erase(pod.uid);
    } else {
      nominated_[pod.uid] = std::string(node);
    }
    return absl::OkStatus();
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, PodRecord> pods_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
  absl::Status bind_error_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> evict_errors_ ABSL_GUARDED_BY(mu_);
  std::vector<k8s::PodRef> evicted_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> nominated_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::testing
