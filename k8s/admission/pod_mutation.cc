#include "k8s/admission/pod_mutation.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "k8s/annotations.h"
#include "k8s/pod_gpu_request.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/quantity_parse.h"

namespace tessera::k8s {
namespace {

using json = nlohmann::json;

constexpr std::string_view kDefaultScheduler = "default-scheduler";

// obj[key] when obj is an object that has it, else null.
const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

// RFC 6901: a key inside a JSON Pointer.
std::string PointerKey(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Annotations TesseraAnnotations(const json& pod) {
  Annotations out;
  const json* meta = Member(pod, "metadata");
  const json* annotations = meta != nullptr ? Member(*meta, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (value.is_string() && key.rfind(kTesseraPrefix, 0) == 0) out[key] = value.get<std::string>();
  }
  return out;
}

// The Tessera resources the containers ask for by hand, and which do.
struct HandWritten {
  int64_t milli = 0;
  int64_t memory_mib = 0;
  std::vector<size_t> containers;
  // nvidia.com/mig-<profile>: the profiles asked for and how many in all.
  std::vector<std::string> mig_profiles;
  int64_t mig_instances = 0;
  std::vector<size_t> mig_containers;

  [[nodiscard]] bool any() const { return !containers.empty(); }
  [[nodiscard]] bool any_mig() const { return !mig_containers.empty(); }
};

// The nvidia.com/mig-<profile> resources a container names, in requests or limits.
std::vector<std::string> MigResourcesOf(const json& container) {
  std::vector<std::string> names;
  const json* resources = Member(container, "resources");
  for (const char* kind : {"requests", "limits"}) {
    const json* list = resources != nullptr ? Member(*resources, kind) : nullptr;
    if (list == nullptr || !list->is_object()) continue;
    for (const auto& [name, value] : list->items()) {
      if (name.rfind(kMigResourcePrefix, 0) == 0 && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
  }
  return names;
}

// One container's amount of `resource` in requests and limits, which must be
// equal integers when both are given (extended resources are not overcommitted).
absl::StatusOr<int64_t> ContainerAmount(const json& container, std::string_view resource, size_t index) {
  const json* resources = Member(container, "resources");
  std::optional<int64_t> amounts[2];
  const char* kinds[2] = {"requests", "limits"};
  for (int k = 0; k < 2; ++k) {
    const json* list = resources != nullptr ? Member(*resources, kinds[k]) : nullptr;
    const json* value = list != nullptr ? Member(*list, resource) : nullptr;
    if (value == nullptr) continue;
    absl::StatusOr<int64_t> n = value->is_string() ? ParseCount(value->get<std::string>())
                                                   : absl::InvalidArgumentError("not a quantity");
    if (!n.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("containers[", index, "].resources.", kinds[k], "[", Absl(resource),
                                                     "] must be a whole number"));
    }
    amounts[k] = *n;
  }
  if (amounts[0] && amounts[1] && *amounts[0] != *amounts[1]) {
    return absl::InvalidArgumentError(absl::StrCat("containers[", index, "]: requests and limits of ", Absl(resource),
                                                   " must be equal (", *amounts[0], " and ", *amounts[1], ")"));
  }
  return amounts[0] ? *amounts[0] : amounts[1].value_or(0);
}

absl::StatusOr<HandWritten> ReadResources(const json& containers) {
  HandWritten hw;
  for (size_t i = 0; i < containers.size(); ++i) {
    absl::StatusOr<int64_t> milli = ContainerAmount(containers[i], kGpuMilliResource, i);
    if (!milli.ok()) return milli.status();
    absl::StatusOr<int64_t> memory = ContainerAmount(containers[i], kGpuMemoryResource, i);
    if (!memory.ok()) return memory.status();
    for (const std::string& resource : MigResourcesOf(containers[i])) {
      absl::StatusOr<int64_t> instances = ContainerAmount(containers[i], resource, i);
      if (!instances.ok()) return instances.status();
      if (*instances == 0) continue;
      const std::string profile = resource.substr(kMigResourcePrefix.size());
      if (std::find(hw.mig_profiles.begin(), hw.mig_profiles.end(), profile) == hw.mig_profiles.end()) {
        hw.mig_profiles.push_back(profile);
      }
      hw.mig_instances += *instances;
      hw.mig_containers.push_back(i);
    }
    if (*milli == 0 && *memory == 0) continue;
    hw.milli += *milli;
    hw.memory_mib += *memory;
    hw.containers.push_back(i);
  }
  return hw;
}

// "0.25" for 250 milli: the fraction annotation's form.
std::string FractionText(int64_t milli) {
  std::string digits = absl::StrCat(1000 + milli).substr(1);  // 3 digits
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return absl::StrCat("0.", digits);
}

absl::StatusOr<Annotations> AnnotationsFromResources(const HandWritten& hw) {
  const std::string asked =
      absl::StrCat(Absl(kGpuMilliResource), "=", hw.milli, ", ", Absl(kGpuMemoryResource), "=", hw.memory_mib);
  if (hw.milli <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(asked, ": GPU memory needs GPUs: request ", Absl(kGpuMilliResource),
                                                   " too (1000 a GPU)"));
  }
  Annotations out;
  int64_t count = 1;
  if (hw.milli % 1000 == 0) {
    count = hw.milli / 1000;
    out[std::string(kGpuCount)] = absl::StrCat(count);
  } else if (hw.milli < 1000) {
    out[std::string(kGpuFraction)] = FractionText(hw.milli);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        asked, ": more than one GPU must be whole GPUs (a multiple of 1000); for shares of several GPUs write the "
               "annotations tessera.io/gpu-count and tessera.io/gpu-fraction"));
  }
  if (hw.memory_mib > 0) {
    if (hw.memory_mib % count != 0) {
      return absl::InvalidArgumentError(absl::StrCat(asked, ": the memory must divide evenly among the ", count, " GPUs"));
    }
    out[std::string(kGpuMemory)] = absl::StrCat(hw.memory_mib / count, "Mi");
  }
  return out;
}

struct Amounts {
  int64_t milli = 0;
  int64_t memory_mib = 0;
};

Amounts AmountsOf(const PodGpuRequest& r) {
  return {.milli = r.count * r.guaranteed.value(), .memory_mib = r.count * r.memory.value()};
}

// Adds `values` under `path` (an object member that may be absent) key by key.
void AddMembers(std::vector<JsonPatchOp>& ops, const json* existing, const std::string& path, const json& values) {
  if (existing == nullptr || !existing->is_object()) {
    ops.push_back({"add", path, values});
    return;
  }
  for (const auto& [key, value] : values.items()) {
    const json* current = Member(*existing, key);
    if (current != nullptr && *current == value) continue;
    ops.push_back({"add", path + "/" + PointerKey(key), value});
  }
}

void AddResources(std::vector<JsonPatchOp>& ops, const json& container, size_t index, const Amounts& amounts) {
  json wanted = {{std::string(kGpuMilliResource), absl::StrCat(amounts.milli)}};
  if (amounts.memory_mib > 0) wanted[std::string(kGpuMemoryResource)] = absl::StrCat(amounts.memory_mib);
  const std::string path = absl::StrCat("/spec/containers/", index, "/resources");
  const json* resources = Member(container, "resources");
  if (resources == nullptr || !resources->is_object()) {
    ops.push_back({"add", path, {{"requests", wanted}, {"limits", wanted}}});
    return;
  }
  for (const char* kind : {"requests", "limits"}) AddMembers(ops, Member(*resources, kind), path + "/" + kind, wanted);
}

// The environment that hands the container its GPUs and its limits: each
// vendor's variables read the assignment bind writes, in that vendor's form.
json HandOffEnv(const PodGpuRequest& r, GpuEnforcement enforcement, absl::Span<const GpuVendor> cluster_vendors) {
  const absl::Span<const GpuVendor> vendors = r.vendors.empty() ? cluster_vendors : absl::MakeConstSpan(r.vendors);
  json env = json::array();
  std::vector<std::string_view> named;
  for (GpuVendor vendor : vendors) {
    for (std::string_view variable : VisibleDevicesVariables(vendor)) {
      if (std::find(named.begin(), named.end(), variable) != named.end()) continue;  // HIP: AMD and Hygon
      named.push_back(variable);
      env.push_back(
          {{"name", std::string(variable)},
           {"valueFrom",
            {{"fieldRef", {{"fieldPath", absl::StrCat("metadata.annotations['", Absl(kVisibleDevices), "']")}}}}}});
    }
  }
  // The share limits are CUDA's (MPS, HAMi-core): for NVIDIA GPUs only.
  const bool nvidia = std::find(vendors.begin(), vendors.end(), GpuVendor::kNvidia) != vendors.end();
  if (!nvidia || r.whole_gpu || enforcement == GpuEnforcement::kNone) return env;
  const int64_t percent = (r.limit.value() + 9) / 10;
  const int64_t memory_limit = std::max(r.memory_limit.value(), r.memory.value());
  if (enforcement == GpuEnforcement::kMps) {
    env.push_back({{"name", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {"value", absl::StrCat(percent)}});
    if (memory_limit > 0) {
      std::vector<std::string> per_device;
      for (int i = 0; i < r.count; ++i) per_device.push_back(absl::StrCat(i, "=", memory_limit, "M"));
      env.push_back({{"name", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}, {"value", absl::StrJoin(per_device, ",")}});
    }
  } else {
    env.push_back({{"name", "CUDA_DEVICE_SM_LIMIT"}, {"value", absl::StrCat(percent)}});
    if (memory_limit > 0) env.push_back({{"name", "CUDA_DEVICE_MEMORY_LIMIT"}, {"value", absl::StrCat(memory_limit, "m")}});
  }
  return env;
}

// Adds each variable the container does not set itself (its own value wins).
void AddEnv(std::vector<JsonPatchOp>& ops, const json& container, size_t index, const json& wanted) {
  const std::string path = absl::StrCat("/spec/containers/", index, "/env");
  const json* env = Member(container, "env");
  if (env == nullptr || !env->is_array()) {
    ops.push_back({"add", path, wanted});
    return;
  }
  for (const json& var : wanted) {
    bool present = false;
    for (const json& e : *env) present = present || (Member(e, "name") != nullptr && e["name"] == var["name"]);
    if (!present) ops.push_back({"add", path + "/-", var});
  }
}

void SetSchedulerName(std::vector<JsonPatchOp>& ops, const json& spec, const std::string& name) {
  if (name.empty()) return;
  const json* current = Member(spec, "schedulerName");
  if (current == nullptr || !current->is_string() || current->get<std::string>().empty()) {
    ops.push_back({"add", "/spec/schedulerName", name});
  } else if (current->get<std::string>() == kDefaultScheduler) {
    ops.push_back({"replace", "/spec/schedulerName", name});
  }
}

// The request by the annotations, or derived from hand-written resources
// (then `derived` holds the annotations to add).
absl::StatusOr<std::optional<PodGpuRequest>> RequestOf(const json& pod, const HandWritten& hw, Annotations& derived) {
  absl::StatusOr<std::optional<PodGpuRequest>> request = ParsePodGpuRequest(TesseraAnnotations(pod));
  if (!request.ok() || request->has_value()) return request;
  if (hw.any_mig()) {
    const std::string asked = absl::StrCat(Absl(kMigResourcePrefix), absl::StrJoin(hw.mig_profiles, ", nvidia.com/mig-"));
    if (hw.any()) {
      return absl::InvalidArgumentError(absl::StrCat(asked, ": a MIG instance and GPU shares (",
                                                     Absl(kGpuMilliResource), ") in one pod: ask for one or the other"));
    }
    if (hw.mig_profiles.size() > 1 || hw.mig_instances > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(asked, " (", hw.mig_instances, " in all): Tessera places one MIG instance per pod"));
    }
    derived[std::string(kMigProfile)] = hw.mig_profiles.front();
    request = ParsePodGpuRequest(derived);
    if (!request.ok()) return absl::InvalidArgumentError(absl::StrCat(asked, ": ", request.status().message()));
    return request;
  }
  if (!hw.any()) return request;
  absl::StatusOr<Annotations> from_resources = AnnotationsFromResources(hw);
  if (!from_resources.ok()) return from_resources.status();
  derived = *std::move(from_resources);
  request = ParsePodGpuRequest(derived);
  if (!request.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(kGpuMilliResource), "=", hw.milli, ": ",
                                                   request.status().message()));
  }
  return request;
}

