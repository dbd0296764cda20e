#include "k8s/gfd_mig.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "k8s/annotations.h"
#include "k8s/internal/errors.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/quantity_parse.h"

namespace tessera::k8s {
namespace {

using internal::ErrorList;
using internal::Field;

constexpr std::string_view kMigInfix = "-MIG-";
/// What GFD appends to a product whose resource is time-sliced.
constexpr std::string_view kSharedSuffix = "-SHARED";
/// The node's cap (k8s/node_inventory.cc), and the most instances one GPU
/// holds (its 7 compute slices).
constexpr int64_t kMaxGpus = 64;
constexpr int64_t kMaxInstancesPerGpu = 7;

/// Instances of one profile to lay out.
struct Wanted {
  const MigProfile* profile = nullptr;
  int64_t count = 0;
};

/// Per GPU, the instances laid out on it.
using Layout = std::vector<std::vector<MigInstance>>;

std::string CountLabel(std::string_view profile) {
  return absl::StrCat(Absl(kMigResourcePrefix), Absl(profile), Absl(kGfdMigCountSuffix));
}

// Big first: a 4g.40gb (start 0 only) placed after a 3g.40gb took slice 0
// would not fit, and the small ones fill what is left anywhere.
void SortLargestFirst(std::vector<Wanted>& wanted) {
  std::stable_sort(wanted.begin(), wanted.end(), [](const Wanted& a, const Wanted& b) {
    if (a.profile->memory_slices != b.profile->memory_slices) {
      return a.profile->memory_slices > b.profile->memory_slices;
    }
    return std::popcount(a.profile->starts) < std::popcount(b.profile->starts);
  });
}

// Lays `wanted` (sorted) out on `gpus` GPUs: each instance on the GPU with
// the most free slices (`spread`) or the first (else) where its profile has
// a free valid start, at the highest one (a 3g at slice 4 leaves 0-3 to the
// smaller profiles, whose valid starts lie low; a 1g never starts at 7).
// nullopt when an instance fits nowhere.
std::optional<Layout> Place(absl::Span<const Wanted> wanted, int32_t gpus, bool spread) {
  std::vector<SliceMask> taken(static_cast<size_t>(gpus), 0);
  Layout layout(static_cast<size_t>(gpus));
  for (const Wanted& w : wanted) {
    for (int64_t k = 0; k < w.count; ++k) {
      int32_t chosen = -1;
      SliceMask starts = 0;
      int used = kMigSlices + 1;  // slices taken on the GPU chosen
      for (int32_t g = 0; g < gpus; ++g) {
        const SliceMask on_gpu = taken[static_cast<size_t>(g)];
        const SliceMask free = FreeMigStarts(*w.profile, on_gpu);
        if (free == 0 || std::popcount(on_gpu) >= used) continue;
        chosen = g;
        starts = free;
        used = std::popcount(on_gpu);
        if (!spread) break;
      }
      if (chosen < 0) return std::nullopt;
      const int32_t start = std::bit_width(starts) - 1;
      taken[static_cast<size_t>(chosen)] |= w.profile->SlicesAt(start);
      layout[static_cast<size_t>(chosen)].push_back(MigInstance{std::string(w.profile->name), start, ""});
    }
  }
  for (std::vector<MigInstance>& instances : layout) {
    std::sort(instances.begin(), instances.end(),
              [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  }
  return layout;
}

// GPUs 0..layout.size()-1 of `gpus` into MIG mode with their instances.
void Apply(Layout layout, std::vector<GpuDevice>& gpus) {
  for (size_t i = 0; i < layout.size() && i < gpus.size(); ++i) {
    gpus[i].mig_mode = true;
    gpus[i].mig = std::move(layout[i]);
  }
}

// The first `m` GPUs in MIG mode with instances Tessera cannot lay out, and
// why (`labels`: the labels and what is wrong with them).
void MarkUnlisted(size_t m, size_t label_count, std::string_view labels, NodeInventory& inventory) {
  for (size_t i = 0; i < m && i < inventory.gpus.size(); ++i) {
    inventory.gpus[i].mig_mode = true;
    inventory.gpus[i].mig_unlisted = true;
  }
  inventory.mig_error = absl::FailedPreconditionError(
      absl::StrCat(label_count == 1 ? "label " : "labels ", Absl(labels), "; ",
                   m == 1 ? std::string("GPU 0 is in MIG mode with its")
                          : absl::StrCat("GPUs 0..", m - 1, " are in MIG mode with their"),
                   " instances unlisted"));
}

std::string NoTableFor(std::string_view model) {
  return model.empty() ? std::string("the GPUs' model is unknown (label nvidia.com/gpu.product)")
                       : absl::StrCat(Absl(model), " is a model Tessera has no MIG table for");
}

// The fewest GPUs, `fewest`..`n`, that the instances lay out on: spread
// first (identical GPUs come out identical), packed where that fails.
std::optional<Layout> LayOutOnFewest(absl::Span<const Wanted> wanted, int64_t fewest, int64_t n) {
  for (int64_t m = fewest; m <= n; ++m) {
    for (const bool spread : {true, false}) {
      if (std::optional<Layout> layout = Place(wanted, static_cast<int32_t>(m), spread)) return layout;
    }
  }
  return std::nullopt;
}

// The count labels, read; the problems go to `errors`.
std::vector<std::pair<GfdMigCount, int64_t>> ReadCounts(absl::Span<const GfdMigCount> counts, ErrorList& errors) {
  std::vector<std::pair<GfdMigCount, int64_t>> out;
  for (const GfdMigCount& c : counts) {
    absl::StatusOr<int64_t> n = ParseCount(c.count);
    if (!n.ok() || *n > kMaxGpus * kMaxInstancesPerGpu) {
      errors.Add(absl::StrCat("label ", Field(CountLabel(c.profile), c.count),
                              ": must be a count of MIG instances, 0..", kMaxGpus * kMaxInstancesPerGpu));
      continue;
    }
    if (*n > 0) out.emplace_back(c, *n);
  }
  return out;
}

std::string LabelList(absl::Span<const std::pair<GfdMigCount, int64_t>> counts) {
  std::vector<std::string> labels;
  for (const auto& [c, n] : counts) labels.push_back(Field(CountLabel(c.profile), c.count));
  return absl::StrJoin(labels, ", ");
}

}  // namespace

absl::StatusOr<GfdMigStrategy> ParseGfdMigStrategy(std::optional<std::string_view> label) {
  if (!label.has_value() || *label == "none") return GfdMigStrategy::kNone;
  if (*label == "single") return GfdMigStrategy::kSingle;
  if (*label == "mixed") return GfdMigStrategy::kMixed;
  return absl::InvalidArgumentError(
      absl::StrCat("label ", Field(kGfdMigStrategyLabel, *label), ": must be none, single or mixed"));
}

bool IsGfdMigProduct(std::string_view product) { return product.find(kMigInfix) != std::string_view::npos; }

absl::StatusOr<NodeInventory> GfdSingleStrategyInventory(std::string_view product, int64_t instances) {
  const size_t infix = product.find(kMigInfix);
  const std::string_view model = product.substr(0, infix);
  std::string_view profile_name = product.substr(infix + kMigInfix.size());
  if (profile_name.ends_with(kSharedSuffix)) profile_name.remove_suffix(kSharedSuffix.size());
  if (profile_name == "INVALID") {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", Field(kGfdProductLabel, product),
                     ": GPU Feature Discovery found the node's MIG set-up invalid for nvidia.com/mig.strategy=single "
                     "(GPUs with and without MIG, more than one profile, or a GPU in MIG mode without instances)"));
  }
  NodeInventory inventory;
  inventory.source = InventorySource::kFeatureDiscovery;
  if (instances == 0) return inventory;
  const MigGeometry* geometry = FindMigGeometry(model);
  const MigProfile* profile = geometry != nullptr ? geometry->Find(profile_name) : nullptr;
  const int64_t per_gpu = profile != nullptr ? MaxMoreMigInstances(*profile, 0) : kMaxInstancesPerGpu;
  const int64_t gpus = instances / per_gpu + (instances % per_gpu != 0 ? 1 : 0);
  if (gpus > kMaxGpus) {
    return absl::InvalidArgumentError(absl::StrCat("label ", Field(kGfdCountLabel, absl::StrCat(instances)), " of ",
                                                   Field(kGfdProductLabel, product), ": ", gpus,
                                                   " GPUs would hold them, more than ", kMaxGpus, " per node"));
  }
  inventory.gpus.resize(static_cast<size_t>(gpus));
  for (int32_t i = 0; i < static_cast<int32_t>(gpus); ++i) {
    inventory.gpus[static_cast<size_t>(i)].index = i;
    inventory.gpus[static_cast<size_t>(i)].model = model;
  }
  if (profile == nullptr) {
    MarkUnlisted(inventory.gpus.size(), 1,
                 absl::StrCat(Field(kGfdProductLabel, product), ": ",
                              geometry == nullptr ? NoTableFor(model)
                                                  : absl::StrCat("the ", Absl(geometry->model), " has no MIG profile ",
                                                                 internal::Quote(profile_name), " in Tessera's table")),
                 inventory);
    return inventory;
  }
  const Wanted wanted[] = {{profile, instances}};
  std::optional<Layout> layout = Place(wanted, static_cast<int32_t>(gpus), /*spread=*/true);
  if (layout.has_value()) Apply(*std::move(layout), inventory.gpus);  // always: per_gpu each
  return inventory;
}

absl::Status LayOutGfdMixedStrategy(absl::Span<const GfdMigCount> counts, std::optional<int64_t> full_gpus,
                                    NodeInventory& inventory) {
  if (counts.size() > kMaxGfdMigProfiles) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxGfdMigProfiles, " labels ",
                                                   Absl(kMigResourcePrefix), "<profile>", Absl(kGfdMigCountSuffix),
                                                   ": no node offers that many MIG profiles"));
  }
  ErrorList errors;
  const std::vector<std::pair<GfdMigCount, int64_t>> read = ReadCounts(counts, errors);
  if (!errors.empty()) return errors.ToStatus();
  if (read.empty()) return absl::OkStatus();
  const int64_t n = static_cast<int64_t>(inventory.gpus.size());
  const std::string_view model = n > 0 ? std::string_view(inventory.gpus.front().model) : std::string_view();
  const int64_t at_least = full_gpus.has_value() && *full_gpus < n ? n - *full_gpus : 0;
  const MigGeometry* geometry = FindMigGeometry(model);
  std::vector<Wanted> wanted;
  std::vector<std::string> unknown;
  int64_t slices = 0;
  for (const auto& [c, count] : read) {
    const MigProfile* profile = geometry != nullptr ? geometry->Find(c.profile) : nullptr;
    if (profile == nullptr) {
      unknown.push_back(Field(CountLabel(c.profile), c.count));
      continue;
    }
    wanted.push_back({profile, count});
    slices += count * profile->memory_slices;
  }
  if (n > 0 && (geometry == nullptr || !unknown.empty())) {
    const std::string why = geometry != nullptr
                          ? absl::StrCat(absl::StrJoin(unknown, ", "), ": the ", Absl(geometry->model),
                                         " has no such profile in Tessera's MIG table")
                          : absl::StrCat(LabelList(read), ": ", NoTableFor(model));
    MarkUnlisted(static_cast<size_t>(at_least > 0 ? at_least : n), geometry != nullptr ? unknown.size() : read.size(),
                 why, inventory);
    return absl::OkStatus();
  }
  SortLargestFirst(wanted);
  const int64_t fewest = std::max({at_least, (slices + kMigSlices - 1) / kMigSlices, int64_t{1}});
  if (std::optional<Layout> layout = LayOutOnFewest(wanted, fewest, n); layout.has_value()) {
    Apply(*std::move(layout), inventory.gpus);
    return absl::OkStatus();
  }
  int64_t instances = 0;
  for (const auto& [c, count] : read) instances += count;
  return absl::InvalidArgumentError(absl::StrCat(read.size() == 1 ? "label " : "labels ", LabelList(read), ": ",
                                                 instances, instances == 1 ? " MIG instance does" : " MIG instances do",
                                                 " not fit on the node's ", n, " ",
                                                 model.empty() ? "GPUs" : absl::StrCat(Absl(model), " GPUs"),
                                                 " (label ", Absl(kGfdCountLabel), ")"));
}

}  // namespace tessera::k8s
