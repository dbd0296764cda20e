#include "k8s/pod_gpu_request.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/internal/errors.h"
#include "scheduler/model/quantity_parse.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

namespace {

using internal::ErrorList;
using internal::Field;

constexpr int64_t kMaxGpusPerPod = 64;

const std::string* Find(const Annotations& annotations, std::string_view key) {
  auto it = annotations.find(Absl(key));
  return it == annotations.end() ? nullptr : &it->second;
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// "A100, H100" -> {"A100", "H100"}. Duplicates collapse to their first
// occurrence: they are harmless and a list with them is clearly meant.
std::vector<std::string> ParseModelList(std::string_view key, const std::string& value, ErrorList& errors) {
  std::vector<std::string> models;
  std::string_view rest = value;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    if (item.empty()) {
      errors.Add(absl::StrCat(Field(key, value), ": model names must not be empty"));
      return {};
    }
    if (std::find(models.begin(), models.end(), item) == models.end()) models.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return models;
}

}  // namespace

absl::StatusOr<std::optional<PodGpuRequest>> ParsePodGpuRequest(const Annotations& annotations) {
  const std::string* count = Find(annotations, kGpuCount);
  const std::string* fraction = Find(annotations, kGpuFraction);
  const std::string* fraction_limit = Find(annotations, kGpuFractionLimit);
  const std::string* memory = Find(annotations, kGpuMemory);
  const std::string* memory_limit = Find(annotations, kGpuMemoryLimit);
  const std::string* model = Find(annotations, kGpuModel);
  const std::string* model_exclude = Find(annotations, kGpuModelExclude);
  if (!count && !fraction && !fraction_limit && !memory && !memory_limit && !model && !model_exclude) {
    return std::nullopt;
  }

  PodGpuRequest request;
  ErrorList errors;

  if (count) {
    absl::StatusOr<int64_t> n = ParseCount(*count);
    if (n.ok() && *n >= 1 && *n <= kMaxGpusPerPod) {
      request.count = static_cast<int32_t>(*n);
    } else {
      errors.Add(absl::StrCat(Field(kGpuCount, *count), ": must be an integer in 1..", kMaxGpusPerPod));
    }
  }

  // Compute share. A fraction that fails to parse leaves `guaranteed` unknown,
  // so the limit is then only checked on its own.
  bool fraction_ok = false;
  if (fraction) {
    absl::StatusOr<MilliGpu> share = ParseGpuFraction(*fraction);
    if (share.ok()) {
      fraction_ok = true;
      request.whole_gpu = false;
      request.guaranteed = *share;
      request.limit = *share;
    } else {
      errors.Add(absl::StrCat(Field(kGpuFraction, *fraction), ": ", share.status().message()));
    }
  }
  if (fraction_limit) {
    absl::StatusOr<MilliGpu> limit = ParseGpuFraction(*fraction_limit);
    if (!limit.ok()) {
      errors.Add(absl::StrCat(Field(kGpuFractionLimit, *fraction_limit), ": ", limit.status().message()));
    }
    if (!fraction) {
      // A limit alone would make a whole-GPU request look shareable; refuse to guess.
      errors.Add(absl::StrCat(Field(kGpuFractionLimit, *fraction_limit), " requires ", Absl(kGpuFraction)));
    } else if (limit.ok() && fraction_ok) {
      if (*limit < request.guaranteed) {
        errors.Add(absl::StrCat(Field(kGpuFractionLimit, *fraction_limit), " is below ",
                                Field(kGpuFraction, *fraction)));
      } else {
        request.limit = *limit;
      }
    }
  }

  // Memory, per GPU.
  bool memory_ok = false;
  if (memory) {
    absl::StatusOr<MemoryMiB> mib = ParseMemoryQuantity(*memory);
    if (mib.ok()) {
      memory_ok = true;
      request.memory = *mib;
      request.memory_limit = *mib;
    } else {
      errors.Add(absl::StrCat(Field(kGpuMemory, *memory), ": ", mib.status().message()));
    }
  }
  if (memory_limit) {
    absl::StatusOr<MemoryMiB> mib = ParseMemoryQuantity(*memory_limit);
    if (!mib.ok()) {
      errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *memory_limit), ": ", mib.status().message()));
    }
    if (!memory) {
      errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *memory_limit), " requires ", Absl(kGpuMemory)));
    } else if (mib.ok() && memory_ok) {
      if (*mib < request.memory) {
        errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *memory_limit), " is below ", Field(kGpuMemory, *memory)));
      } else {
        request.memory_limit = *mib;
      }
    }
  }

  // Models.
  if (model) request.models = ParseModelList(kGpuModel, *model, errors);
  if (model_exclude) request.excluded_models = ParseModelList(kGpuModelExclude, *model_exclude, errors);
  for (const std::string& excluded : request.excluded_models) {
    if (std::find(request.models.begin(), request.models.end(), excluded) != request.models.end()) {
      errors.Add(absl::StrCat(Field(kGpuModelExclude, *model_exclude), ": ", internal::Quote(excluded),
                              " is also accepted by ", Field(kGpuModel, *model)));
    }
  }

  if (!errors.empty()) return errors.ToStatus();
  return request;
}

}  // namespace tessera::k8s
