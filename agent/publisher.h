// Puts the agent's annotations on its Node, and touches the Node only when
// they differ from what it already carries: a fleet of agents re-publishing
// every minute costs the API server one GET per node and no write (and no
// watch event for every scheduler replica) while nothing changes.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "k8s/client/api_client.h"

namespace tessera::agent {

/// The annotations the agent owns on its node: key -> value, or nullopt to
/// remove the annotation.
using DesiredAnnotations = std::map<std::string, std::optional<std::string>>;

class NodePublisher {
 public:
  NodePublisher(k8s::ApiClient& api, std::string node_name) : api_(api), node_name_(std::move(node_name)) {}

  /// GETs the node and, when an annotation of `desired` differs from it, one
  /// merge PATCH of those annotations only (others' annotations stay as they are).
  /// \return whether it patched. NotFound when the node does not exist
  ///   (--node-name), PermissionDenied (RBAC: get and patch on nodes),
  ///   Unavailable / DeadlineExceeded for the server or the connection.
  absl::StatusOr<bool> Publish(const DesiredAnnotations& desired);

  [[nodiscard]] const std::string& node_name() const { return node_name_; }

 private:
  k8s::ApiClient& api_;
  std::string node_name_;
};

}  // namespace tessera::agent
