#include "k8s/node_inventory.h"

#include <algorithm>
#include <array>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/gfd_mig.h"
#include "k8s/gpu_topology.h"
#include "k8s/internal/errors.h"
#include "k8s/internal/json.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/quantity_parse.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

namespace {

using internal::ErrorList;
using internal::Field;

/// No node has more; a larger number is a mistake, and the cap keeps the
/// per-GPU columns of a snapshot bounded.
constexpr int64_t kMaxGpusPerNode = 64;
constexpr int64_t kMaxGpuIndex = 255;
constexpr int64_t kMaxMemoryMiB = int64_t{1} << 40;
constexpr int64_t kMaxNuma = (int64_t{1} << 31) - 1;

std::string AnnotationPrefix() { return absl::StrCat("annotation ", Absl(kGpuInventory), ": "); }

// "mig": [{"profile":"3g.40gb","start":4,"uuid":"MIG-..."}, ...], read into
// `gpu.mig` as written; CheckMigInstances judges them once the model is known.
// The key present puts the GPU in MIG mode: `[]` is MIG mode, no instance yet.
void ParseMigInstances(simdjson::dom::element value, GpuDevice& gpu, const std::function<void(std::string_view)>& fail) {
  simdjson::dom::array list;
  if (value.get_array().get(list) != simdjson::SUCCESS) {
    fail("\"mig\" must be a list of MIG instances");
    return;
  }
  gpu.mig_mode = true;
  size_t k = 0;
  for (simdjson::dom::element element : list) {
    const std::string at = absl::StrCat("\"mig\"[", k++, "]: ");
    simdjson::dom::object object;
    if (element.get_object().get(object) != simdjson::SUCCESS) {
      fail(absl::StrCat(at, "must be a JSON object"));
      continue;
    }
    MigInstance instance;
    bool profile_ok = false, start_ok = false, named = false, started = false;
    for (simdjson::dom::key_value_pair field : object) {
      const std::string_view key = field.key;
      std::string_view text;
      if (key == "profile") {
        named = true;
        profile_ok = field.value.get_string().get(text) == simdjson::SUCCESS && !text.empty();
        if (!profile_ok) fail(absl::StrCat(at, "\"profile\" must be a non-empty string"));
        instance.profile = text;
      } else if (key == "start") {
        started = true;
        const std::optional<int64_t> v = internal::AsInt64(field.value);
        start_ok = v && *v >= 0 && *v < kMigSlices;
        if (!start_ok) fail(absl::StrCat(at, "\"start\" must be a memory slice, 0..", kMigSlices - 1));
        instance.start = start_ok ? static_cast<int32_t>(*v) : 0;
      } else if (key == "uuid") {
        if (field.value.get_string().get(text) != simdjson::SUCCESS) fail(absl::StrCat(at, "\"uuid\" must be a string"));
        instance.uuid = text;
      }
    }
    if (!named) fail(absl::StrCat(at, "\"profile\" is required"));
    if (!started) fail(absl::StrCat(at, "\"start\" is required"));
    if (profile_ok && start_ok) gpu.mig.push_back(std::move(instance));
  }
}

// The instances of a GPU in MIG mode against its model's geometry: a known
// model, its profiles, their valid starts, no two overlapping.
void CheckMigInstances(const GpuDevice& gpu, const std::function<void(std::string_view)>& fail) {
  if (!gpu.mig_mode) return;
  if (gpu.vendor != GpuVendor::kNvidia) {
    fail(absl::StrCat("MIG mode on a GPU whose vendor is ", Absl(GpuVendorName(gpu.vendor)), ": MIG is NVIDIA's"));
    return;
  }
  const MigGeometry* geometry = FindMigGeometry(gpu.model);
  if (geometry == nullptr) {
    // MIG mode alone is a fact to respect (no shares there); instances on a
    // model without a table cannot be checked, nor placed on.
    if (gpu.mig.empty()) return;
    fail(absl::StrCat("MIG instances on a ", gpu.model,
                      ", a model Tessera has no MIG table for (A100 40/80GB, H100 80GB, H200)"));
    return;
  }
  SliceMask taken = 0;
  for (size_t k = 0; k < gpu.mig.size(); ++k) {
    const MigInstance& instance = gpu.mig[k];
    const MigProfile* profile = geometry->Find(instance.profile);
    if (profile == nullptr) {
      fail(absl::StrCat("\"mig\"[", k, "]: the ", Absl(geometry->model), " has no MIG profile \"", instance.profile, "\""));
      continue;
    }
    if (absl::Status placed = CheckMigPlacement(*profile, instance.start, taken); !placed.ok()) {
      fail(absl::StrCat("\"mig\"[", k, "]: ", placed.message()));
      continue;
    }
    taken |= profile->SlicesAt(instance.start);
  }
}

// One item of the annotation's list. Unknown keys are ignored so that newer
// node agents can add fields without breaking older schedulers.
void ParseInventoryItem(size_t item, simdjson::dom::element element, std::array<int, kMaxGpuIndex + 1>& seen,
                        NodeInventory& inventory, ErrorList& errors) {
  bool valid = true;
  // The message prefix is built only on failure: this runs for every GPU of
  // every node in a request.
  auto fail = [&](std::string_view message) {
    errors.Add(absl::StrCat(AnnotationPrefix(), "item ", item, ": ", Absl(message)));
    valid = false;
  };
  simdjson::dom::object object;
  if (element.get_object().get(object) != simdjson::SUCCESS) {
    fail("must be a JSON object");
    return;
  }
  GpuDevice gpu;
  bool has_index = false, has_model = false, has_memory = false, has_mig_list = false, mig_enabled = false;
  for (simdjson::dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    if (key == "index") {
      has_index = true;
      const std::optional<int64_t> v = internal::AsInt64(field.value);
      if (!v || *v < 0 || *v > kMaxGpuIndex) {
        fail("\"index\" must be an integer in 0..255");
      } else {
        gpu.index = static_cast<int32_t>(*v);
      }
    } else if (key == "uuid") {
      std::string_view uuid;
      if (field.value.get_string().get(uuid) != simdjson::SUCCESS) {
        fail("\"uuid\" must be a string");
      } else {
        gpu.uuid = uuid;
      }
    } else if (key == "model") {
      has_model = true;
      std::string_view model;
      if (field.value.get_string().get(model) != simdjson::SUCCESS || model.empty()) {
        fail("\"model\" must be a non-empty string");
      } else {
        gpu.model = model;
      }
    } else if (key == "memoryMiB") {
      has_memory = true;
      const std::optional<int64_t> v = internal::AsInt64(field.value);
      if (!v || *v <= 0 || *v > kMaxMemoryMiB) {
        fail("\"memoryMiB\" must be a positive integer");
      } else {
        gpu.memory = MemoryMiB(*v);
      }
    } else if (key == "numa") {
      const std::optional<int64_t> v = internal::AsInt64(field.value);
      if (!v || *v < -1 || *v > kMaxNuma) {
        fail("\"numa\" must be an integer >= -1");
      } else {
        gpu.numa = static_cast<int32_t>(*v);
      }
    } else if (key == "mig") {
      ParseMigInstances(field.value, gpu, fail);
      has_mig_list = true;
    } else if (key == "migEnabled") {
      // What the node agent writes: the mode, without the instances.
      if (field.value.get_bool().get(mig_enabled) != simdjson::SUCCESS) fail("\"migEnabled\" must be true or false");
    } else if (key == "vendor") {
      std::string_view name;
      std::optional<GpuVendor> vendor;
      if (field.value.get_string().get(name) == simdjson::SUCCESS) vendor = ParseGpuVendor(name);
      if (!vendor.has_value()) {
        fail("\"vendor\" must be one of nvidia, amd, intel, ascend, cambricon, hygon");
      } else {
        gpu.vendor = *vendor;
      }
    } else if (key == "healthy") {
      bool healthy = true;
      if (field.value.get_bool().get(healthy) != simdjson::SUCCESS) {
        fail("\"healthy\" must be true or false");
      } else {
        gpu.healthy = healthy;
      }
    }
  }
  if (!has_index) fail("\"index\" is required");
  if (!has_model) fail("\"model\" is required");
  if (!has_memory) fail("\"memoryMiB\" is required");
  if (mig_enabled && !has_mig_list) {
    gpu.mig_mode = true;
    gpu.mig_unlisted = true;
  }
  if (valid) CheckMigInstances(gpu, fail);
  if (!valid) return;
  int& first = seen[static_cast<size_t>(gpu.index)];
  if (first >= 0) {
    fail(absl::StrCat("\"index\" ", gpu.index, " repeats item ", first));
    return;
  }
  first = static_cast<int>(item);
  inventory.gpus.push_back(std::move(gpu));
}

absl::StatusOr<NodeInventory> ParseAnnotation(std::string_view json) {
  if (json.size() > internal::kMaxAnnotationBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(AnnotationPrefix(), "longer than ", internal::kMaxAnnotationBytes, " bytes"));
  }
  simdjson::dom::element root;
  if (auto error = internal::ParseJson(json).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(AnnotationPrefix(), "not valid JSON (", simdjson::error_message(error), ")"));
  }
  simdjson::dom::array items;
  if (root.get_array().get(items) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(AnnotationPrefix(), "must be a JSON list of GPUs"));
  }
  const size_t n = items.size();
  if (n > static_cast<size_t>(kMaxGpusPerNode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(AnnotationPrefix(), "lists ", n, " GPUs, more than ", kMaxGpusPerNode, " per node"));
  }
  NodeInventory inventory;
  inventory.source = InventorySource::kAnnotation;
  inventory.gpus.reserve(n);
  std::array<int, kMaxGpuIndex + 1> seen;
  seen.fill(-1);
  ErrorList errors;
  size_t item = 0;
  for (simdjson::dom::element element : items) ParseInventoryItem(item++, element, seen, inventory, errors);
  if (!errors.empty()) return errors.ToStatus();
  std::sort(inventory.gpus.begin(), inventory.gpus.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
  return inventory;
}

