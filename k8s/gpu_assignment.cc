#include "k8s/gpu_assignment.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/internal/errors.h"
#include "k8s/internal/json.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

namespace {

using internal::ErrorList;

constexpr int64_t kMaxGpus = 64;
constexpr int64_t kMaxGpuIndex = 255;
constexpr int64_t kMaxMemoryMiB = int64_t{1} << 40;

std::string Prefix() { return absl::StrCat("annotation ", Absl(kGpuAssignment), ": "); }

// A JSON integer within [min, max], else nullopt.
std::optional<int64_t> IntField(simdjson::dom::element value, int64_t min, int64_t max) {
  const std::optional<int64_t> v = internal::AsInt64(value);
  if (!v || *v < min || *v > max) return std::nullopt;
  return v;
}

// {"profile":"1g.10gb","start":3,"uuid":"MIG-..."}: the MIG instance a pod
// holds (profile and start required; the profile's validity on the GPU is
// the cluster model's to judge, which knows the GPU's model).
absl::StatusOr<MigInstance> ParseMigInstance(simdjson::dom::element element) {
  simdjson::dom::object object;
  if (element.get_object().get(object) != simdjson::SUCCESS) return absl::InvalidArgumentError("must be a JSON object");
  MigInstance mig;
  bool has_profile = false, has_start = false;
  for (simdjson::dom::key_value_pair field : object) {
    std::string_view text;
    if (field.key == "profile") {
      if (field.value.get_string().get(text) != simdjson::SUCCESS || text.empty() || text.size() > 32) {
        return absl::InvalidArgumentError("\"profile\" must be a profile name such as \"1g.10gb\"");
      }
      mig.profile = text;
      has_profile = true;
    } else if (field.key == "start") {
      const std::optional<int64_t> start = IntField(field.value, 0, 7);
      if (!start) return absl::InvalidArgumentError("\"start\" must be a slice in 0..7");
      mig.start = static_cast<int32_t>(*start);
      has_start = true;
    } else if (field.key == "uuid") {
      if (field.value.get_string().get(text) != simdjson::SUCCESS) {
        return absl::InvalidArgumentError("\"uuid\" must be a string");
      }
      mig.uuid = text;
    }
  }
  if (!has_profile) return absl::InvalidArgumentError("\"profile\" is required");
  if (!has_start) return absl::InvalidArgumentError("\"start\" is required");
  return mig;
}

void ParseShare(size_t item, simdjson::dom::element element, std::array<int, kMaxGpuIndex + 1>& seen,
                GpuAssignment& assignment, ErrorList& errors) {
  bool valid = true;
  // The message prefix is built only on failure: pods are parsed on every cache update.
  auto fail = [&](std::string_view message) {
    errors.Add(absl::StrCat(Prefix(), "gpus[", item, "]: ", Absl(message)));
    valid = false;
  };
  simdjson::dom::object object;
  if (element.get_object().get(object) != simdjson::SUCCESS) {
    fail("must be a JSON object");
    return;
  }
  GpuShare share;
  std::optional<int64_t> index, milli, limit_milli, memory, memory_limit;
  bool has_index = false, has_milli = false, has_memory = false;
  for (simdjson::dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    if (key == "index") {
      has_index = true;
      index = IntField(field.value, 0, kMaxGpuIndex);
      if (!index) fail("\"index\" must be an integer in 0..255");
    } else if (key == "uuid") {
      std::string_view uuid;
      if (field.value.get_string().get(uuid) != simdjson::SUCCESS) {
        fail("\"uuid\" must be a string");
      } else {
        share.uuid = uuid;
      }
    } else if (key == "milli") {
      has_milli = true;
      milli = IntField(field.value, 1, 1000);
      if (!milli) fail("\"milli\" must be an integer in 1..1000");
    } else if (key == "limitMilli") {
      limit_milli = IntField(field.value, 1, 1000);
      if (!limit_milli) fail("\"limitMilli\" must be an integer in 1..1000");
    } else if (key == "memoryMiB") {
      has_memory = true;
      memory = IntField(field.value, 0, kMaxMemoryMiB);
      if (!memory) fail("\"memoryMiB\" must be a non-negative integer");
    } else if (key == "memoryLimitMiB") {
      memory_limit = IntField(field.value, 0, kMaxMemoryMiB);
      if (!memory_limit) fail("\"memoryLimitMiB\" must be a non-negative integer");
    } else if (key == "mig") {
      absl::StatusOr<MigInstance> mig = ParseMigInstance(field.value);
      if (mig.ok()) {
        share.mig = *std::move(mig);
      } else {
        fail(absl::StrCat("\"mig\": ", mig.status().message()));
      }
    }
  }
  if (!has_index) fail("\"index\" is required");
  if (!has_milli) fail("\"milli\" is required");
  if (milli && limit_milli && *limit_milli < *milli) {
    fail(absl::StrCat("\"limitMilli\" ", *limit_milli, " is below \"milli\" ", *milli));
  }
  // Compare against the default (0) only when memoryMiB is absent, not malformed.
  if (memory_limit && (memory || !has_memory) && *memory_limit < memory.value_or(0)) {
    fail(absl::StrCat("\"memoryLimitMiB\" ", *memory_limit, " is below \"memoryMiB\" ", memory.value_or(0)));
  }
  if (!valid) return;
  int& first = seen[static_cast<size_t>(*index)];
  if (first >= 0) {
    fail(absl::StrCat("\"index\" ", *index, " repeats gpus[", first, "]"));
    return;
  }
  first = static_cast<int>(item);
  share.index = static_cast<int32_t>(*index);
  share.guaranteed = MilliGpu(*milli);
  share.limit = MilliGpu(limit_milli.value_or(*milli));
  share.memory = MemoryMiB(memory.value_or(0));
  share.memory_limit = MemoryMiB(memory_limit.value_or(share.memory.value()));
  assignment.gpus.push_back(std::move(share));
}

void AppendInt(std::string& out, std::string_view key, int64_t value) {
  absl::StrAppend(&out, ",\"", Absl(key), "\":", value);
}

}  // namespace

