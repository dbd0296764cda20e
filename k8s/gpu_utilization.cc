#include "k8s/gpu_utilization.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "k8s/internal/errors.h"
#include "k8s/internal/json.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using internal::ErrorList;

constexpr size_t kMaxGpus = 64;
constexpr int64_t kMaxGpuIndex = 255;
constexpr int64_t kMaxMemoryMiB = int64_t{1} << 40;
constexpr size_t kMaxWindowName = 32;

std::string Prefix() { return absl::StrCat("annotation ", Absl(kGpuUtilization), ": "); }

// A finite JSON number (integer or not) within [min, max].
std::optional<double> NumberIn(simdjson::dom::element value, double min, double max) {
  double v = 0;
  if (value.get_double().get(v) != simdjson::SUCCESS) {
    int64_t i = 0;
    uint64_t u = 0;
    if (value.get_int64().get(i) == simdjson::SUCCESS) {
      v = static_cast<double>(i);
    } else if (value.get_uint64().get(u) == simdjson::SUCCESS) {
      v = static_cast<double>(u);
    } else {
      return std::nullopt;
    }
  }
  if (!std::isfinite(v) || v < min || v > max) return std::nullopt;
  return v;
}

int64_t Round(double v) { return static_cast<int64_t>(std::llround(v)); }

void ParseGpu(size_t item, simdjson::dom::element element, std::array<int, kMaxGpuIndex + 1>& seen,
              NodeTelemetry& telemetry, ErrorList& errors) {
  bool valid = true;
  auto fail = [&](std::string_view message) {
    errors.Add(absl::StrCat(Prefix(), "gpus[", item, "]: ", Absl(message)));
    valid = false;
  };
  simdjson::dom::object object;
  if (element.get_object().get(object) != simdjson::SUCCESS) {
    fail("must be a JSON object");
    return;
  }
  GpuTelemetry gpu;
  int64_t index = -1;  // -1: absent or invalid (a plain integer: GCC 12 misreads an optional here)
  for (simdjson::dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    if (key == "index") {
      const std::optional<int64_t> value = internal::AsInt64(field.value);
      index = value.value_or(-1);
      if (index < 0 || index > kMaxGpuIndex) {
        index = -1;
        fail("\"index\" must be an integer in 0..255");
      }
    } else if (key == "utilization" || key == "sustainedUtilization") {
      const std::optional<double> percent = NumberIn(field.value, 0, 100);
      if (!percent) {
        fail(absl::StrCat("\"", Absl(key), "\" must be a number in 0..100 (percent)"));
        continue;
      }
      (key == "utilization" ? gpu.utilization : gpu.sustained_utilization) = PerMille(Round(*percent * 10));
    } else if (key == "smActive") {
      const std::optional<double> ratio = NumberIn(field.value, 0, 1);
      if (!ratio) {
        fail("\"smActive\" must be a number in 0..1 (ratio)");
        continue;
      }
      gpu.sm_active = PerMille(Round(*ratio * 1000));
    } else if (key == "memoryUsedMiB" || key == "memoryFreeMiB") {
      const std::optional<int64_t> mib = internal::AsInt64(field.value);
      if (!mib || *mib < 0 || *mib > kMaxMemoryMiB) {
        fail(absl::StrCat("\"", Absl(key), "\" must be a non-negative integer"));
        continue;
      }
      (key == "memoryUsedMiB" ? gpu.memory_used : gpu.memory_free) = MemoryMiB(*mib);
    } else if (key == "uuid") {
      std::string_view uuid;
      if (field.value.get_string().get(uuid) != simdjson::SUCCESS) fail("\"uuid\" must be a string");
    }
    // Other keys are ignored so that a newer agent can add fields.
  }
  if (index < 0) {
    if (valid) fail("\"index\" is required");
    return;
  }
  if (!valid) return;
  int& first = seen[static_cast<size_t>(index)];
  if (first >= 0) {
    fail(absl::StrCat("\"index\" ", index, " repeats gpus[", first, "]"));
    return;
  }
  first = static_cast<int>(item);
  gpu.index = static_cast<int32_t>(index);
  telemetry.gpus.push_back(gpu);
}

