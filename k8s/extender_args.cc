#include "k8s/extender_args.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "k8s/annotations.h"
#include "k8s/internal/json_scan.h"
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

// spec.priority and spec.preemptionPolicy: what preemption needs of a pod.
absl::Status DecodePodScheduling(object pod, WirePod& out) {
  absl::StatusOr<std::optional<object>> spec = OptionalObject(pod, "spec", "Pod.spec");
  if (!spec.ok()) return spec.status();
  if (!*spec) return absl::OkStatus();
  if (std::optional<element> priority = Member(**spec, "priority")) {
    int64_t value = 0;
    // The API server keeps priorities within int32 (PriorityClass.value).
    if (priority->get(value) != simdjson::SUCCESS || value < INT32_MIN || value > INT32_MAX) {
      return WrongType("Pod.spec.priority", "a 32-bit integer", *priority);
    }
    out.priority = static_cast<int32_t>(value);
  }
  absl::StatusOr<std::string_view> policy = OptionalString(**spec, "preemptionPolicy", "Pod.spec.preemptionPolicy");
  if (!policy.ok()) return policy.status();
  out.never_preempts = *policy == "Never";
  return absl::OkStatus();
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
  absl::StatusOr<std::optional<object>> labels = OptionalObject(**meta, "labels", "Pod.metadata.labels");
  if (!labels.ok()) return labels.status();
  absl::StatusOr<std::optional<std::string_view>> tenant = StringEntry(*labels, kTenantLabel, "Pod.metadata.labels");
  if (!tenant.ok()) return tenant.status();
  out.tenant_label = tenant->value_or(std::string_view());
  absl::StatusOr<std::optional<std::string_view>> task_type = StringEntry(*labels, kTaskTypeLabel, "Pod.metadata.labels");
  if (!task_type.ok()) return task_type.status();
  out.task_type = task_type->value_or(std::string_view());
  if (absl::Status st = DecodePodScheduling(pod, out); !st.ok()) return st;
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

// GPU Feature Discovery's MIG labels: nvidia.com/mig.strategy and every
// nvidia.com/mig-<profile>.count, in one pass over the node's few dozen labels.
absl::Status ReadGfdMigLabels(const std::optional<object>& labels, const std::string& path, WireNode& node) {
  if (!labels) return absl::OkStatus();
  for (auto [key, value] : *labels) {
    if (!key.starts_with("nvidia.com/mig")) continue;  // the few GFD labels past this test are MIG's
    const bool strategy = key == kGfdMigStrategyLabel;
    if (!strategy && (!key.starts_with(kMigResourcePrefix) || !key.ends_with(kGfdMigCountSuffix))) continue;
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS) {
      return WrongType(absl::StrCat(path, ".metadata.labels[\"", Absl(key), "\"]"), "a string", value);
    }
    if (strategy) {
      node.inventory.gfd_mig_strategy = text;
    } else {
      AddGfdMigCountLabel(key, text, node.gfd_mig_counts);
    }
  }
  node.inventory.gfd_mig_counts = node.gfd_mig_counts;
  return absl::OkStatus();
}

absl::StatusOr<WireNode> DecodeNode(element e, const std::string& path) {
  object node;
  if (e.get(node) != simdjson::SUCCESS) return WrongType(path, "an object", e);
  WireNode out;
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
  if (absl::Status mig = ReadGfdMigLabels(*labels, path, out); !mig.ok()) return mig;
  for (std::string_view key : kNodePoolLabels) {
    if (out.pool.has_value()) break;
    absl::StatusOr<std::optional<std::string_view>> v = StringEntry(*labels, key, path + ".metadata.labels");
    if (!v.ok()) return v.status();
    out.pool = *v;
  }
  return out;
}

absl::Status TooManyNodes(std::string_view field, size_t count) {
  return absl::ResourceExhaustedError(absl::StrCat(Absl(field), " has ", count, " entries; Tessera answers at most ",
                                                   kMaxNodesPerRequest, " nodes a request"));
}

