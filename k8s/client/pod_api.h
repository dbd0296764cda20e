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
#include "scheduler/cache/pod_directory.h"

namespace tessera::k8s {

struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

/// Errors: NotFound (the pod is gone), FailedPrecondition (409: the pod was
/// replaced by one with another uid, or is already bound), Unavailable or
/// DeadlineExceeded (the server or the connection failed, or `deadline`
/// passed), PermissionDenied (401/403: RBAC).
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

 private:
  ApiClient& client_;
};

}  // namespace tessera::k8s