// A short window name; nullopt (error recorded) otherwise.
std::optional<std::string> WindowName(std::string_view key, simdjson::dom::element value, ErrorList& errors) {
  std::string_view name;
  if (value.get_string().get(name) != simdjson::SUCCESS || name.empty() || name.size() > kMaxWindowName) {
    errors.Add(absl::StrCat(Prefix(), "\"", Absl(key), "\" must be a string of 1..", kMaxWindowName, " bytes"));
    return std::nullopt;
  }
  return std::string(name);
}

}  // namespace

absl::StatusOr<NodeTelemetry> ParseGpuUtilization(std::string_view json, absl::Duration ttl) {
  if (json.size() > internal::kMaxAnnotationBytes) {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), "longer than ", internal::kMaxAnnotationBytes, " bytes"));
  }
  simdjson::dom::element root;
  if (auto error = internal::ParseJson(json).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), "not valid JSON (", simdjson::error_message(error), ")"));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), "must be a JSON object"));
  }

  NodeTelemetry telemetry;
  telemetry.source = TelemetrySource::kAnnotation;
  telemetry.stale_after = ttl;
  telemetry.utilization_window = "current";
  telemetry.sustained_window = "sustained";
  ErrorList errors;
  std::optional<absl::Time> timestamp;
  bool has_timestamp = false, has_gpus = false;
  std::array<int, kMaxGpuIndex + 1> seen;
  seen.fill(-1);
  for (simdjson::dom::key_value_pair field : object) {
    if (field.key == "timestamp") {
      has_timestamp = true;
      std::string_view text;
      absl::Time t;
      std::string why;
      if (field.value.get_string().get(text) != simdjson::SUCCESS ||
          !absl::ParseTime(absl::RFC3339_full, Absl(text), &t, &why)) {
        errors.Add(absl::StrCat(Prefix(), "\"timestamp\" must be an RFC 3339 time such as \"2026-11-21T22:40:12Z\""));
      } else {
        timestamp = t;
      }
    } else if (field.key == "window") {
      if (auto name = WindowName(field.key, field.value, errors)) telemetry.utilization_window = *std::move(name);
    } else if (field.key == "sustainedWindow") {
      if (auto name = WindowName(field.key, field.value, errors)) telemetry.sustained_window = *std::move(name);
    } else if (field.key == "gpus") {
      has_gpus = true;
      simdjson::dom::array gpus;
      if (field.value.get_array().get(gpus) != simdjson::SUCCESS || gpus.size() == 0 || gpus.size() > kMaxGpus) {
        errors.Add(absl::StrCat(Prefix(), "\"gpus\" must be a list of 1..", kMaxGpus, " GPUs"));
        continue;
      }
      telemetry.gpus.clear();
      seen.fill(-1);
      telemetry.gpus.reserve(gpus.size());
      size_t item = 0;
      for (simdjson::dom::element gpu : gpus) ParseGpu(item++, gpu, seen, telemetry, errors);
    }
  }
  if (!has_timestamp) errors.Add(absl::StrCat(Prefix(), "\"timestamp\" is required"));
  if (!has_gpus) errors.Add(absl::StrCat(Prefix(), "\"gpus\" is required"));
  if (!errors.empty()) return errors.ToStatus();

  std::sort(telemetry.gpus.begin(), telemetry.gpus.end(),
            [](const GpuTelemetry& a, const GpuTelemetry& b) { return a.index < b.index; });
  for (GpuTelemetry& gpu : telemetry.gpus) {
    gpu.sampled_at = *timestamp;
  }
  return telemetry;
}

}  // namespace tessera::k8s