absl::Status TooLarge(std::string_view path, size_t bytes) {
  return absl::ResourceExhaustedError(absl::StrCat(Absl(path), " is ", bytes, " bytes; Tessera reads objects of at most ",
                                                   kMaxObjectBytes, " bytes (the API server stores none that large)"));
}

// Parses `body` as a JSON object; `type` names the expected wire type in errors.
absl::StatusOr<object> ParseObject(std::string_view body, simdjson::dom::parser& parser, std::string_view type) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat("request body is empty; expected %s JSON", type));
  }
  if (body.size() > kMaxObjectBytes) return TooLarge(type, body.size());
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

// The JSON type of the value whose text begins with `c`.
std::string_view TypeOfText(char c) {
  switch (c) {
    case '{': return "object";
    case '[': return "array";
    case '"': return "string";
    case 't':
    case 'f': return "boolean";
    case 'n': return "null";
    default: return "number";
  }
}

absl::Status WrongTypeOfText(std::string_view path, std::string_view want, char first) {
  return absl::InvalidArgumentError(absl::StrFormat("%s must be %s, got %s", path, want, TypeOfText(first)));
}

// Reads ExtenderArgs in one pass over the body (see the header): the scanner
// checks the syntax of every byte; the Pod and each Node are parsed alone.
// A semantic error (a wrong type, a missing field) is kept and the scan goes
// on, so that malformed JSON anywhere is reported as such, as a whole-body
// parse would.
class ExtenderArgsReader {
 public:
  ExtenderArgsReader(std::string_view body, simdjson::dom::parser& parser)
      : body_(body), scanner_(body), parser_(parser) {}

