#include "config/pools_section.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "config/section_reader.h"
#include "k8s/label_value.h"

namespace tessera::config_internal {
namespace {

// Where a task type was first routed: for "routed to two pools".
struct FirstRoute {
  std::string pool;
  std::string path;
};

// What the entries before the one being read named, for the duplicate checks.
struct Seen {
  std::map<std::string, std::string> pool_paths;  // pool name -> path of its entry
  std::map<std::string, FirstRoute> routes;       // task type -> its pool
};

// The pool's name: required, a label value (node pool labels are labels).
void ReadName(SectionReader& entry, std::string& name) {
  if (!entry.Has("name")) {
    entry.ErrorAt("name", "required: the node pool's name, as the nodes' pool label gives it (tessera.io/node-pool)");
  }
  entry.String("name", /*allow_empty=*/false, name,
               "Required, unique: the node pool, as its nodes' pool label gives it (tessera.io/node-pool, "
               "karpenter.sh/nodepool, the GKE, EKS and AKS pool labels).");
  if (name.empty()) return;
  if (absl::Status valid = k8s::CheckLabelValue(name); !valid.ok()) {
    entry.ErrorAt("name", absl::StrFormat("must be a label value, as node pool labels are; \"%s\" %s", name,
                                          valid.message()));
    name.clear();
  }
}

// The pool's task types: at least one, each a label value, each routed once.
void ReadTaskTypes(SectionReader& entry, const std::string& pool, std::vector<std::string>& task_types,
                   std::map<std::string, FirstRoute>& routed) {
  std::vector<YAML::Mark> marks;
  if (!entry.Has("taskTypes")) {
    entry.ErrorAt("taskTypes", "required: at least one value of the pod label tessera.io/task-type routed here");
  }
  const size_t errors_before = entry.errors().size();
  entry.StringList("taskTypes", task_types,
                   "Required, at least one: values of the pod label tessera.io/task-type whose pods go to this "
                   "pool only, placed by its plugins; each task type in one pool only.",
                   &marks);
  if (entry.Has("taskTypes") && task_types.empty() && entry.errors().size() == errors_before) {
    entry.ErrorAt("taskTypes", "must list at least one task type");
  }
  for (size_t k = 0; k < task_types.size() && k < marks.size(); ++k) {
    const std::string item_path = absl::StrFormat("%s.taskTypes[%d]", entry.path(), k);
    if (absl::Status valid = k8s::CheckLabelValue(task_types[k]); !valid.ok()) {
      entry.errors().Add(marks[k], item_path,
                         absl::StrFormat("must be a label value (of tessera.io/task-type); \"%s\" %s", task_types[k],
                                         valid.message()));
      continue;
    }
    auto [it, inserted] = routed.emplace(task_types[k], FirstRoute{pool, item_path});
    if (!inserted) {
      entry.errors().Add(marks[k], item_path,
                         absl::StrFormat("task type \"%s\" is already routed to pool \"%s\" (%s); a task type goes "
                                         "to one pool",
                                         task_types[k], it->second.pool, it->second.path));
    }
  }
}

// One entry of the list (`item`, at `path`); errors recorded. The pool is
// complete when none was.
PoolPolicy ReadPool(SectionReader& entry, const YAML::Node& item, const std::string& path, Seen& seen,
                    const ProfileBuilder& build_profile) {
  PoolPolicy pool;
  ReadName(entry, pool.name);
  if (!pool.name.empty()) {
    if (auto [it, inserted] = seen.pool_paths.emplace(pool.name, path); !inserted) {
      entry.ErrorAt("name", absl::StrFormat("duplicate pool \"%s\" (first listed as %s)", pool.name, it->second));
    }
  }
  ReadTaskTypes(entry, pool.name, pool.task_types, seen.routes);
  entry.Bool("exclusive", pool.exclusive,
             "Keep pods of no task type, or of one no pool lists, off the pool's nodes (other pools' pods never "
             "come here).");
  const YamlMap::Field* plugins =
      entry.Field("plugins", "list of plugins",
                  "Required: the pool's own profile, placing its pods; the schema, registry and checks of the "
                  "top-level plugins.");
  pool.profile = build_profile(plugins, item, path + ".plugins");
  return pool;
}

}  // namespace

std::vector<PoolPolicy> ReadPools(const YamlMap::Field& field, const YAML::Node& root, ConfigErrors& errors,
                                  const ProfileBuilder& build_profile) {
  const YAML::Node& list = field.value;
  if (list.IsNull()) return {};
  if (!list.IsSequence()) {
    errors.Add(list.Mark(), "pools", absl::StrFormat("must be a list of pools; got %s", Describe(list)));
    return {};
  }
  std::vector<PoolPolicy> pools;
  Seen seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = absl::StrFormat("pools[%d]", i);
    YamlMap::Field item{path, list[i], list[i], true};
    std::optional<SectionReader> entry = SectionReader::Open(item, root, path, errors);
    if (!entry.has_value()) continue;
    pools.push_back(ReadPool(*entry, list[i], path, seen, build_profile));
  }
  return pools;
}

std::vector<ArgDescription> DescribePoolFields() {
  SectionReader entry = SectionReader::ForDescription();
  Seen seen;
  // Building no profile: the plugins' own args are the reference's plugin part.
  (void)ReadPool(entry, YAML::Node(YAML::NodeType::Map), "pools[0]", seen,
                 [](const YamlMap::Field*, const YAML::Node&, const std::string&) {
                   return std::shared_ptr<const Profile>();
                 });
  return entry.described();
}

}  // namespace tessera::config_internal
