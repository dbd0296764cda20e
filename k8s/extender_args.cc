#include "k8s/extender_args.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "k8s/annotations.h"
#include "k8s/pod_host_request.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

std::string_view TypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "array";
    case element_type::OBJECT: return "object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return "number";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "unknown";
}

absl::Status WrongType(std::string_view path, std::string_view want, element e) {
  return absl::InvalidArgumentError(absl::StrFormat("%s must be %s, got %s", path, want, TypeName(e.type())));
}

// The member `key` of `obj`, or nullopt when absent or null.
std::optional<element> Member(object obj, std::string_view key) {
  element e;
  if (obj.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

// An optional object member; absent/null is an empty optional, another type an error.
absl::StatusOr<std::optional<object>> OptionalObject(object parent, std::string_view key, std::string_view path) {
  std::optional<element> e = Member(parent, key);
  if (!e) return std::optional<object>();
  object o;
  if (e->get(o) != simdjson::SUCCESS) return WrongType(path, "an object", *e);
  return std::optional<object>(o);
}

absl::StatusOr<std::string_view> OptionalString(object parent, std::string_view key, std::string_view path) {
  std::optional<element> e = Member(parent, key);
  if (!e) return std::string_view();
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS) return WrongType(path, "a string", *e);
  return s;
}

// Looks `key` up in a map of strings (labels, annotations, allocatable).
absl::StatusOr<std::optional<std::string_view>> StringEntry(const std::optional<object>& map, std::string_view key,
                                                            std::string_view path) {
  if (!map) return std::optional<std::string_view>();
  std::optional<element> e = Member(*map, key);
  if (!e) return std::optional<std::string_view>();
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS) return WrongType(absl::StrCat(Absl(path), "[\"", Absl(key), "\"]"), "a string", *e);
  return std::optional<std::string_view>(s);
}

absl::StatusOr<WirePod> DecodePod(element e, std::string_view path = "ExtenderArgs.Pod") {
  object pod;
  if (e.get(pod) != simdjson::SUCCESS) return WrongType(path, "an object", e);
  WirePod out;
  absl::StatusOr<std::optional<object>> meta = OptionalObject(pod, "metadata", "Pod.metadata");
  if (!meta.ok()) return meta.status();
  if (!*meta) return absl::InvalidArgumentError("Pod.metadata is missing");
  absl::StatusOr<std::string_view> s = OptionalString(**meta, "name", "Pod.metadata.name");
  if (!s.ok()) return s.status();
  out.name = *s;
  if (s = OptionalString(**meta, "namespace", "Pod.metadata.namespace"); !s.ok()) return s.status();
  out.namespace_name = *s;
  if (s = OptionalString(**meta, "uid", "Pod.metadata.uid"); !s.ok()) return s.status();
  out.uid = *s;
  absl::StatusOr<std::optional<object>> annotations =
      OptionalObject(**meta, "annotations", "Pod.metadata.annotations");
  if (!annotations.ok()) return annotations.status();
  if (*annotations) {
    for (auto [key, value] : **annotations) {
      if (key.substr(0, kTesseraPrefix.size()) != kTesseraPrefix) continue;
      std::string_view v;
      if (value.get(v) != simdjson::SUCCESS) {
        return WrongType(absl::StrCat("Pod.metadata.annotations[\"", Absl(key), "\"]"), "a string", value);
      }
      out.annotations.emplace(std::string(key), std::string(v));
    }
  }
  // An unreadable request is the pod's problem, not a malformed body: the
  // caller says so per node (filter) or on the pod (the watch).
  absl::StatusOr<HostRequest> host = DecodePodHostRequest(e, path);
  if (host.ok()) {
    out.host = *host;
  } else {
    out.host_error = host.status();
  }
  return out;
}