  absl::StatusOr<ExtenderArgs> Read() {
    if (body_.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      return absl::InvalidArgumentError("request body is empty; expected ExtenderArgs JSON");
    }
    if (!simdjson::validate_utf8(body_.data(), body_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", simdjson::error_message(simdjson::UTF8_ERROR)));
    }
    const char first = scanner_.Peek();
    if (first != '{') {
      if (!scanner_.Value() || !scanner_.ExpectEnd()) return Malformed();
      return WrongTypeOfText("ExtenderArgs", "a JSON object", first);
    }
    if (!Members()) return Malformed();
    if (!error_.ok()) return error_;
    if (!pod_found_) return absl::InvalidArgumentError("ExtenderArgs.Pod is missing");
    if (!args_.nodes && !args_.node_names) {
      return absl::InvalidArgumentError("ExtenderArgs has neither Nodes nor NodeNames");
    }
    if (args_.nodes && args_.node_names) {
      // kube-scheduler sends one form; answering both would be ambiguous.
      return absl::InvalidArgumentError("ExtenderArgs has both Nodes and NodeNames; expected one of them");
    }
    return std::move(args_);
  }

 private:
  absl::Status Malformed() const {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed JSON: ", syntax_error_.empty() ? scanner_.error() : syntax_error_));
  }

  // Keeps the first semantic error.
  void Note(absl::Status status) {
    if (error_.ok()) error_ = std::move(status);
  }

  std::string_view Keep(std::string_view s) { return args_.text.emplace_back(s); }
  std::optional<std::string_view> Keep(std::optional<std::string_view> s) {
    if (!s) return s;
    return Keep(*s);
  }

  // A member name, escapes decoded (nullopt after a syntax error).
  std::optional<std::string_view> Key() {
    std::optional<std::string_view> raw = scanner_.String();
    if (!raw) return std::nullopt;
    std::optional<std::string_view> key = internal::UnescapeJsonString(*raw, key_storage_);
    return key ? key : std::optional<std::string_view>("");  // an unpaired surrogate matches no field
  }

  // Walks `{ "member": value, ... }`, calling read(name) at each member with
  // the scanner at its value; read returns false on a syntax error.
  template <typename ReadMember>
  bool Object(ReadMember read) {
    if (!scanner_.Expect('{', "'{'")) return false;
    if (scanner_.Consume('}')) return true;
    do {
      std::optional<std::string_view> key = Key();
      if (!key || !scanner_.Expect(':', "':'") || !read(*key)) return false;
    } while (scanner_.Consume(','));
    return scanner_.Expect('}', "',' or '}'");
  }

  bool Members() {
    bool pod = false, nodes = false, names = false;  // the first of duplicate members counts, as with a DOM lookup
    return Object([&](std::string_view key) {
             if (key == "Pod" && !pod) {
               pod = true;
               return ReadPod();
             }
             if (key == "Nodes" && !nodes) {
               nodes = true;
               return ReadNodes();
             }
             if (key == "NodeNames" && !names) {
               names = true;
               return ReadNodeNames();
             }
             return scanner_.Value().has_value();
           }) &&
           scanner_.ExpectEnd();
  }

  // Whether Nodes.items[i], found by JsonScanner::Container, is well-formed
  // JSON (false records why, as the syntax error).
  bool Valid(std::string_view text, size_t i) {
    internal::JsonScanner check(text);
    if (check.Value() && check.ExpectEnd()) return true;
    syntax_error_ = absl::StrCat(check.error(), " of Nodes.items[", i, "]");
    return false;
  }

  // Parses one object's text alone; nullopt after noting why not.
  std::optional<element> ParseAlone(std::string_view text, std::string_view path) {
    if (text.size() > kMaxObjectBytes) {
      Note(TooLarge(path, text.size()));
      return std::nullopt;
    }
    element e;
    if (auto err = parser_.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(e); err) {
      Note(absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", simdjson::error_message(err), " in ", Absl(path))));
      return std::nullopt;
    }
    return e;
  }

  bool ReadPod() {
    const char first = scanner_.Peek();
    std::optional<std::string_view> text = scanner_.Value();
    if (!text) return false;
    if (first == 'n' || !error_.ok()) return true;  // null: missing
    std::optional<element> e = ParseAlone(*text, "ExtenderArgs.Pod");
    if (!e) return true;
    absl::StatusOr<WirePod> pod = DecodePod(*e);
    if (!pod.ok()) {
      Note(pod.status());
      return true;
    }
    pod->name = Keep(pod->name);
    pod->namespace_name = Keep(pod->namespace_name);
    pod->uid = Keep(pod->uid);
    pod->tenant_label = Keep(pod->tenant_label);
    pod->task_type = Keep(pod->task_type);
    args_.pod = *std::move(pod);
    pod_found_ = true;
    return true;
  }

  bool ReadNodes() {
    const char first = scanner_.Peek();
    if (first == 'n') return scanner_.Value().has_value();  // null: absent
    if (first != '{') {
      if (!scanner_.Value()) return false;
      Note(WrongTypeOfText("ExtenderArgs.Nodes", "a NodeList object", first));
      return true;
    }
    args_.nodes.emplace();
    bool items = false;
    return Object([&](std::string_view key) {
      if (key == "items" && !items) {
        items = true;
        return ReadItems();
      }
      return scanner_.Value().has_value();
    });
  }

  bool ReadItems() {
    const char first = scanner_.Peek();
    if (first == 'n') return scanner_.Value().has_value();
    if (first != '[') {
      if (!scanner_.Value()) return false;
      Note(WrongTypeOfText("Nodes.items", "an array", first));
      return true;
    }
    const bool had_error = !error_.ok();
    const size_t count = Array([&](size_t i) {
      // An object is parsed next, which checks it: the scanner only finds
      // its end (at depth 3: the body, Nodes, items).
      std::optional<std::string_view> text =
          scanner_.Peek() == '{' ? scanner_.Container(/*depth=*/3) : scanner_.Value();
      if (!text) return false;
      const bool parsed = i < kMaxNodesPerRequest && error_.ok() && ReadNode(*text, i);
      // One not parsed is checked here, so that malformed JSON anywhere is
      // reported as such.
      if (!parsed && text->front() == '{' && !Valid(*text, i)) return false;
      return true;
    });
    if (count == kSyntaxError) return false;
    // Too many nodes outranks what was wrong with one of them, as when the
    // array's size was checked first.
    if (count > kMaxNodesPerRequest && !had_error) error_ = TooManyNodes("Nodes.items", count);
    return true;
  }

  // Parses and decodes Nodes.items[i]; false when it was too large to parse.
  bool ReadNode(std::string_view text, size_t i) {
    const std::string path = absl::StrCat("Nodes.items[", i, "]");
    if (text.size() > kMaxObjectBytes) {
      Note(TooLarge(path, text.size()));
      return false;
    }
    std::optional<element> e = ParseAlone(text, path);
    if (!e) return true;  // malformed: noted
    absl::StatusOr<WireNode> node = DecodeNode(*e, path);
    if (!node.ok()) {
      Note(node.status());
      return true;
    }
    node->name = Keep(node->name);
    NodeInventoryFields& inv = node->inventory;
    for (std::optional<std::string_view>* field : {&inv.inventory_annotation, &inv.topology_annotation, &inv.gfd_count,
                                                   &inv.gfd_product, &inv.gfd_memory, &inv.gfd_mig_strategy,
                                                   &inv.allocatable_gpus, &node->allocatable_cpu,
                                                   &node->allocatable_memory, &node->pool}) {
      *field = Keep(*field);
    }
    for (GfdMigCount& mig : node->gfd_mig_counts) {
      mig.profile = Keep(mig.profile);
      mig.count = Keep(mig.count);
    }
    node->json = text;
    args_.nodes->push_back(*std::move(node));
    return true;
  }

  bool ReadNodeNames() {
    const char first = scanner_.Peek();
    if (first == 'n') return scanner_.Value().has_value();
    if (first != '[') {
      if (!scanner_.Value()) return false;
      Note(WrongTypeOfText("ExtenderArgs.NodeNames", "an array of strings", first));
      return true;
    }
    args_.node_names.emplace();
    const bool had_error = !error_.ok();
    std::string unescaped;
    bool all_plain = true;
    const size_t count = Array([&](size_t i) {
      const char type = scanner_.Peek();
      if (type != '"') {
        if (!scanner_.Value()) return false;
        Note(WrongTypeOfText(absl::StrCat("NodeNames[", i, "]"), "a string", type));
        return true;
      }
      std::optional<std::string_view> raw = scanner_.String();
      if (!raw) return false;
      if (i >= kMaxNodesPerRequest || !error_.ok()) return true;
      if (!scanner_.last_string_escaped()) {  // a DNS name: its text is its value
        args_.node_names->push_back(*raw);
        return true;
      }
      all_plain = false;
      std::optional<std::string_view> name = internal::UnescapeJsonString(*raw, unescaped);
      if (!name) {
        Note(absl::InvalidArgumentError(absl::StrCat("malformed JSON: an invalid escape in NodeNames[", i, "]")));
        return true;
      }
      args_.node_names->push_back(name->data() == raw->data() ? *name : Keep(*name));
      return true;
    });
    if (count == kSyntaxError) return false;
    args_.node_names_plain = all_plain;
    if (count > kMaxNodesPerRequest && !had_error) error_ = TooManyNodes("ExtenderArgs.NodeNames", count);
    return true;
  }

  static constexpr size_t kSyntaxError = ~size_t{0};

  // Walks `[ value, ... ]`, calling read(index) with the scanner at each
  // element. \return the element count, or kSyntaxError.
  template <typename ReadElement>
  size_t Array(ReadElement read) {
    if (!scanner_.Expect('[', "'['")) return kSyntaxError;
    if (scanner_.Consume(']')) return 0;
    size_t i = 0;
    do {
      if (!read(i++)) return kSyntaxError;
    } while (scanner_.Consume(','));
    return scanner_.Expect(']', "',' or ']'") ? i : kSyntaxError;
  }

  const std::string_view body_;
  internal::JsonScanner scanner_;
  simdjson::dom::parser& parser_;
  ExtenderArgs args_;
  bool pod_found_ = false;
  absl::Status error_;
  std::string syntax_error_;  // one found in a node's text (else the scanner's)
  std::string key_storage_;
};

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
  return ExtenderArgsReader(body, parser).Read();
}

}  // namespace tessera::k8s
