// Decoding kube-scheduler's ExtenderArgs (filter and prioritize requests).
//
// Full NodeLists are megabytes, so this reads them with simdjson's DOM and
// keeps views of only the fields Tessera needs; nothing else is copied. The
// decoded args point into the parser's document: they are valid until the
// parser parses again.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "absl/status/statusor.h"
#include "k8s/node_inventory.h"
#include "k8s/pod_gpu_request.h"
#include "scheduler/model/host_resources.h"

namespace tessera::k8s {

/// The parts of a v1.Pod that Tessera reads.
struct WirePod {
  std::string_view name;
  std::string_view namespace_name;
  std::string_view uid;
  Annotations annotations;  ///< Only the `tessera.io/` ones.
  /// The pod's effective CPU and memory request (k8s/pod_host_request.h);
  /// zero when `host_error` says why it could not be read.
  HostRequest host{};
  absl::Status host_error{};
};

/// The parts of a v1.Node that Tessera reads, and the whole object to echo.
struct WireNode {
  std::string_view name;
  NodeInventoryFields inventory;
  simdjson::dom::element object;  ///< The Node as sent, for the `Nodes` answer.
  std::optional<std::string_view> allocatable_cpu{};     ///< status.allocatable["cpu"]
  std::optional<std::string_view> allocatable_memory{};  ///< status.allocatable["memory"]
};

/// `ExtenderArgs {Pod, Nodes, NodeNames}`; exactly one node form is set.
struct ExtenderArgs {
  WirePod pod;
  /// nodeCacheCapable=false: full Node objects (`Nodes.items`).
  std::optional<std::vector<WireNode>> nodes;
  /// nodeCacheCapable=true: names only.
  std::optional<std::vector<std::string_view>> node_names;
};

/// `ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}`.
struct ExtenderBindingArgs {
  std::string_view pod_name;
  std::string_view pod_namespace;
  std::string_view pod_uid;
  std::string_view node;
};

/// The victims kube-scheduler proposes on one node (by pod UID in both forms).
struct NodeVictims {
  std::string_view node;
  std::vector<std::string_view> pod_uids;
  int64_t num_pdb_violations = 0;
};

/// `ExtenderPreemptionArgs {Pod, NodeNameToVictims, NodeNameToMetaVictims}`.
struct ExtenderPreemptionArgs {
  WirePod pod;
  bool meta_victims = false;  ///< True when the request used NodeNameToMetaVictims.
  std::vector<NodeVictims> victims;
};

/// The most nodes one filter or prioritize request may name. kube-scheduler
/// supports clusters of 5000 nodes; a list twenty times that is a mistake or
/// an attack, and its answer (a reason per node) would be larger still.
inline constexpr size_t kMaxNodesPerRequest = 100'000;

/// Decodes `body`. Errors are InvalidArgument with a reason that names the
/// field, e.g. "ExtenderArgs.Pod is missing" or
/// "Nodes.items[2].metadata.name must be a string, got number";
/// ResourceExhausted for more than kMaxNodesPerRequest nodes.
/// \param parser reused between calls (its buffers grow to the largest body).
absl::StatusOr<ExtenderArgs> DecodeExtenderArgs(std::string_view body, simdjson::dom::parser& parser);

/// Decodes one v1.Pod or v1.Node object (from the wire or the API server);
/// `path` prefixes error messages ("Pods.items[3]"). Views point into `pod`/`node`.
absl::StatusOr<WirePod> DecodePodObject(simdjson::dom::element pod, std::string_view path);
absl::StatusOr<WireNode> DecodeNodeObject(simdjson::dom::element node, std::string_view path);

/// Decodes a bind request; every field is required and must be a non-empty string.
absl::StatusOr<ExtenderBindingArgs> DecodeBindingArgs(std::string_view body, simdjson::dom::parser& parser);

/// Decodes a preempt request, in either victims form.
absl::StatusOr<ExtenderPreemptionArgs> DecodePreemptionArgs(std::string_view body, simdjson::dom::parser& parser);

}  // namespace tessera::k8s