absl::Status CheckAgreement(const HandWritten& hw, const Amounts& amounts) {
  if (hw.milli == amounts.milli && hw.memory_mib == amounts.memory_mib) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the containers request ", Absl(kGpuMilliResource), "=", hw.milli, " and ", Absl(kGpuMemoryResource), "=",
      hw.memory_mib, " but the annotations ask for ", amounts.milli, " and ", amounts.memory_mib,
      ": write one of the two (the webhook adds the other) or make them agree"));
}

}  // namespace

absl::StatusOr<std::vector<GpuVendor>> ParseGpuVendorList(std::string_view names) {
  std::vector<GpuVendor> vendors;
  for (absl::string_view part : absl::StrSplit(Absl(names), ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    const std::optional<GpuVendor> vendor = ParseGpuVendor(name);
    if (!vendor.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU vendor \"", name, "\" must be one of nvidia, amd, intel, ascend, cambricon, hygon"));
    }
    if (std::find(vendors.begin(), vendors.end(), *vendor) == vendors.end()) vendors.push_back(*vendor);
  }
  return vendors;
}

absl::StatusOr<GpuEnforcement> ParseGpuEnforcement(std::string_view name) {
  if (name == "none") return GpuEnforcement::kNone;
  if (name == "mps") return GpuEnforcement::kMps;
  if (name == "hami-core") return GpuEnforcement::kHamiCore;
  return absl::InvalidArgumentError(absl::StrCat("GPU enforcement \"", Absl(name), "\" must be none, mps or hami-core"));
}