absl::StatusOr<GpuAssignment> ParseGpuAssignment(std::string_view json) {
  if (json.size() > internal::kMaxAnnotationBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(Prefix(), "longer than ", internal::kMaxAnnotationBytes, " bytes"));
  }
  simdjson::dom::element root;
  if (auto error = internal::ParseJson(json).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), "not valid JSON (", simdjson::error_message(error), ")"));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), "must be a JSON object"));
  }

  GpuAssignment assignment;
  ErrorList errors;
  bool has_node = false, has_gpus = false;
  std::array<int, kMaxGpuIndex + 1> seen;
  seen.fill(-1);
  for (simdjson::dom::key_value_pair field : object) {
    if (field.key == "node") {
      has_node = true;
      std::string_view node;
      if (field.value.get_string().get(node) != simdjson::SUCCESS || node.empty()) {
        errors.Add(absl::StrCat(Prefix(), "\"node\" must be a non-empty string"));
      } else {
        assignment.node = node;
      }
    } else if (field.key == "gpus") {
      has_gpus = true;
      simdjson::dom::array gpus;
      if (field.value.get_array().get(gpus) != simdjson::SUCCESS || gpus.size() == 0 ||
          gpus.size() > static_cast<size_t>(kMaxGpus)) {
        errors.Add(absl::StrCat(Prefix(), "\"gpus\" must be a list of 1..", kMaxGpus, " GPUs"));
        continue;
      }
      assignment.gpus.clear();
      seen.fill(-1);
      assignment.gpus.reserve(gpus.size());
      size_t item = 0;
      for (simdjson::dom::element gpu : gpus) ParseShare(item++, gpu, seen, assignment, errors);
    }
    // Other keys are ignored so that a newer binder can add fields.
  }
  if (!has_node) errors.Add(absl::StrCat(Prefix(), "\"node\" is required"));
  if (!has_gpus) errors.Add(absl::StrCat(Prefix(), "\"gpus\" is required"));
  if (!errors.empty()) return errors.ToStatus();
  return assignment;
}

std::string FormatGpuAssignment(const GpuAssignment& assignment) {
  std::string out;
  out.reserve(32 + assignment.node.size() + assignment.gpus.size() * 128);
  out += "{\"node\":";
  AppendJsonString(out, assignment.node);
  out += ",\"gpus\":[";
  for (size_t i = 0; i < assignment.gpus.size(); ++i) {
    const GpuShare& share = assignment.gpus[i];
    if (i > 0) out += ',';
    absl::StrAppend(&out, "{\"index\":", share.index);
    // An empty uuid is the same as none; leaving it out keeps the annotation short.
    if (!share.uuid.empty()) {
      out += ",\"uuid\":";
      AppendJsonString(out, share.uuid);
    }
    AppendInt(out, "milli", share.guaranteed.value());
    AppendInt(out, "limitMilli", share.limit.value());
    AppendInt(out, "memoryMiB", share.memory.value());
    AppendInt(out, "memoryLimitMiB", share.memory_limit.value());
    if (share.mig.has_value()) {
      out += ",\"mig\":{\"profile\":";
      AppendJsonString(out, share.mig->profile);
      AppendInt(out, "start", share.mig->start);
      if (!share.mig->uuid.empty()) {
        out += ",\"uuid\":";
        AppendJsonString(out, share.mig->uuid);
      }
      out += '}';
    }
    out += '}';
  }
  out += "]}";
  return out;
}

std::string FormatVisibleDevices(const GpuAssignment& assignment, GpuVendor vendor) {
  // A MIG instance is named by its own UUID ("MIG-..."), never its GPU's:
  // the index of a GPU in MIG mode would hand over the whole GPU, which no
  // CUDA program can use. Without its UUID, nothing is named.
  auto uuid_of = [](const GpuShare& s) -> const std::string& { return s.mig.has_value() ? s.mig->uuid : s.uuid; };
  if (std::any_of(assignment.gpus.begin(), assignment.gpus.end(),
                  [](const GpuShare& s) { return s.mig.has_value() && s.mig->uuid.empty(); })) {
    return "";
  }
  const bool all_uuids = NamesDevicesByUuid(vendor) && std::all_of(assignment.gpus.begin(), assignment.gpus.end(),
                                     [&](const GpuShare& s) { return !uuid_of(s).empty(); });
  std::string out;
  for (const GpuShare& s : assignment.gpus) {
    if (!out.empty()) out.push_back(',');
    if (all_uuids) {
      out.append(uuid_of(s));
    } else {
      absl::StrAppend(&out, s.index);
    }
  }
  return out;
}

}  // namespace tessera::k8s
