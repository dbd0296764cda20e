#include "config/policy_loader.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "scheduler/common/config_errors.h"
#include "config/file_util.h"
#include "config/section_reader.h"
#include "config/pools_section.h"
#include "config/tenants_section.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/common/yaml_load.h"
#include "scheduler/common/yaml_map.h"
#include "telemetry/prometheus_url.h"
#include "yaml-cpp/yaml.h"

namespace tessera {
namespace {

using yaml_internal::Describe;
using yaml_internal::ParseInteger;
using yaml_internal::YamlMap;
using config_internal::MarkOr;
using config_internal::SectionReader;

// A policy is a few dozen nodes; the caps only have to stop what no policy is.
constexpr yaml_internal::YamlLimits kPolicyYamlLimits{
    .max_bytes = config_internal::kMaxPolicyFileBytes, .max_nodes = 20'000, .max_depth = 32, .max_documents = 16};

constexpr int64_t kMinWeight = 1;
constexpr int64_t kMaxWeight = 100;

// apiVersion and kind: required, and exactly `want`.
void CheckConstant(YamlMap& top, const YAML::Node& root, std::string_view key, std::string_view want,
                   ConfigErrors& errors) {
  const YamlMap::Field* field = top.Read(key);
  if (field == nullptr || field->value.IsNull()) {
    errors.Add(MarkOr(field, root), std::string(key), absl::StrFormat("required; must be \"%s\"", want));
  } else if (!field->value.IsScalar() || field->value.Scalar() != want) {
    errors.Add(field->value.Mark(), std::string(key),
               absl::StrFormat("must be \"%s\"; got %s", want, Describe(field->value)));
  }
}

void ReadPrometheus(SectionReader& section, PrometheusSettings& p) {
  const bool has_url = section.Has("url");
  section.String("url", /*allow_empty=*/false, p.url,
                 "Required: the Prometheus base URL, http://host[:port][/path-prefix] (plain HTTP; run a sidecar for "
                 "TLS).");
  if (!has_url) {
    section.ErrorAt("url", "required: the Prometheus base URL, e.g. http://prometheus.monitoring:9090");
  } else if (absl::StatusOr<PrometheusEndpoint> endpoint = ParsePrometheusUrl(p.url);
             !p.url.empty() && !endpoint.ok()) {
    section.ErrorAt("url", std::string(endpoint.status().message()));
  }
  section.Duration("timeout", absl::Milliseconds(10), absl::Minutes(1), p.timeout,
                   "Limit on each query, connecting included.");
  if (std::optional<SectionReader> labels =
          section.Map("labels", "Which series labels name a measurement's node, GPU UUID and GPU index.")) {
    labels->LabelName("node", p.node_label, "The label holding the Kubernetes node name.");
    labels->LabelName("uuid", p.uuid_label,
                      "The label holding the GPU's UUID, matched to the node's GPU inventory.");
    labels->LabelName("gpu", p.gpu_label,
                      "The label holding the GPU's index, used where the node's inventory has no UUIDs.");
  }
  if (std::optional<SectionReader> queries = section.Map(
          "queries", "The PromQL run each refresh; each answer must be an instant vector, one sample per GPU.")) {
    PrometheusQueries& q = p.queries;
    queries->String("utilization", /*allow_empty=*/false, q.utilization,
                    "Each GPU's utilization over the short window, in percent (0..100).");
    queries->String("sustainedUtilization", /*allow_empty=*/true, q.sustained_utilization,
                    "Each GPU's utilization over the long window, in percent; \"\" = not queried.");
    queries->String("smActive", /*allow_empty=*/true, q.sm_active,
                    "Each GPU's SM activity as a ratio 0..1, e.g. avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1m]); "
                    "\"\" = not queried.");
    queries->String("memoryUsed", /*allow_empty=*/true, q.memory_used,
                    "Each GPU's used memory, in MiB; \"\" = not queried.");
    queries->String("memoryFree", /*allow_empty=*/true, q.memory_free,
                    "Each GPU's free memory, in MiB; \"\" = not queried.");
    queries->String("sampleTime", /*allow_empty=*/true, q.sample_time,
                    "When each GPU was last scraped, in Unix seconds; a GPU missing from the answer is not "
                    "refreshed. \"\" = a GPU counts as sampled when Prometheus evaluated utilization.");
  }
  if (std::optional<SectionReader> windows =
          section.Map("windows", "How filter messages name the two utilization windows.")) {
    windows->String("utilization", /*allow_empty=*/false, p.utilization_window,
                    "The name of the utilization query's window.");
    windows->String("sustainedUtilization", /*allow_empty=*/false, p.sustained_window,
                    "The name of the sustainedUtilization query's window.");
  }
}

// The `workloadLearning:` section; errors recorded, settings as far as valid.
WorkloadLearning ReadWorkloadLearning(SectionReader& section) {
  WorkloadLearning l;
  section.Bool("enabled", l.enabled,
               "Learn the expected workload from arrivals; false: fgd and host-stranding use their own `workload` "
               "lists alone.");
  section.Integer("windowPods", 100, 1'000'000, l.window_pods,
                  "The learned mix is that of the last this many pods filter was asked about (each counted once, "
                  "by UID).");
  section.Integer("warmupPods", 1, 1'000'000, l.warmup_pods,
                  "Arrivals over which the plugins' own `workload` lists fade from all of the mix to priorPercent "
                  "of it; at most windowPods.");
  section.Integer("publishEveryPods", 1, 1'000'000, l.publish_every_pods,
                  "Arrivals between two learned mixes once warmed up (each mix is a new profile, and the score memo "
                  "starts over).");
  section.Integer("coveragePercent", 1, 100, l.coverage_percent,
                  "The commonest kinds are kept until they cover this percent of the window...");
  section.Integer("maxKinds", 1, 1024, l.max_kinds, "...and at most this many kinds.");
  section.Integer("priorPercent", 0, 100, l.prior_percent,
                  "The share, in percent, at which each plugin's own `workload` list stays mixed in after the "
                  "warmup: a floor for kinds the window lacks.");
  if (l.warmup_pods > l.window_pods) {
    section.ErrorAt("warmupPods", absl::StrFormat("must be at most windowPods (%d): the window never holds more; got %d",
                                                  l.window_pods, l.warmup_pods));
  }
  return l;
}

// The `telemetry:` section; errors recorded, settings as far as valid.
TelemetrySettings ReadTelemetry(SectionReader& section) {
  TelemetrySettings t;
  section.Duration("refreshInterval", absl::Seconds(1), absl::Hours(1), t.refresh_interval,
                   "Time between two refresh rounds: Prometheus is queried, and stale measurements dropped.");
  section.Duration("staleAfter", absl::Seconds(1), absl::Hours(24), t.stale_after,
                   "A measurement older than this is not trusted; at least refreshInterval.");
  if (t.stale_after < t.refresh_interval) {
    section.ErrorAt("staleAfter", absl::StrFormat("must be at least refreshInterval (%s), or every value goes stale "
                                                  "before the next refresh; got %s",
                                                  absl::FormatDuration(t.refresh_interval),
                                                  absl::FormatDuration(t.stale_after)));
  }
  section.Bool("nodeAnnotations", t.node_annotations,
               "Also read measurements from Node objects' tessera.io/gpu-utilization annotation.");
  if (std::optional<SectionReader> prometheus =
          section.Map("prometheus", "Where to query GPU metrics (DCGM exporter series); absent: no Prometheus "
                                    "source.")) {
    ReadPrometheus(*prometheus, t.prometheus.emplace());
  }
  return t;
}

// The `shortlist:` section; errors recorded, settings as far as valid.
Shortlist ReadShortlist(SectionReader& section) {
  Shortlist s;
  section.Integer("maxNodes", 0, Shortlist::kMostNodes, s.max_nodes,
                  "For a pod asking for GPUs, filter passes on at most this many of the nodes its profile ranks "
                  "best (the top score); 0: every node that fits.");
  return s;
}

class Loader {
 public:
  Loader(const PluginRegistry& registry, std::shared_ptr<ConfigErrors> errors)
      : registry_(registry), errors_(std::move(errors)) {}

  // Validates the document and, when it is sound, builds the profile. Every
  // problem lands in errors_; the result is null unless there were none.
  std::shared_ptr<const Profile> Load(const YAML::Node& root) {
    if (!root.IsMap()) {
      errors_->Add(root.Mark(), "",
                   absl::StrFormat("must be a map with apiVersion, kind and plugins; got %s", Describe(root)));
      return nullptr;
    }
    YamlMap top(root, "", *errors_);
    CheckConstant(top, root, "apiVersion", kPolicyApiVersion, *errors_);
    CheckConstant(top, root, "kind", kPolicyKind, *errors_);
    const YamlMap::Field* plugins = top.Read("plugins");
    const YamlMap::Field* telemetry = top.Read("telemetry");
    const YamlMap::Field* tenants = top.Read("tenants");
    const YamlMap::Field* pools = top.Read("pools");
    const YamlMap::Field* learning = top.Read("workloadLearning");
    const YamlMap::Field* shortlist = top.Read("shortlist");
    top.ReportUnread(*errors_);
    if (shortlist != nullptr) {
      if (std::optional<SectionReader> section = SectionReader::Open(*shortlist, root, "shortlist", *errors_)) {
        shortlist_ = ReadShortlist(*section);
      }
    }
    if (learning != nullptr) {
      if (std::optional<SectionReader> section = SectionReader::Open(*learning, root, "workloadLearning", *errors_)) {
        learning_ = ReadWorkloadLearning(*section);
      }
    }
    if (tenants != nullptr) {
      tenants_ = std::make_shared<const TenantSet>(config_internal::ReadTenants(*tenants, root, *errors_));
    }
    if (telemetry != nullptr) {
      if (std::optional<SectionReader> section = SectionReader::Open(*telemetry, root, "telemetry", *errors_)) {
        telemetry_ = ReadTelemetry(*section);
      }
    }

    // Before the top-level plugins, which may be missing: a pool's errors are
    // worth reporting all the same.
    if (pools != nullptr) {
      pools_ = config_internal::ReadPools(
          *pools, root, *errors_,
          [this](const YamlMap::Field* field, const YAML::Node& parent, const std::string& path) {
            return BuildProfile(field, parent, path);
          });
    }
    std::shared_ptr<const Profile> profile = BuildProfile(plugins, root, "plugins");
    return errors_->empty() ? profile : nullptr;
  }

  // The profile of one `plugins:` list (the top level's, or a pool's at
  // `path`); null, with its errors recorded, when the list has any.
  std::shared_ptr<const Profile> BuildProfile(const YamlMap::Field* plugins, const YAML::Node& parent,
                                              const std::string& path) {
    if (plugins == nullptr) {
      errors_->Add(parent.Mark(), path, "required; list at least one plugin");
      return nullptr;
    }
    const YAML::Node& list = plugins->value;
    if (list.IsNull() || (list.IsSequence() && list.size() == 0)) {
      errors_->Add(MarkOr(plugins, parent), path, "must list at least one plugin");
      return nullptr;
    }
    if (!list.IsSequence()) {
      errors_->Add(list.Mark(), path, absl::StrFormat("must be a list of plugins; got %s", Describe(list)));
      return nullptr;
    }

    std::vector<WeightedPlugin> built;
    std::map<std::string, std::string> first_entry;  // plugin name -> path of its first entry
    bool all_built = true;
    for (size_t i = 0; i < list.size(); ++i) {
      std::optional<WeightedPlugin> plugin =
          BuildPlugin(list[i], absl::StrFormat("%s[%d]", path, i), first_entry);
      if (plugin.has_value()) {
        built.push_back(std::move(*plugin));
      } else {
        all_built = false;
      }
    }
    // The mix is checked only when every plugin was built: with one missing,
    // "no GPU chooser" may only mean the chooser's args had a typo.
    if (!all_built) return nullptr;
    absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(built));
    if (!profile.ok()) {
      errors_->Add(list.Mark(), path, std::string(profile.status().message()));
      return nullptr;
    }
    return *std::move(profile);
  }

  // The telemetry section, once Load() has run (nullopt when absent).
  [[nodiscard]] const std::optional<TelemetrySettings>& telemetry() const { return telemetry_; }
  // The workloadLearning section, once Load() has run (defaults when absent).
  [[nodiscard]] const WorkloadLearning& learning() const { return learning_; }
  // The tenants section, once Load() has run (empty when absent).
  [[nodiscard]] const std::shared_ptr<const TenantSet>& tenants() const { return tenants_; }
  // The pools section, once Load() has run (empty when absent).
  [[nodiscard]] std::vector<PoolPolicy> TakePools() { return std::move(pools_); }
  // The shortlist section, once Load() has run (defaults when absent).
  [[nodiscard]] const Shortlist& shortlist() const { return shortlist_; }

 private:
  // Validates one entry of `plugins` and runs its factory; nullopt when the
  // entry has errors (all recorded).
  std::optional<WeightedPlugin> BuildPlugin(const YAML::Node& item, const std::string& path,
                                            std::map<std::string, std::string>& first_entry) {
    if (!item.IsMap()) {
      errors_->Add(item.Mark(), path,
                   absl::StrFormat("must be a map with name, weight and args; got %s", Describe(item)));
      return std::nullopt;
    }
    YamlMap entry(item, path, *errors_);

    const PluginFactory* factory = nullptr;
    const YamlMap::Field* name = entry.Read("name");
    if (name == nullptr || name->value.IsNull()) {
      errors_->Add(MarkOr(name, item), JoinPath(path, "name"), "required");
    } else if (!name->value.IsScalar() || name->value.Scalar().empty()) {
      errors_->Add(name->value.Mark(), JoinPath(path, "name"),
                   absl::StrFormat("must be a plugin name; got %s", Describe(name->value)));
    } else if (factory = registry_.Find(name->value.Scalar()); factory == nullptr) {
      std::vector<std::string> known = registry_.Names();
      errors_->Add(name->value.Mark(), JoinPath(path, "name"),
                   absl::StrFormat("unknown plugin %s; known: %s", Describe(name->value),
                                   known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
    } else if (auto [it, inserted] = first_entry.emplace(name->value.Scalar(), path); !inserted) {
      errors_->Add(name->value.Mark(), JoinPath(path, "name"),
                   absl::StrFormat("duplicate plugin %s (first listed as %s)", Describe(name->value),
                                   it->second));
      factory = nullptr;
    }

    int64_t weight = kMinWeight;
    if (const YamlMap::Field* w = entry.Read("weight"); w != nullptr && !w->value.IsNull()) {
      std::optional<int64_t> value = ParseInteger(w->value);
      if (!value.has_value() || *value < kMinWeight || *value > kMaxWeight) {
        errors_->Add(w->value.Mark(), JoinPath(path, "weight"),
                     absl::StrFormat("must be an integer in %d..%d; got %s", kMinWeight, kMaxWeight,
                                     value.has_value() ? absl::StrFormat("%d", *value) : Describe(w->value)));
      } else {
        weight = *value;
      }
    }

    const YamlMap::Field* args_field = entry.Read("args");
    entry.ReportUnread(*errors_);
    // An unknown plugin's args cannot be checked: nobody knows its schema.
    if (factory == nullptr) return std::nullopt;

    PluginArgs args(args_field != nullptr ? args_field->value : YAML::Node(), item.Mark(),
                    JoinPath(path, "args"), errors_);
    absl::StatusOr<std::unique_ptr<Plugin>> plugin = (*factory)(args);
    // Idempotent; catches the unknown args of a factory that forgot to call it.
    const bool args_ok = args.Finish().ok();
    if (!plugin.ok()) {
      // A factory that fails without recording why still gets its say.
      if (!args.has_errors()) {
        errors_->Add(name->value.Mark(), path, std::string(plugin.status().message()));
      }
      return std::nullopt;
    }
    if (*plugin == nullptr) {
      errors_->Add(name->value.Mark(), path, "the plugin's factory returned no plugin");
      return std::nullopt;
    }
    // A bad weight or stray key in the entry does not stop the plugin being
    // built: the profile's mix is still worth checking, and the load fails anyway.
    if (!args_ok) return std::nullopt;
    return WeightedPlugin{*std::move(plugin), weight};
  }

  const PluginRegistry& registry_;
  std::shared_ptr<ConfigErrors> errors_;
  std::vector<PoolPolicy> pools_;
  std::optional<TelemetrySettings> telemetry_;
  std::shared_ptr<const TenantSet> tenants_ = std::make_shared<const TenantSet>();
  WorkloadLearning learning_;
  Shortlist shortlist_;
};

}  // namespace

std::vector<PolicySectionDescription> DescribePolicySections() {
  const auto fields_of = [](const auto& read) {
    SectionReader section = SectionReader::ForDescription();
    (void)read(section);
    return section.described();
  };
  std::vector<PolicySectionDescription> sections;
  sections.push_back({.key = "pools",
                      .is_list = true,
                      .doc = "Node pools that pods of given task types (the pod label tessera.io/task-type) go to, "
                             "each placed by its own plugins; absent: the top-level plugins place every pod on every "
                             "node.",
                      .fields = config_internal::DescribePoolFields()});
  sections.push_back({.key = "tenants",
                      .is_list = true,
                      .doc = "Teams sharing the cluster: their namespaces, guaranteed and maximum GPUs, run-time "
                             "limits and priority lifetime; absent: no tenants, no quotas.",
                      .fields = config_internal::DescribeTenantFields()});
  sections.push_back({.key = "telemetry",
                      .is_list = false,
                      .doc = "Where live GPU metrics (for load-aware) come from and how often; absent: no telemetry; "
                             "`telemetry: {}`: node annotations only.",
                      .fields = fields_of(ReadTelemetry)});
  sections.push_back({.key = "workloadLearning",
                      .is_list = false,
                      .doc = "How the workload fgd and host-stranding measure against is learned from arrivals; "
                             "absent: learned, with these defaults.",
                      .fields = fields_of(ReadWorkloadLearning)});
  sections.push_back({.key = "shortlist",
                      .is_list = false,
                      .doc = "How many nodes filter passes on for a pod that asks for GPUs; absent: these defaults.",
                      .fields = fields_of(ReadShortlist)});
  return sections;
}

absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyText(std::string_view yaml,
                                                              std::string_view file_name,
                                                              const PluginRegistry& registry) {
  absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(yaml, file_name, registry);
  if (!policy.ok()) return policy.status();
  return std::move(policy->profile);
}

absl::StatusOr<LoadedPolicy> LoadPolicyDocument(std::string_view yaml, std::string_view file_name,
                                                const PluginRegistry& registry) {
  auto errors = std::make_shared<ConfigErrors>(std::string(file_name));
  std::shared_ptr<const Profile> profile;
  std::optional<TelemetrySettings> telemetry;
  std::shared_ptr<const TenantSet> tenants;
  std::vector<PoolPolicy> pools;
  WorkloadLearning learning;
  Shortlist shortlist;
  // Bounded: the file may be anything an operator or a ConfigMap put there,
  // and a reload must not hang the control loop (scheduler/common/yaml_load.h).
  yaml_internal::YamlDocuments parsed = yaml_internal::LoadYamlDocuments(yaml, kPolicyYamlLimits);
  if (parsed.error) {
    errors->Add(parsed.error->mark, "", absl::StrFormat("invalid YAML: %s", parsed.error->message));
    return errors->ToStatus();
  }
  // yaml-cpp reports a few access errors by throwing; they stop here and
  // become positioned errors like any other.
  try {
    std::vector<YAML::Node>& documents = parsed.documents;
    if (documents.empty() || (documents.size() == 1 && documents[0].IsNull())) {
      errors->Add(YAML::Mark::null_mark(), "", "the file is empty; expected apiVersion, kind and plugins");
    } else {
      for (size_t i = 1; i < documents.size(); ++i) {
        errors->Add(documents[i].Mark(), "", "only one YAML document is allowed");
      }
      Loader loader(registry, errors);
      profile = loader.Load(documents[0]);
      telemetry = loader.telemetry();
      tenants = loader.tenants();
      pools = loader.TakePools();
      learning = loader.learning();
      shortlist = loader.shortlist();
    }
  } catch (const YAML::Exception& e) {
    errors->Add(e.mark, "", absl::StrFormat("invalid YAML: %s", e.msg));
    profile = nullptr;
  }
  if (!errors->empty() || profile == nullptr) {
    absl::Status status = errors->ToStatus();
    // Unreachable unless a step forgot to record its error; never return OK with no profile.
    if (status.ok()) return absl::InternalError(absl::StrFormat("%s: policy not loaded", file_name));
    return status;
  }
  // The loader checked every pool with its position; Create checks again.
  absl::StatusOr<std::shared_ptr<const ProfileSet>> profiles = ProfileSet::Create(profile, std::move(pools), shortlist);
  if (!profiles.ok()) return absl::InternalError(absl::StrFormat("%s: %s", file_name, profiles.status().message()));
  return LoadedPolicy{std::move(profile), std::move(telemetry), std::move(tenants), learning,
                      *std::move(profiles)};
}

absl::StatusOr<std::shared_ptr<const Profile>> LoadPolicyFile(const std::string& path,
                                                              const PluginRegistry& registry) {
  absl::StatusOr<std::string> text = config_internal::ReadPolicyFile(path);
  if (!text.ok()) return text.status();
  return LoadPolicyText(*text, path, registry);
}

}  // namespace tessera
