// The pod writes bind makes on the API server, behind an interface so that
// bind's logic is tested without a server and benchmarked without one.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/cache/pod_directory.h"

namespace tessera::k8s {

struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

/// The pod a holding of the cluster model is (its `pod_key` is "namespace/name").
inline PodRef PodRefOf(const PodHolding& pod) {
  const std::string_view key = pod.pod_key;
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return PodRef{"", pod.pod_key, pod.uid};
  return PodRef{std::string(key.substr(0, slash)), std::string(key.substr(slash + 1)), pod.uid};
}

/// Errors: NotFound (the pod is gone), FailedPrecondition (the pod was
/// replaced by one with another uid, or is already bound: 409, or 422 naming
/// metadata.uid for a patch), Unavailable or
/// DeadlineExceeded (the server or the connection failed, or `deadline`
/// passed), PermissionDenied (401/403: RBAC); Evict adds ResourceExhausted.
///
/// Thread-safe: binds call it from several threads at once.
class PodApi {
 public:
  /// Annotations a write sets on the pod.
  using Annotations = std::vector<std::pair<std::string, std::string>>;

  virtual ~PodApi() = default;
  /// Reads the pod, giving up at `deadline`.
  virtual absl::StatusOr<PodRecord> GetPod(std::string_view namespace_name, std::string_view name,
                                           absl::Time deadline) = 0;
  /// Sets annotations on the pod if its uid is still `pod.uid` (the uid in
  /// the patch is a precondition the API server checks).
  virtual absl::Status Annotate(const PodRef& pod, const Annotations& annotations) = 0;
  /// Creates the pod's Binding to `node`, with `pod.uid` as a precondition.
  /// The API server copies the Binding's `annotations` onto the pod in the
  /// same write as spec.nodeName: they land together or not at all. Gives up
  /// at `deadline`; a DeadlineExceeded Binding may still land (the server
  /// may have written it after we stopped waiting).
  virtual absl::Status Bind(const PodRef& pod, std::string_view node, const Annotations& annotations,
                            absl::Time deadline) = 0;
  /// Asks the API server to evict the pod (the policy/v1 Eviction of
  /// `pods/{name}/eviction`), with `pod.uid` as a precondition, so that a pod
  /// that replaced the one chosen under the same name is never evicted. The
  /// server deletes the pod unless a PodDisruptionBudget forbids it now.
  /// \return OK when the eviction was accepted; NotFound when the pod is
  ///   already gone (for a caller that wants it gone, that is done);
  ///   ResourceExhausted (429) when a PodDisruptionBudget forbids it now, with
  ///   the server's message and its causes, which name the budget;
  ///   FailedPrecondition (409) when the pod under that name has another uid.
  ///   Gives up at `deadline` (DeadlineExceeded).
  /// What kube-apiserver v1.26 does (test/control_plane/eviction_test.cc):
  /// * Budgets guard only Running pods: a Pending pod (bound or not; bound
  ///   pods stay Pending until their kubelet starts them) is evicted whatever
  ///   its budgets say.
  /// * Accepted, the pod gets a DisruptionTarget condition and a deletion. A
  ///   pod that is unbound, finished, or whose terminationGracePeriodSeconds
  ///   is 0 is gone when this returns; any other bound pod is only marked
  ///   (metadata.deletionTimestamp, now + its grace period) and goes when its
  ///   kubelet has stopped it: its resources are not free yet.
  /// * A uid mismatch on a pod that is not Running is a conflict the server
  ///   retries for ~10 s before it answers 409: a `deadline` sooner than that
  ///   gives DeadlineExceeded instead.
  virtual absl::Status Evict(const PodRef& pod, absl::Time deadline) = 0;
  /// Sets the pending pod's status.nominatedNodeName to `node` (a merge patch
  /// of the status subresource, `pod.uid` as a precondition), as
  /// kube-scheduler does after preempting for it: the node it is expected to
  /// go to once the victims are gone. An empty `node` clears it.
  /// \return FailedPrecondition when the pod under that name has another uid
  ///   (the server answers 422, "metadata.uid: field is immutable"); NotFound
  ///   when it is gone. Gives up at `deadline`.
  virtual absl::Status Nominate(const PodRef& pod, std::string_view node, absl::Time deadline) = 0;
};

/// PodApi over the API server.
class KubePodApi final : public PodApi {
 public:
  explicit KubePodApi(ApiClient& client) : client_(client) {}
  absl::StatusOr<PodRecord> GetPod(std::string_view namespace_name, std::string_view name,
                                   absl::Time deadline) override;
  absl::Status Annotate(const PodRef& pod, const Annotations& annotations) override;
  absl::Status Bind(const PodRef& pod, std::string_view node, const Annotations& annotations,
                    absl::Time deadline) override;
  absl::Status Evict(const PodRef& pod, absl::Time deadline) override;
  absl::Status Nominate(const PodRef& pod, std::string_view node, absl::Time deadline) override;

 private:
  ApiClient& client_;
};

}  // namespace tessera::k8s