// Parses a GPU count from a label or allocatable; `kind key` names the source
// ("label nvidia.com/gpu.count").
absl::StatusOr<int64_t> ParseGpuCount(std::string_view kind, std::string_view key, std::string_view value) {
  absl::StatusOr<int64_t> n = ParseCount(value);
  if (!n.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(kind), " ", Field(key, value), ": ", n.status().message()));
  }
  if (*n > kMaxGpusPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat(Absl(kind), " ", Field(key, value), ": more than ", kMaxGpusPerNode, " GPUs per node"));
  }
  return *n;
}

// The label that makes a node's labels GFD's though its count label is missing.
std::string FirstGfdLabelWithoutCount(const NodeInventoryFields& fields) {
  if (fields.gfd_product) return Field(kGfdProductLabel, *fields.gfd_product);
  if (fields.gfd_memory) return Field(kGfdMemoryLabel, *fields.gfd_memory);
  const GfdMigCount& mig = fields.gfd_mig_counts.front();
  return Field(absl::StrCat(Absl(kMigResourcePrefix), Absl(mig.profile), Absl(kGfdMigCountSuffix)), mig.count);
}

// allocatable nvidia.com/gpu when readable: beside GFD's labels it only says
// how many GPUs are not in MIG mode, so an unreadable one is no error here.
std::optional<int64_t> FullGpus(const NodeInventoryFields& fields) {
  if (!fields.allocatable_gpus) return std::nullopt;
  absl::StatusOr<int64_t> n = ParseCount(*fields.allocatable_gpus);
  return n.ok() ? std::optional<int64_t>(*n) : std::nullopt;
}

