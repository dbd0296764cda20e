// The MIG instances of a GPU in MIG mode, read from NVML for the inventory's
// `"mig"` list (docs/concepts/mig-and-vendors.md).
//
// Each MIG device (a compute instance, with its "MIG-..." UUID) is asked for
// its GPU instance; the GPU instance gives its profile and placement, and the
// parent GPU the profile's name. What is listed must be what Tessera can
// place on, so the list is checked against Tessera's own MIG table
// (scheduler/model/mig_geometry.h) as the inventory parser will check it: a
// model without a table, a profile the table lacks (e.g. 1g.10gb+me), a
// placement it does not allow, or a GPU instance split into several compute
// instances (Tessera hands out whole instances) is an error here. The caller
// then writes only `"migEnabled": true` (MIG mode, instances unlisted) rather
// than a list the parser would refuse, which would cost the node its whole
// inventory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/nvml/nvml_library.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/quantity.h"

namespace tessera::agent {

/// The name NVIDIA gives a GPU instance profile of `slice_count` compute
/// slices and `memory_mib` on a GPU of `gpu_memory_mib`: "<slices>g.<GB>gb",
/// GB being the instance's share of the GPU's memory rounded up to eighths,
/// times the GPU's memory in whole GB (rounded up), rounded to the nearest
/// (NVIDIA's own rule: 40192 MiB on an 80 GB A100 is "40gb", though 39.25 GiB).
/// For drivers that do not name profiles (no nvmlDeviceGetGpuInstanceProfileInfoV).
std::string MigProfileName(unsigned int slice_count, uint64_t memory_mib, MemoryMiB gpu_memory);

/// The GPU instances of `parent` (a GPU in MIG mode of model `model`, as
/// ModelName spells it, with `memory`), by start slice; `[]` when none is
/// made yet. An error (which says why) when they cannot all be read or are
/// not what Tessera's table for the model allows.
absl::StatusOr<std::vector<MigInstance>> ProbeMigInstances(NvmlLibrary& nvml, nvmlDevice_t parent,
                                                           const std::string& model, MemoryMiB memory);

}  // namespace tessera::agent
