#include "config/cluster_file.h"

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "scheduler/common/config_errors.h"
#include "scheduler/common/file_read.h"
#include "scheduler/common/yaml_load.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "k8s/node_inventory.h"
#include "scheduler/model/absl_compat.h"
#include "yaml-cpp/yaml.h"

namespace tessera {
namespace {

// A cluster of 5000 nodes with 40 000 pods is some 350 000 YAML nodes; the
// caps stop what no cluster file is (yaml-cpp spends ~0.5 KB a node).
constexpr int64_t kMaxClusterFileBytes = int64_t{32} << 20;
constexpr yaml_internal::YamlLimits kClusterYamlLimits{.max_bytes = size_t{kMaxClusterFileBytes},
                                                        .max_nodes = 1'000'000,
                                                        .max_depth = 32,
                                                        .max_documents = 2};

// A map of strings (labels, annotations, allocatable) as a std::map; records
// an error for anything that is not a map of scalars.
std::map<std::string, std::string> StringMap(const YAML::Node& node, const std::string& path, ConfigErrors& errors) {
  std::map<std::string, std::string> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsMap()) {
    errors.Add(node.Mark(), path, "must be a map of strings");
    return out;
  }
  for (const auto& kv : node) {
    if (!kv.second.IsScalar()) {
      errors.Add(kv.second.Mark(), JoinPath(path, kv.first.Scalar()), "must be a string");
      continue;
    }
    out[kv.first.Scalar()] = kv.second.Scalar();
  }
  return out;
}

std::string RequiredString(const YAML::Node& parent, const char* key, const std::string& path, ConfigErrors& errors) {
  const YAML::Node v = parent[key];
  if (!v.IsDefined() || !v.IsScalar() || v.Scalar().empty()) {
    errors.Add(v.IsDefined() ? v.Mark() : parent.Mark(), JoinPath(path, key), "must be a non-empty string");
    return {};
  }
  return v.Scalar();
}

std::optional<std::string_view> Find(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  if (it == m.end()) return std::nullopt;
  return std::string_view(it->second);
}

void LoadNodes(const YAML::Node& nodes, ConfigErrors& errors, ClusterModel& model) {
  if (!nodes.IsDefined() || nodes.IsNull()) return;
  if (!nodes.IsSequence()) {
    errors.Add(nodes.Mark(), "nodes", "must be a list");
    return;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node n = nodes[i];
    const std::string path = absl::StrCat("nodes[", i, "]");
    if (!n.IsMap()) {
      errors.Add(n.Mark(), path, "must be a map");
      continue;
    }
    const std::string name = RequiredString(n, "name", path, errors);
    const auto annotations = StringMap(n["annotations"], JoinPath(path, "annotations"), errors);
    const auto labels = StringMap(n["labels"], JoinPath(path, "labels"), errors);
    const auto allocatable = StringMap(n["allocatable"], JoinPath(path, "allocatable"), errors);
    if (name.empty()) continue;
    k8s::NodeInventoryFields fields{
        .inventory_annotation = Find(annotations, k8s::kGpuInventory),
        .gfd_count = Find(labels, k8s::kGfdCountLabel),
        .gfd_product = Find(labels, k8s::kGfdProductLabel),
        .gfd_memory = Find(labels, k8s::kGfdMemoryLabel),
        .allocatable_gpus = Find(allocatable, k8s::kGpuResource),
        .topology_annotation = Find(annotations, k8s::kGpuTopology),
        .gfd_mig_strategy = Find(labels, k8s::kGfdMigStrategyLabel),
    };
    std::vector<k8s::GfdMigCount> mig_counts;
    for (const auto& [key, value] : labels) k8s::AddGfdMigCountLabel(key, value, mig_counts);
    fields.gfd_mig_counts = mig_counts;
    std::string pool;
    for (std::string_view key : k8s::kNodePoolLabels) {
      if (std::optional<std::string_view> v = Find(labels, key); v.has_value() && pool.empty()) pool = *v;
    }
    absl::StatusOr<NodeInventory> inventory = k8s::ParseNodeInventory(fields);
    if (inventory.ok()) {
      model.UpsertNode(name, std::move(*inventory), absl::OkStatus(), std::nullopt, std::move(pool));
    } else {
      model.UpsertNode(name, NodeInventory{}, inventory.status(), std::nullopt, std::move(pool));
    }
  }
}

void LoadPods(const YAML::Node& pods, ConfigErrors& errors, ClusterModel& model) {
  if (!pods.IsDefined() || pods.IsNull()) return;
  if (!pods.IsSequence()) {
    errors.Add(pods.Mark(), "pods", "must be a list");
    return;
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    const YAML::Node p = pods[i];
    const std::string path = absl::StrCat("pods[", i, "]");
    if (!p.IsMap()) {
      errors.Add(p.Mark(), path, "must be a map");
      continue;
    }
    const std::string ns = p["namespace"].IsDefined() && p["namespace"].IsScalar() ? p["namespace"].Scalar() : "default";
    const std::string name = RequiredString(p, "name", path, errors);
    const auto annotations = StringMap(p["annotations"], JoinPath(path, "annotations"), errors);
    auto assignment_text = annotations.find(std::string(k8s::kGpuAssignment));
    if (assignment_text == annotations.end()) continue;  // holds no GPUs
    absl::StatusOr<GpuAssignment> assignment = k8s::ParseGpuAssignment(assignment_text->second);
    if (!assignment.ok()) {
      errors.Add(p["annotations"].Mark(), absl::StrCat(path, ".annotations[\"", Absl(k8s::kGpuAssignment), "\"]"),
                 std::string(assignment.status().message()));
      continue;
    }
    if (name.empty()) continue;
    PodHolding holding;
    holding.pod_key = absl::StrCat(ns, "/", name);
    holding.uid = p["uid"].IsDefined() && p["uid"].IsScalar() ? p["uid"].Scalar() : holding.pod_key;
    holding.assignment = std::move(*assignment);
    const auto labels = StringMap(p["labels"], JoinPath(path, "labels"), errors);
    holding.tenant_label = std::string(Find(labels, k8s::kTenantLabel).value_or(""));
    model.UpsertPod(std::move(holding));
  }
}

}  // namespace

absl::Status LoadClusterText(std::string_view yaml, std::string_view file_name, ClusterModel& model) {
  ConfigErrors errors{std::string(file_name)};
  yaml_internal::YamlDocuments parsed = yaml_internal::LoadYamlDocuments(yaml, kClusterYamlLimits);
  if (parsed.error) {
    errors.Add(parsed.error->mark, "", parsed.error->message);
    return errors.ToStatus();
  }
  if (parsed.documents.size() > 1) {
    errors.Add(parsed.documents[1].Mark(), "", "only one YAML document is allowed");
    return errors.ToStatus();
  }
  const YAML::Node root = parsed.documents.empty() ? YAML::Node() : parsed.documents[0];
  if (!root.IsMap()) {
    errors.Add(root.Mark(), "", "a cluster file is a map with `nodes` and `pods`");
    return errors.ToStatus();
  }
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "nodes" && key != "pods") errors.Add(kv.first.Mark(), key, "unknown field; expected nodes, pods");
  }
  try {
    LoadNodes(root["nodes"], errors, model);
    LoadPods(root["pods"], errors, model);
  } catch (const YAML::Exception& e) {
    errors.Add(e.mark, "", e.msg);
  }
  return errors.ToStatus();
}

absl::Status LoadClusterFile(const std::string& path, ClusterModel& model) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxClusterFileBytes);
  if (!text.ok()) return text.status();
  return LoadClusterText(*text, path, model);
}

}  // namespace tessera