absl::StatusOr<NodeInventory> ParseFeatureDiscovery(const NodeInventoryFields& fields) {
  if (!fields.gfd_count) {
    // The product or memory label alone says nothing about how many GPUs
    // there are; guessing from allocatable would hide a broken GFD.
    return absl::InvalidArgumentError(absl::StrCat("label ", FirstGfdLabelWithoutCount(fields),
                                                   " is set but label ", Absl(kGfdCountLabel), " is missing"));
  }
  ErrorList errors;
  absl::StatusOr<GfdMigStrategy> strategy = ParseGfdMigStrategy(fields.gfd_mig_strategy);
  if (!strategy.ok()) errors.Add(std::string(strategy.status().message()));
  // Under strategy single a "-MIG-" product describes instances: gpu.count
  // counts them (up to 7 a GPU) and gpu.memory is one's.
  const bool single_mig = strategy.ok() && *strategy == GfdMigStrategy::kSingle && fields.gfd_product &&
                          IsGfdMigProduct(*fields.gfd_product);
  absl::StatusOr<int64_t> count = single_mig ? ParseCount(*fields.gfd_count)
                                             : ParseGpuCount("label", kGfdCountLabel, *fields.gfd_count);
  if (!count.ok()) {
    errors.Add(single_mig ? absl::StrCat("label ", Field(kGfdCountLabel, *fields.gfd_count), ": ",
                                         count.status().message())
                          : std::string(count.status().message()));
  }
  MemoryMiB memory{0};
  if (fields.gfd_memory && !single_mig) {
    absl::StatusOr<int64_t> mib = ParseCount(*fields.gfd_memory);
    if (!mib.ok() || *mib <= 0 || *mib > kMaxMemoryMiB) {
      errors.Add(absl::StrCat("label ", Field(kGfdMemoryLabel, *fields.gfd_memory),
                              ": must be a positive integer (MiB)"));
    } else {
      memory = MemoryMiB(*mib);
    }
  }
  if (!errors.empty()) return errors.ToStatus();
  if (single_mig) return GfdSingleStrategyInventory(*fields.gfd_product, *count);

  NodeInventory inventory;
  inventory.source = InventorySource::kFeatureDiscovery;
  inventory.gpus.resize(static_cast<size_t>(*count));
  for (int32_t i = 0; i < static_cast<int32_t>(*count); ++i) {
    GpuDevice& gpu = inventory.gpus[static_cast<size_t>(i)];
    gpu.index = i;
    // An empty product label means "model unknown", like no label at all.
    if (fields.gfd_product) gpu.model = *fields.gfd_product;
    gpu.memory = memory;
  }
  if (*strategy == GfdMigStrategy::kMixed && !fields.gfd_mig_counts.empty()) {
    if (absl::Status laid = LayOutGfdMixedStrategy(fields.gfd_mig_counts, FullGpus(fields), inventory); !laid.ok()) {
      return laid;
    }
  }
  return inventory;
}

