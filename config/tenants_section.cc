#include "config/tenants_section.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "config/section_reader.h"

namespace tessera::config_internal {
namespace {

constexpr int64_t kMaxAmount = int64_t{1} << 40;  // far past any cluster, far from overflow

// The docs speak of both uses: a guarantee and a maximum.
GpuQuota ReadQuota(SectionReader& section, GpuQuota quota) {
  int64_t milli = quota.milli.value();
  int64_t gpus = quota.gpus;
  section.Integer("gpuMilli", 0, kMaxAmount, milli,
                  "Milli-GPU of the pods' guaranteed shares, summed over the tenant's pods (1000 = one GPU); "
                  "absent: this quota does not limit it.");
  section.Memory("gpuMemory", quota.memory,
                 "GPU memory reserved by the tenant's pods, summed; absent: this quota does not limit it.");
  section.Integer("gpus", 0, kMaxAmount, gpus,
                  "GPUs the tenant's pods hold (a pod sharing a GPU holds one); absent: this quota does not limit "
                  "it.");
  quota.milli = MilliGpu(milli);
  quota.gpus = gpus;
  return quota;
}

std::string Amount(int64_t v) { return v == GpuQuota::kUnlimited ? "unlimited" : absl::StrFormat("%d", v); }

// One entry of the list; errors recorded.
TenantSpec ReadTenant(SectionReader& entry, std::vector<YAML::Mark>& namespace_marks) {
  TenantSpec t;
  if (!entry.Has("name")) entry.ErrorAt("name", "required: the tenant's name (what pods' tessera.io/tenant label says)");
  entry.String("name", /*allow_empty=*/false, t.name,
               "Required, unique: the tenant's name, as pods' tessera.io/tenant label gives it.");
  entry.StringList("namespaces", t.namespaces,
                   "Pods of these namespaces belong to the tenant (a pod's tessera.io/tenant label wins); each "
                   "namespace in one tenant only.",
                   &namespace_marks);
  // A guarantee speaks of the resources it names (GpuQuota); none at all: nothing is guaranteed.
  if (std::optional<SectionReader> g = entry.Map(
          "guaranteed", "What the tenant gets back by preemption when others borrow it; absent: nothing is "
                        "guaranteed, all it holds is borrowed.")) {
    t.guaranteed = ReadQuota(*g, GpuQuota{});
  }
  if (std::optional<SectionReader> m = entry.Map(
          "max", "The most the tenant may hold while others leave GPUs idle, each field at least its guarantee; "
                 "absent: unlimited.")) {
    t.max = ReadQuota(*m, GpuQuota{});
    static constexpr std::string_view kKeys[] = {"gpuMilli", "gpuMemory", "gpus"};
    for (size_t k = 0; k < 3; ++k) {
      const GpuResource r = kGpuResources[k];
      if (LimitOf(t.guaranteed, r) != GpuQuota::kUnlimited && LimitOf(t.max, r) < LimitOf(t.guaranteed, r)) {
        m->ErrorAt(kKeys[k], absl::StrFormat("must be at least the guarantee (%s); got %s",
                                             Amount(LimitOf(t.guaranteed, r)), Amount(LimitOf(t.max, r))));
      }
    }
  }
  entry.Duration("maxRunTime", absl::Minutes(1), absl::Hours(24 * 366), t.max_run_time,
                 "A pod of the tenant running longer is reported (log, metric, /debug); absent: no limit.");
  entry.Bool("evictAfterMaxRunTime", t.evict_past_max_run_time,
             "Also evict such a pod, through the Eviction API; needs maxRunTime.");
  if (t.evict_past_max_run_time && t.max_run_time == absl::InfiniteDuration()) {
    entry.ErrorAt("evictAfterMaxRunTime", "needs maxRunTime: there is no run time to evict after");
  }
  entry.Duration("priorityLifetime", absl::Seconds(1), absl::Hours(24 * 366), t.priority_lifetime,
                 "How long after it is bound a pod's priority counts for preemption; absent: forever.");
  int64_t expired = t.expired_priority;
  entry.Integer("expiredPriority", INT32_MIN, INT32_MAX, expired,
                "The priority preemption weighs a pod at once its priorityLifetime is over (when lower than its "
                "own).");
  t.expired_priority = static_cast<int32_t>(expired);
  return t;
}

}  // namespace

TenantSet ReadTenants(const yaml_internal::YamlMap::Field& field, const YAML::Node& root, ConfigErrors& errors) {
  const YAML::Node& list = field.value;
  if (list.IsNull()) return {};
  if (!list.IsSequence()) {
    errors.Add(list.Mark(), "tenants", absl::StrFormat("must be a list of tenants; got %s", Describe(list)));
    return {};
  }
  const size_t errors_before = errors.size();
  std::vector<TenantSpec> specs;
  std::map<std::string, std::string> first_name;       // name -> path of its entry
  std::map<std::string, std::string> namespace_owner;  // namespace -> tenant
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = absl::StrFormat("tenants[%d]", i);
    YamlMap::Field item{path, list[i], list[i], true};
    std::optional<SectionReader> entry = SectionReader::Open(item, root, path, errors);
    if (!entry.has_value()) continue;
    std::vector<YAML::Mark> namespace_marks;
    TenantSpec t = ReadTenant(*entry, namespace_marks);
    if (!t.name.empty()) {
      if (auto [it, inserted] = first_name.emplace(t.name, path); !inserted) {
        entry->ErrorAt("name", absl::StrFormat("duplicate tenant \"%s\" (first listed as %s)", t.name, it->second));
      }
    }
    for (size_t k = 0; k < t.namespaces.size() && k < namespace_marks.size(); ++k) {
      if (auto [it, inserted] = namespace_owner.emplace(t.namespaces[k], t.name); !inserted) {
        errors.Add(namespace_marks[k], absl::StrFormat("%s.namespaces[%d]", path, k),
                   absl::StrFormat("namespace \"%s\" already belongs to tenant \"%s\"", t.namespaces[k], it->second));
      }
    }
    specs.push_back(std::move(t));
  }
  if (errors.size() != errors_before) return {};
  absl::StatusOr<TenantSet> set = TenantSet::Create(std::move(specs));
  if (!set.ok()) {  // the checks above cover Create's; kept so that nothing invalid passes silently
    errors.Add(list.Mark(), "tenants", std::string(set.status().message()));
    return {};
  }
  return *std::move(set);
}

std::vector<ArgDescription> DescribeTenantFields() {
  SectionReader entry = SectionReader::ForDescription();
  std::vector<YAML::Mark> namespace_marks;
  (void)ReadTenant(entry, namespace_marks);
  return entry.described();
}

}  // namespace tessera::config_internal
