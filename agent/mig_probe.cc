#include "agent/mig_probe.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {
namespace {

/// One GPU instance found through its MIG devices.
struct FoundInstance {
  std::string uuid;            ///< Its MIG device's.
  int32_t compute_instances = 0;
};

// GPU instance id -> what its MIG devices say, for every MIG device slot.
absl::StatusOr<std::map<unsigned int, FoundInstance>> InstancesByMigDevice(NvmlLibrary& nvml, nvmlDevice_t parent) {
  absl::StatusOr<unsigned int> slots = nvml.MaxMigDevices(parent);
  if (!slots.ok()) return slots.status();
  std::map<unsigned int, FoundInstance> found;
  for (unsigned int slot = 0; slot < *slots; ++slot) {
    absl::StatusOr<std::optional<nvmlDevice_t>> device = nvml.MigDeviceByIndex(parent, slot);
    if (!device.ok()) return device.status();
    if (!device->has_value()) continue;  // an empty slot
    absl::StatusOr<unsigned int> id = nvml.GpuInstanceId(**device);
    if (!id.ok()) return id.status();
    absl::StatusOr<std::string> uuid = nvml.Uuid(**device);
    if (!uuid.ok()) return uuid.status();
    FoundInstance& instance = found[*id];
    if (instance.compute_instances++ == 0) instance.uuid = *std::move(uuid);
  }
  return found;
}

// One GPU instance as the inventory lists it (not yet checked against the table).
absl::StatusOr<MigInstance> Describe(NvmlLibrary& nvml, nvmlDevice_t parent, unsigned int id,
                                     const FoundInstance& found, MemoryMiB memory, unsigned int& memory_slices) {
  if (found.compute_instances > 1) {
    return absl::FailedPreconditionError(absl::StrCat("GPU instance ", id, " is split into ", found.compute_instances,
                                                      " compute instances; Tessera hands out whole GPU instances"));
  }
  absl::StatusOr<nvmlGpuInstanceInfo_t> info = nvml.GpuInstanceInfo(parent, id);
  if (!info.ok()) return info.status();
  absl::StatusOr<GpuInstanceProfile> profile = nvml.GpuInstanceProfileById(parent, info->profileId);
  if (!profile.ok()) return profile.status();
  memory_slices = info->placement.size;
  MigInstance instance;
  instance.profile = profile->name.empty() ? MigProfileName(profile->slice_count, profile->memory_mib, memory)
                                           : profile->name;
  instance.start = static_cast<int32_t>(std::min<unsigned int>(info->placement.start, kMigSlices));
  instance.uuid = found.uuid;
  return instance;
}

// The instances against the model's table, as k8s/node_inventory.cc checks them.
absl::Status CheckAgainstTable(const std::string& model, const std::vector<MigInstance>& instances,
                               const std::vector<unsigned int>& memory_slices) {
  const MigGeometry* geometry = FindMigGeometry(model);
  if (geometry == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("Tessera has no MIG table for a ", model, " (A100 40/80GB, H100 80GB, H200)"));
  }
  SliceMask taken = 0;
  for (size_t k = 0; k < instances.size(); ++k) {
    const MigInstance& m = instances[k];
    const MigProfile* profile = geometry->Find(m.profile);
    if (profile == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("GPU instance ", m.uuid, " has profile \"", m.profile,
                                                        "\", which Tessera's ", Absl(geometry->model),
                                                        " table lacks"));
    }
    if (memory_slices[k] != static_cast<unsigned int>(profile->memory_slices)) {
      return absl::FailedPreconditionError(absl::StrCat("a ", m.profile, " instance spans ", memory_slices[k],
                                                        " memory slices by NVML, ", profile->memory_slices,
                                                        " by Tessera's table"));
    }
    if (absl::Status placed = CheckMigPlacement(*profile, m.start, taken); !placed.ok()) return placed;
    taken |= profile->SlicesAt(m.start);
  }
  return absl::OkStatus();
}

}  // namespace

std::string MigProfileName(unsigned int slice_count, uint64_t memory_mib, MemoryMiB gpu_memory) {
  const auto gpu_mib = static_cast<uint64_t>(std::max<int64_t>(gpu_memory.value(), 1));
  const uint64_t eighths = (memory_mib * 8 + gpu_mib - 1) / gpu_mib;  // the share, rounded up to eighths
  const uint64_t gpu_gb = (gpu_mib + 1023) / 1024;                    // whole GB, rounded up
  const uint64_t gb = (eighths * gpu_gb + 4) / 8;                     // to the nearest, halves up
  return absl::StrCat(slice_count, "g.", gb, "gb");
}

absl::StatusOr<std::vector<MigInstance>> ProbeMigInstances(NvmlLibrary& nvml, nvmlDevice_t parent,
                                                           const std::string& model, MemoryMiB memory) {
  absl::StatusOr<std::map<unsigned int, FoundInstance>> found = InstancesByMigDevice(nvml, parent);
  if (!found.ok()) return found.status();
  std::vector<std::pair<MigInstance, unsigned int>> described;  // with its memory slices by NVML
  for (const auto& [id, instance] : *found) {
    unsigned int slices = 0;
    absl::StatusOr<MigInstance> one = Describe(nvml, parent, id, instance, memory, slices);
    if (!one.ok()) return one.status();
    described.emplace_back(*std::move(one), slices);
  }
  std::sort(described.begin(), described.end(),
            [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  std::vector<MigInstance> instances;
  std::vector<unsigned int> memory_slices;
  for (auto& [instance, slices] : described) {
    instances.push_back(std::move(instance));
    memory_slices.push_back(slices);
  }
  if (absl::Status st = CheckAgainstTable(model, instances, memory_slices); !st.ok()) return st;
  return instances;
}

}  // namespace tessera::agent