absl::StatusOr<WireNode> DecodeNode(element e, const std::string& path) {
  object node;
  if (e.get(node) != simdjson::SUCCESS) return WrongType(path, "an object", e);
  WireNode out;
  out.object = e;
  absl::StatusOr<std::optional<object>> meta = OptionalObject(node, "metadata", path + ".metadata");
  if (!meta.ok()) return meta.status();
  if (!*meta) return absl::InvalidArgumentError(absl::StrCat(path, ".metadata is missing"));
  std::optional<element> name = Member(**meta, "name");
  if (!name) return absl::InvalidArgumentError(absl::StrCat(path, ".metadata.name is missing"));
  if (name->get(out.name) != simdjson::SUCCESS || out.name.empty()) {
    return WrongType(path + ".metadata.name", "a non-empty string", *name);
  }

  absl::StatusOr<std::optional<object>> annotations = OptionalObject(**meta, "annotations", path + ".metadata.annotations");
  if (!annotations.ok()) return annotations.status();
  absl::StatusOr<std::optional<object>> labels = OptionalObject(**meta, "labels", path + ".metadata.labels");
  if (!labels.ok()) return labels.status();
  std::optional<object> allocatable;
  absl::StatusOr<std::optional<object>> status = OptionalObject(node, "status", path + ".status");
  if (!status.ok()) return status.status();
  if (*status) {
    absl::StatusOr<std::optional<object>> a = OptionalObject(**status, "allocatable", path + ".status.allocatable");
    if (!a.ok()) return a.status();
    allocatable = *a;
  }

  struct Field {
    const std::optional<object>* map;
    std::string_view key;
    std::string_view where;
    std::optional<std::string_view>* out;
  };
  const Field fields[] = {
      {&*annotations, kGpuInventory, ".metadata.annotations", &out.inventory.inventory_annotation},
      {&*annotations, kGpuTopology, ".metadata.annotations", &out.inventory.topology_annotation},
      {&*labels, kGfdCountLabel, ".metadata.labels", &out.inventory.gfd_count},
      {&*labels, kGfdProductLabel, ".metadata.labels", &out.inventory.gfd_product},
      {&*labels, kGfdMemoryLabel, ".metadata.labels", &out.inventory.gfd_memory},
      {&allocatable, kGpuResource, ".status.allocatable", &out.inventory.allocatable_gpus},
      {&allocatable, "cpu", ".status.allocatable", &out.allocatable_cpu},
      {&allocatable, "memory", ".status.allocatable", &out.allocatable_memory},
  };
  for (const Field& f : fields) {
    absl::StatusOr<std::optional<std::string_view>> v = StringEntry(*f.map, f.key, path + std::string(f.where));
    if (!v.ok()) return v.status();
    *f.out = *v;
  }
  return out;
}

// Parses `body` as a JSON object; `type` names the expected wire type in errors.
absl::StatusOr<object> ParseObject(std::string_view body, simdjson::dom::parser& parser, std::string_view type) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat("request body is empty; expected %s JSON", type));
  }
  element root;
  if (auto err = parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(root); err) {
    return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", simdjson::error_message(err)));
  }
  object obj;
  if (root.get(obj) != simdjson::SUCCESS) return WrongType(type, "a JSON object", root);
  return obj;
}

absl::StatusOr<std::string_view> RequiredString(object obj, std::string_view key, std::string_view type) {
  const std::string path = absl::StrFormat("%s.%s", type, key);
  std::optional<element> e = Member(obj, key);
  if (!e) return absl::InvalidArgumentError(absl::StrCat(path, " is missing"));
  std::string_view s;
  if (e->get(s) != simdjson::SUCCESS || s.empty()) return WrongType(path, "a non-empty string", *e);
  return s;
}

