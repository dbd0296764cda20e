// Decoding kube-scheduler's ExtenderArgs (filter and prioritize requests).
//
// Full NodeLists are megabytes, and simdjson's DOM costs ~15 bytes per byte of
// the text it holds, so a filter or prioritize body is never parsed whole:
// JsonScanner (k8s/internal/json_scan.h) walks it once, checking its syntax,
// and the Pod and each Node object are parsed alone with simdjson (each at
// most kMaxObjectBytes). The fields Tessera reads are copied out of each
// object's parse into ExtenderArgs::text; node names and the Node objects'
// text point into the body. So decoding holds the body plus a small fraction
// of it (benchmarks/request_memory_benchmark.cc measures it), whatever the
// body's size. The decoded args are valid while the body is.
#pragma once

#include <deque>
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
  /// spec.priority (the API server copies it from the PriorityClass); 0 when absent.
  int32_t priority = 0;
  /// spec.preemptionPolicy is "Never": the pod waits rather than evict others.
  bool never_preempts = false;
  /// metadata.labels["tessera.io/tenant"]; empty when absent (the tenant is
  /// then found by namespace).
  std::string_view tenant_label;
  /// metadata.labels["tessera.io/task-type"] as sent, unchecked (the pool
  /// routing checks it: k8s/label_value.h); empty when absent.
  std::string_view task_type;
};

/// The parts of a v1.Node that Tessera reads, and the whole object to echo.
/// Move-only: `inventory.gfd_mig_counts` views `gfd_mig_counts`, whose
/// elements stay in place when the node moves (a copy would view the original's).
struct WireNode {
  WireNode() = default;
  WireNode(WireNode&&) = default;
  WireNode& operator=(WireNode&&) = default;
  WireNode(const WireNode&) = delete;
  WireNode& operator=(const WireNode&) = delete;

  std::string_view name;
  NodeInventoryFields inventory;
  /// GPU Feature Discovery's labels nvidia.com/mig-<profile>.count.
  std::vector<GfdMigCount> gfd_mig_counts;
  /// The Node object's text as sent, echoed in the filter answer's `Nodes`
  /// (empty when decoded from a DOM element: DecodeNodeObject).
  std::string_view json;
  std::optional<std::string_view> allocatable_cpu{};     ///< status.allocatable["cpu"]
  std::optional<std::string_view> allocatable_memory{};  ///< status.allocatable["memory"]
  /// The first of the labels kNodePoolLabels (k8s/annotations.h) present.
  std::optional<std::string_view> pool{};
};

/// `ExtenderArgs {Pod, Nodes, NodeNames}`; exactly one node form is set.
/// Move-only: the views point into the body and into `text`, whose strings
/// stay in place when the deque moves (a copy would point into the original).
struct ExtenderArgs {
  ExtenderArgs() = default;
  ExtenderArgs(ExtenderArgs&&) = default;
  ExtenderArgs& operator=(ExtenderArgs&&) = default;
  ExtenderArgs(const ExtenderArgs&) = delete;
  ExtenderArgs& operator=(const ExtenderArgs&) = delete;

  WirePod pod;
  /// nodeCacheCapable=false: full Node objects (`Nodes.items`).
  std::optional<std::vector<WireNode>> nodes;
  /// nodeCacheCapable=true: names only.
  std::optional<std::vector<std::string_view>> node_names;
  /// Every NodeNames entry was written without an escape, so none holds a
  /// quote, backslash or control character (JSON allows them only escaped):
  /// an answer may copy the names as they are, unchecked.
  bool node_names_plain = false;
  /// The decoded strings that are not a piece of the body (the fields read
  /// from each object's own parse, names written with escapes).
  std::deque<std::string> text;
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

/// The largest Pod or Node object (and bind or preempt body) decoded: the
/// API server refuses request bodies over 3 MB and etcd stores at most
/// 1.5 MiB an object, so no real object comes near it. An object is parsed
/// alone into simdjson's DOM (~15 bytes per byte), so this bounds a request's
/// parse to ~60 MiB besides its body.
inline constexpr size_t kMaxObjectBytes = size_t{4} << 20;

/// Decodes `body`. Errors are InvalidArgument with a reason that names the
/// field, e.g. "ExtenderArgs.Pod is missing" or
/// "Nodes.items[2].metadata.name must be a string, got number";
/// ResourceExhausted for more than kMaxNodesPerRequest nodes or an object
/// over kMaxObjectBytes.
/// \param parser reused between calls: its buffers grow to the largest
///   object parsed (at most kMaxObjectBytes), not to the body.
absl::StatusOr<ExtenderArgs> DecodeExtenderArgs(std::string_view body, simdjson::dom::parser& parser);

/// Decodes one v1.Pod or v1.Node object (from the wire or the API server);
/// `path` prefixes error messages ("Pods.items[3]"). Views point into `pod`/`node`.
absl::StatusOr<WirePod> DecodePodObject(simdjson::dom::element pod, std::string_view path);
absl::StatusOr<WireNode> DecodeNodeObject(simdjson::dom::element node, std::string_view path);

/// Decodes a bind request; every field is required and must be a non-empty
/// string. ResourceExhausted for a body over kMaxObjectBytes. The decoded args
/// point into the parser's document.
absl::StatusOr<ExtenderBindingArgs> DecodeBindingArgs(std::string_view body, simdjson::dom::parser& parser);

/// Decodes a preempt request, in either victims form. ResourceExhausted for a
/// body over kMaxObjectBytes. The decoded args point into the parser's document.
absl::StatusOr<ExtenderPreemptionArgs> DecodePreemptionArgs(std::string_view body, simdjson::dom::parser& parser);

}  // namespace tessera::k8s
