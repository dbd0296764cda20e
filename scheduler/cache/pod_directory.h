// The pods Tessera may be asked to bind: what the watch last said of each pod
// that carries Tessera annotations. Bind looks pods up here, because
// kube-scheduler's bind request names the pod but does not carry it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/model/host_resources.h"

namespace tessera {

struct PodRecord {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string node_name;  ///< spec.nodeName; empty while pending.
  std::string phase;      ///< status.phase
  /// When the pod was bound (its PodScheduled condition turned True);
  /// InfinitePast when unknown.
  absl::Time scheduled_at = absl::InfinitePast();
  absl::flat_hash_map<std::string, std::string> annotations;  ///< Only the `tessera.io/` ones.
  /// Effective CPU and memory request (k8s/pod_host_request.h); zero when
  /// `host_error` says why it could not be read.
  HostRequest host{};
  absl::Status host_error{};
  int32_t priority = 0;       ///< spec.priority
  std::string tenant_label{};  ///< metadata.labels["tessera.io/tenant"]; empty when absent.
  std::string task_type{};     ///< metadata.labels["tessera.io/task-type"] as written; empty when absent.

  bool operator==(const PodRecord&) const = default;
};

/// Thread-safe map uid -> PodRecord.
class PodDirectory {
 public:
  void Upsert(PodRecord pod);
  void Remove(std::string_view uid);
  [[nodiscard]] std::optional<PodRecord> Find(std::string_view uid) const;
  [[nodiscard]] size_t size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, PodRecord> pods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