absl::StatusOr<std::vector<JsonPatchOp>> MutateGpuPod(const json& pod, const PodMutationOptions& options) {
  const json* spec = Member(pod, "spec");
  const json* containers = spec != nullptr ? Member(*spec, "containers") : nullptr;
  if (containers == nullptr || !containers->is_array() || containers->empty()) {
    return absl::InvalidArgumentError("the pod has no spec.containers");
  }
  absl::StatusOr<HandWritten> hw = ReadResources(*containers);
  if (!hw.ok()) return hw.status();
  Annotations derived;
  absl::StatusOr<std::optional<PodGpuRequest>> request = RequestOf(pod, *hw, derived);
  if (!request.ok()) return request.status();
  if (!request->has_value()) return std::vector<JsonPatchOp>{};
  const bool mig = !(*request)->mig_profile.empty();
  const Amounts amounts = AmountsOf(**request);
  if (!mig && hw->any() && derived.empty()) {
    if (absl::Status st = CheckAgreement(*hw, amounts); !st.ok()) return st;
  }

  std::vector<JsonPatchOp> ops;
  if (!derived.empty()) {
    const json* meta = Member(pod, "metadata");
    json values = json::object();
    for (const auto& [key, value] : derived) values[key] = value;
    if (meta == nullptr || !meta->is_object()) {
      // No metadata object to add into (never from the API server, but the
      // patch must still apply to the pod it was made for).
      ops.push_back({"add", "/metadata", {{"annotations", values}}});
    } else {
      AddMembers(ops, Member(*meta, "annotations"), "/metadata/annotations", values);
    }
  }
  SetSchedulerName(ops, *spec, options.scheduler_name);
  if (mig) {
    // A MIG instance is counted by its own resource (nvidia.com/mig-<profile>,
    // when the user wrote it), never in milli-GPU: no resources are added.
    // A container holding that resource gets its instance from the NVIDIA
    // device plugin, which allocates one for it: a second
    // NVIDIA_VISIBLE_DEVICES beside the plugin's would leave the runtime to
    // pick one, and for an instance whose UUID Tessera does not know (GPU
    // Feature Discovery's labels) it would be empty. Only a pod that asks by
    // annotation alone gets Tessera's hand-off (no share limits: the
    // instance is isolated in hardware).
    if (hw->any_mig()) return ops;
    const json env = HandOffEnv(**request, GpuEnforcement::kNone, options.vendors);
    AddEnv(ops, (*containers)[0], 0, env);
    return ops;
  }
  // The GPU containers: those that asked by hand, else the first.
  const std::vector<size_t> targets = hw->any() ? hw->containers : std::vector<size_t>{0};
  if (!hw->any()) AddResources(ops, (*containers)[0], 0, amounts);
  const json env = HandOffEnv(**request, options.enforcement, options.vendors);
  for (size_t i : targets) AddEnv(ops, (*containers)[i], i, env);
  return ops;
}

std::string FormatJsonPatch(const std::vector<JsonPatchOp>& ops) {
  json doc = json::array();
  for (const JsonPatchOp& op : ops) doc.push_back({{"op", op.op}, {"path", op.path}, {"value", op.value}});
  return doc.dump();
}

}  // namespace tessera::k8s