// Victims on each node: {"node": {"Pods": [<v1.Pod> or {"UID": ..}], "NumPDBViolations": n}}.
absl::StatusOr<std::vector<NodeVictims>> DecodeVictims(element e, std::string_view field, bool meta) {
  object by_node;
  if (e.get(by_node) != simdjson::SUCCESS) return WrongType(field, "an object keyed by node name", e);
  std::vector<NodeVictims> out;
  for (auto [node, victims_element] : by_node) {
    const std::string path = absl::StrFormat("%s[\"%s\"]", field, node);
    object victims;
    if (victims_element.get(victims) != simdjson::SUCCESS) return WrongType(path, "an object", victims_element);
    NodeVictims v;
    v.node = node;
    if (std::optional<element> n = Member(victims, "NumPDBViolations")) {
      if (n->get(v.num_pdb_violations) != simdjson::SUCCESS) return WrongType(path + ".NumPDBViolations", "an integer", *n);
    }
    if (std::optional<element> pods = Member(victims, "Pods")) {
      simdjson::dom::array list;
      if (pods->get(list) != simdjson::SUCCESS) return WrongType(path + ".Pods", "an array", *pods);
      size_t i = 0;
      for (element pod : list) {
        const std::string pod_path = absl::StrFormat("%s.Pods[%d]", path, i++);
        object pod_object;
        if (pod.get(pod_object) != simdjson::SUCCESS) return WrongType(pod_path, "an object", pod);
        std::string_view uid;
        if (meta) {
          absl::StatusOr<std::string_view> u = RequiredString(pod_object, "UID", pod_path);
          if (!u.ok()) return u.status();
          uid = *u;
        } else {
          absl::StatusOr<WirePod> p = DecodePod(pod);
          if (!p.ok()) return p.status();
          if (p->uid.empty()) return absl::InvalidArgumentError(absl::StrCat(pod_path, ".metadata.uid is missing"));
          uid = p->uid;
        }
        v.pod_uids.push_back(uid);
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

// simdjson counts an array's elements up to 0xFFFFFF and says 0xFFFFFF beyond:
// enough to tell "too many", not always how many.
absl::Status TooManyNodes(std::string_view field, size_t count) {
  const std::string how_many = count >= 0xFFFFFF ? std::string("over 16 million") : absl::StrCat(count);
  return absl::ResourceExhaustedError(absl::StrCat(Absl(field), " has ", how_many, " entries; Tessera answers at most ",
                                                   kMaxNodesPerRequest, " nodes a request"));
}

}  // namespace

absl::StatusOr<WirePod> DecodePodObject(simdjson::dom::element pod, std::string_view path) {
  return DecodePod(pod, path);
}

absl::StatusOr<WireNode> DecodeNodeObject(simdjson::dom::element node, std::string_view path) {
  return DecodeNode(node, std::string(path));
}

absl::StatusOr<ExtenderBindingArgs> DecodeBindingArgs(std::string_view body, simdjson::dom::parser& parser) {
  absl::StatusOr<object> obj = ParseObject(body, parser, "ExtenderBindingArgs");
  if (!obj.ok()) return obj.status();
  ExtenderBindingArgs out;
  struct Field {
    std::string_view key;
    std::string_view* out;
  };
  for (const Field& f : {Field{"PodName", &out.pod_name}, Field{"PodNamespace", &out.pod_namespace},
                         Field{"PodUID", &out.pod_uid}, Field{"Node", &out.node}}) {
    absl::StatusOr<std::string_view> s = RequiredString(*obj, f.key, "ExtenderBindingArgs");
    if (!s.ok()) return s.status();
    *f.out = *s;
  }
  return out;
}

absl::StatusOr<ExtenderPreemptionArgs> DecodePreemptionArgs(std::string_view body, simdjson::dom::parser& parser) {
  absl::StatusOr<object> obj = ParseObject(body, parser, "ExtenderPreemptionArgs");
  if (!obj.ok()) return obj.status();
  ExtenderPreemptionArgs out;
  std::optional<element> pod = Member(*obj, "Pod");
  if (!pod) return absl::InvalidArgumentError("ExtenderPreemptionArgs.Pod is missing");
  absl::StatusOr<WirePod> decoded_pod = DecodePod(*pod);
  if (!decoded_pod.ok()) return decoded_pod.status();
  out.pod = std::move(*decoded_pod);
  std::optional<element> meta = Member(*obj, "NodeNameToMetaVictims");
  std::optional<element> full = Member(*obj, "NodeNameToVictims");
  if (!meta && !full) {
    return absl::InvalidArgumentError("ExtenderPreemptionArgs has neither NodeNameToVictims nor NodeNameToMetaVictims");
  }
  out.meta_victims = meta.has_value();
  absl::StatusOr<std::vector<NodeVictims>> victims =
      meta ? DecodeVictims(*meta, "NodeNameToMetaVictims", true) : DecodeVictims(*full, "NodeNameToVictims", false);
  if (!victims.ok()) return victims.status();
  out.victims = std::move(*victims);
  return out;
}

absl::StatusOr<ExtenderArgs> DecodeExtenderArgs(std::string_view body, simdjson::dom::parser& parser) {
  absl::StatusOr<object> parsed = ParseObject(body, parser, "ExtenderArgs");
  if (!parsed.ok()) return parsed.status();
  object args = *parsed;

  ExtenderArgs out;
  std::optional<element> pod = Member(args, "Pod");
  if (!pod) return absl::InvalidArgumentError("ExtenderArgs.Pod is missing");
  absl::StatusOr<WirePod> decoded_pod = DecodePod(*pod);
  if (!decoded_pod.ok()) return decoded_pod.status();
  out.pod = std::move(*decoded_pod);

  if (std::optional<element> nodes = Member(args, "Nodes")) {
    object list;
    if (nodes->get(list) != simdjson::SUCCESS) return WrongType("ExtenderArgs.Nodes", "a NodeList object", *nodes);
    std::optional<element> items = Member(list, "items");
    simdjson::dom::array array;
    out.nodes.emplace();
    if (items) {
      if (items->get(array) != simdjson::SUCCESS) return WrongType("Nodes.items", "an array", *items);
      if (array.size() > kMaxNodesPerRequest) return TooManyNodes("Nodes.items", array.size());
      out.nodes->reserve(array.size());
      size_t i = 0;
      for (element item : array) {
        absl::StatusOr<WireNode> node = DecodeNode(item, absl::StrCat("Nodes.items[", i++, "]"));
        if (!node.ok()) return node.status();
        out.nodes->push_back(std::move(*node));
      }
    }
  }
  if (std::optional<element> names = Member(args, "NodeNames")) {
    simdjson::dom::array array;
    if (names->get(array) != simdjson::SUCCESS) return WrongType("ExtenderArgs.NodeNames", "an array of strings", *names);
    if (array.size() > kMaxNodesPerRequest) return TooManyNodes("ExtenderArgs.NodeNames", array.size());
    out.node_names.emplace();
    out.node_names->reserve(array.size());
    size_t i = 0;
    for (element item : array) {
      std::string_view name;
      if (item.get(name) != simdjson::SUCCESS) return WrongType(absl::StrCat("NodeNames[", i, "]"), "a string", item);
      out.node_names->push_back(name);
      ++i;
    }
  }
  if (!out.nodes && !out.node_names) {
    return absl::InvalidArgumentError("ExtenderArgs has neither Nodes nor NodeNames");
  }
  if (out.nodes && out.node_names) {
    // kube-scheduler sends one form; answering both would be ambiguous.
    return absl::InvalidArgumentError("ExtenderArgs has both Nodes and NodeNames; expected one of them");
  }
  return out;
}

}  // namespace tessera::k8s