absl::StatusOr<NodeInventory> ParseAllocatable(std::string_view value) {
  absl::StatusOr<int64_t> count = ParseGpuCount("allocatable", kGpuResource, value);
  if (!count.ok()) return count.status();
  NodeInventory inventory;
  inventory.source = InventorySource::kAllocatable;
  inventory.gpus.resize(static_cast<size_t>(*count));
  for (int32_t i = 0; i < static_cast<int32_t>(*count); ++i) inventory.gpus[static_cast<size_t>(i)].index = i;
  return inventory;
}

absl::StatusOr<NodeInventory> ParseInventorySource(const NodeInventoryFields& fields) {
  if (fields.inventory_annotation) return ParseAnnotation(*fields.inventory_annotation);
  if (fields.gfd_count || fields.gfd_product || fields.gfd_memory || !fields.gfd_mig_counts.empty()) {
    return ParseFeatureDiscovery(fields);
  }
  if (fields.allocatable_gpus) return ParseAllocatable(*fields.allocatable_gpus);
  return NodeInventory{};
}

// Whether `topology` describes the GPUs of `inventory`. Annotation indices
// are nvidia-smi's, so any subset of the matrix is fine; labels and
// allocatable only count GPUs (numbered 0..n-1 here), so they must count the
// matrix's GPUs exactly, or a missing GPU would shift the others' links.
absl::Status CheckCovers(const GpuTopology& topology, const NodeInventory& inventory) {
  const int32_t n = topology.gpu_count();
  if (inventory.source == InventorySource::kFeatureDiscovery || inventory.source == InventorySource::kAllocatable) {
    if (inventory.gpus.size() != static_cast<size_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "annotation ", Absl(kGpuTopology), ": describes ", n, " GPUs but the node has ", inventory.gpus.size(),
          inventory.source == InventorySource::kAllocatable ? " (allocatable)" : " (GPU Feature Discovery labels)",
          "; which GPU is missing is unknown"));
    }
    return absl::OkStatus();
  }
  for (const GpuDevice& gpu : inventory.gpus) {
    if (gpu.index >= n) {
      return absl::InvalidArgumentError(absl::StrCat("annotation ", Absl(kGpuTopology), ": describes GPUs 0..", n - 1,
                                                     " but the inventory lists GPU ", gpu.index));
    }
  }
  return absl::OkStatus();
}

