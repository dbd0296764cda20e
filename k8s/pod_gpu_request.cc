#include "k8s/pod_gpu_request.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/internal/errors.h"
#include "scheduler/model/mig_geometry.h"
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

// The seven request annotations of a pod, each null when absent.
struct RequestAnnotations {
  const std::string* count;
  const std::string* fraction;
  const std::string* fraction_limit;
  const std::string* memory;
  const std::string* memory_limit;
  const std::string* model;
  const std::string* model_exclude;
  const std::string* vendor;
  const std::string* mig_profile;

  [[nodiscard]] bool none() const {
    return !count && !fraction && !fraction_limit && !memory && !memory_limit && !model && !model_exclude && !vendor &&
           !mig_profile;
  }
};

void ReadCount(const RequestAnnotations& a, PodGpuRequest& request, ErrorList& errors) {
  if (!a.count) return;
  absl::StatusOr<int64_t> n = ParseCount(*a.count);
  if (n.ok() && *n >= 1 && *n <= kMaxGpusPerPod) {
    request.count = static_cast<int32_t>(*n);
  } else {
    errors.Add(absl::StrCat(Field(kGpuCount, *a.count), ": must be an integer in 1..", kMaxGpusPerPod));
  }
}

// The share of each GPU. A fraction that fails to parse leaves `guaranteed`
// unknown, so the limit is then only checked on its own.
void ReadShare(const RequestAnnotations& a, PodGpuRequest& request, ErrorList& errors) {
  bool fraction_ok = false;
  if (a.fraction) {
    absl::StatusOr<MilliGpu> share = ParseGpuFraction(*a.fraction);
    if (share.ok()) {
      fraction_ok = true;
      request.whole_gpu = false;
      request.guaranteed = *share;
      request.limit = *share;
    } else {
      errors.Add(absl::StrCat(Field(kGpuFraction, *a.fraction), ": ", share.status().message()));
    }
  }
  if (!a.fraction_limit) return;
  absl::StatusOr<MilliGpu> limit = ParseGpuFraction(*a.fraction_limit);
  if (!limit.ok()) {
    errors.Add(absl::StrCat(Field(kGpuFractionLimit, *a.fraction_limit), ": ", limit.status().message()));
  }
  if (!a.fraction) {
    // A limit alone would make a whole-GPU request look shareable; refuse to guess.
    errors.Add(absl::StrCat(Field(kGpuFractionLimit, *a.fraction_limit), " requires ", Absl(kGpuFraction)));
  } else if (limit.ok() && fraction_ok) {
    if (*limit < request.guaranteed) {
      errors.Add(absl::StrCat(Field(kGpuFractionLimit, *a.fraction_limit), " is below ",
                              Field(kGpuFraction, *a.fraction)));
    } else {
      request.limit = *limit;
    }
  }
}

// Memory, per GPU.
void ReadMemory(const RequestAnnotations& a, PodGpuRequest& request, ErrorList& errors) {
  bool memory_ok = false;
  if (a.memory) {
    absl::StatusOr<MemoryMiB> mib = ParseMemoryQuantity(*a.memory);
    if (mib.ok()) {
      memory_ok = true;
      request.memory = *mib;
      request.memory_limit = *mib;
    } else {
      errors.Add(absl::StrCat(Field(kGpuMemory, *a.memory), ": ", mib.status().message()));
    }
  }
  if (!a.memory_limit) return;
  absl::StatusOr<MemoryMiB> mib = ParseMemoryQuantity(*a.memory_limit);
  if (!mib.ok()) {
    errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *a.memory_limit), ": ", mib.status().message()));
  }
  if (!a.memory) {
    errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *a.memory_limit), " requires ", Absl(kGpuMemory)));
  } else if (mib.ok() && memory_ok) {
    if (*mib < request.memory) {
      errors.Add(absl::StrCat(Field(kGpuMemoryLimit, *a.memory_limit), " is below ", Field(kGpuMemory, *a.memory)));
    } else {
      request.memory_limit = *mib;
    }
  }
}

void ReadModels(const RequestAnnotations& a, PodGpuRequest& request, ErrorList& errors) {
  if (a.vendor) {
    for (const std::string& name : ParseModelList(kGpuVendor, *a.vendor, errors)) {
      const std::optional<GpuVendor> vendor = ParseGpuVendor(name);
      if (!vendor.has_value()) {
        errors.Add(absl::StrCat(Field(kGpuVendor, *a.vendor), ": ", internal::Quote(name),
                                " is not a vendor (nvidia, amd, intel, ascend, cambricon, hygon)"));
        continue;
      }
      request.vendors.push_back(*vendor);
    }
  }
  if (a.model) request.models = ParseModelList(kGpuModel, *a.model, errors);
  if (a.model_exclude) request.excluded_models = ParseModelList(kGpuModelExclude, *a.model_exclude, errors);
  for (const std::string& excluded : request.excluded_models) {
    if (std::find(request.models.begin(), request.models.end(), excluded) != request.models.end()) {
      errors.Add(absl::StrCat(Field(kGpuModelExclude, *a.model_exclude), ": ", internal::Quote(excluded),
                              " is also accepted by ", Field(kGpuModel, *a.model)));
    }
  }
}

// A MIG instance: its profile stands for its compute and memory, so a share,
// memory or a count other than one beside it would be a second request.
void ReadMigProfile(const RequestAnnotations& a, PodGpuRequest& request, ErrorList& errors) {
  if (!a.mig_profile) return;
  const std::string_view profile = Trim(*a.mig_profile);
  if (!IsMigProfileName(profile)) {
    errors.Add(absl::StrCat(Field(kMigProfile, *a.mig_profile),
                            ": must be a MIG profile such as 1g.10gb, 3g.40gb or 1g.10gb+me"));
    return;
  }
  for (const auto& [other, key] : {std::pair{a.fraction, kGpuFraction}, std::pair{a.fraction_limit, kGpuFractionLimit},
                                   std::pair{a.memory, kGpuMemory}, std::pair{a.memory_limit, kGpuMemoryLimit}}) {
    if (other != nullptr) {
      errors.Add(absl::StrCat(Field(kMigProfile, *a.mig_profile), " comes with its own compute and memory: drop ",
                              Field(key, *other)));
    }
  }
  if (a.count && request.count != 1) {
    errors.Add(absl::StrCat(Field(kMigProfile, *a.mig_profile), " places one MIG instance per pod: drop ",
                            Field(kGpuCount, *a.count)));
  }
  request.mig_profile = profile;
  request.count = 1;
  request.whole_gpu = true;
  // What the instance holds, for quotas and accounting (the GPU's model
  // decides the exact memory; the name's is what users read).
  request.guaranteed = request.limit = MigComputeOfName(profile);
  request.memory = request.memory_limit = MigMemoryOfName(profile);
}

}  // namespace

bool IsMigProfileName(std::string_view name) {
  // <compute>g.<memory>gb, then an optional "+me" (media extensions) or
  // "+gfx": digits are 1..2 wide, so "1g.10gb" and "7g.141gb"'s 3 fit.
  auto digits = [&](size_t most) {
    size_t n = 0;
    while (n < name.size() && n < most && name[n] >= '0' && name[n] <= '9') ++n;
    if (n == 0 || name[0] == '0') return false;
    name.remove_prefix(n);
    return true;
  };
  auto literal = [&](std::string_view text) {
    if (name.substr(0, text.size()) != text) return false;
    name.remove_prefix(text.size());
    return true;
  };
  if (!digits(1) || !literal("g.") || !digits(3) || !literal("gb")) return false;
  return name.empty() || name == "+me" || name == "+gfx";
}

absl::StatusOr<std::optional<PodGpuRequest>> ParsePodGpuRequest(const Annotations& annotations) {
  const RequestAnnotations a{.count = Find(annotations, kGpuCount),
                             .fraction = Find(annotations, kGpuFraction),
                             .fraction_limit = Find(annotations, kGpuFractionLimit),
                             .memory = Find(annotations, kGpuMemory),
                             .memory_limit = Find(annotations, kGpuMemoryLimit),
                             .model = Find(annotations, kGpuModel),
                             .model_exclude = Find(annotations, kGpuModelExclude),
                             .vendor = Find(annotations, kGpuVendor),
                             .mig_profile = Find(annotations, kMigProfile)};
  if (a.none()) return std::nullopt;
  // Every problem is reported, in the order of the annotations.
  PodGpuRequest request;
  ErrorList errors;
  ReadCount(a, request, errors);
  ReadShare(a, request, errors);
  ReadMemory(a, request, errors);
  ReadModels(a, request, errors);
  ReadMigProfile(a, request, errors);
  if (!errors.empty()) return errors.ToStatus();
  return request;
}

}  // namespace tessera::k8s