// The model DefaultLinkBandwidths goes by: the first GPU's that has one.
std::string_view FirstModel(const std::vector<GpuDevice>& gpus) {
  for (const GpuDevice& gpu : gpus) {
    if (!gpu.model.empty()) return gpu.model;
  }
  return {};
}

void AttachTopology(std::string_view annotation, const NodeInventory* previous, NodeInventory& inventory) {
  std::shared_ptr<const GpuTopology> topology;
  // Same text, same GPU model (hence the same default bandwidths): the same
  // topology. This runs for every node of every full-Node request.
  if (previous != nullptr && previous->topology != nullptr && previous->topology->source() == annotation &&
      FirstModel(previous->gpus) == FirstModel(inventory.gpus)) {
    topology = previous->topology;
  } else {
    absl::StatusOr<std::shared_ptr<const GpuTopology>> parsed =
        ParseGpuTopology(annotation, DefaultLinkBandwidths(inventory.gpus));
    if (!parsed.ok()) {
      inventory.topology_error = parsed.status();
      return;
    }
    topology = *std::move(parsed);
  }
  if (absl::Status covers = CheckCovers(*topology, inventory); !covers.ok()) {
    inventory.topology_error = std::move(covers);
    return;
  }
  inventory.topology = std::move(topology);
}

}  // namespace

bool AddGfdMigCountLabel(std::string_view key, std::string_view value, std::vector<GfdMigCount>& counts) {
  if (key.size() <= kMigResourcePrefix.size() + kGfdMigCountSuffix.size() || !key.starts_with(kMigResourcePrefix) ||
      !key.ends_with(kGfdMigCountSuffix)) {
    return false;
  }
  if (counts.size() <= kMaxGfdMigProfiles) {
    const std::string_view profile =
        key.substr(kMigResourcePrefix.size(), key.size() - kMigResourcePrefix.size() - kGfdMigCountSuffix.size());
    counts.push_back({.profile = profile, .count = value});
  }
  return true;
}

absl::StatusOr<NodeInventory> ParseNodeInventory(const NodeInventoryFields& fields, const NodeInventory* previous) {
  absl::StatusOr<NodeInventory> inventory = ParseInventorySource(fields);
  if (inventory.ok() && fields.topology_annotation) AttachTopology(*fields.topology_annotation, previous, *inventory);
  return inventory;
}

}  // namespace tessera::k8s
