#include "sim/placement_check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::sim {
namespace {

const GpuDevice* DeviceOf(const NodeView& node, int32_t index) {
  for (const GpuDevice& g : node.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// The MIG pod's one share: an instance of its profile, listed and free.
std::optional<std::string> MigViolation(const PodGpuRequest& request, const NodeView& node, const GpuShare& share,
                                        const GpuDevice& gpu) {
  if (!gpu.mig_mode) return absl::StrCat("a MIG pod (", request.mig_profile, ") got GPU ", gpu.index, ", not in MIG mode");
  if (!share.mig.has_value()) return absl::StrCat("a MIG pod got GPU ", gpu.index, " without an instance");
  const MigInstance& held = *share.mig;
  if (held.profile != request.mig_profile) {
    return absl::StrCat("a MIG pod asking ", request.mig_profile, " got a ", held.profile, " instance");
  }
  const bool listed = std::any_of(gpu.mig.begin(), gpu.mig.end(), [&](const MigInstance& m) {
    return m.profile == held.profile && m.start == held.start;
  });
  if (!listed) return absl::StrCat("GPU ", gpu.index, " lists no ", held.profile, " instance at slice ", held.start);
  if (held.start < 0 || held.start >= kMigSlices || (node.UsageOf(gpu.index).mig_held_starts >> held.start & 1u) != 0) {
    return absl::StrCat("the ", held.profile, " instance at slice ", held.start, " of GPU ", gpu.index,
                        " is held already");
  }
  return std::nullopt;
}

std::optional<std::string> ShareViolation(const PodGpuRequest& request, const NodeView& node, const GpuShare& share) {
  const GpuDevice* gpu = DeviceOf(node, share.index);
  if (gpu == nullptr) return absl::StrCat("the node has no GPU ", share.index);
  if (!gpu->healthy) return absl::StrCat("GPU ", share.index, " is unhealthy");
  if (!request.vendors.empty() &&
      std::find(request.vendors.begin(), request.vendors.end(), gpu->vendor) == request.vendors.end()) {
    return absl::StrCat("GPU ", share.index, " is ", Absl(GpuVendorName(gpu->vendor)),
                        ", a vendor the pod does not select");
  }
  if (!request.mig_profile.empty()) return MigViolation(request, node, share, *gpu);
  if (gpu->mig_mode) return absl::StrCat("a pod not asking for a MIG instance got GPU ", share.index, ", in MIG mode");
  if (share.mig.has_value()) return absl::StrCat("a pod not asking for a MIG instance got one on GPU ", share.index);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> PlacementViolation(const PodGpuRequest& request, const NodeView& node,
                                              absl::Span<const GpuShare> shares) {
  const size_t wanted = request.count <= 0 ? 0 : !request.mig_profile.empty() ? 1 : static_cast<size_t>(request.count);
  if (shares.size() != wanted) return absl::StrCat("the pod asks for ", wanted, " GPUs and got ", shares.size());
  for (size_t i = 0; i < shares.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (shares[j].index == shares[i].index) return absl::StrCat("the pod got GPU ", shares[i].index, " twice");
    }
    if (std::optional<std::string> why = ShareViolation(request, node, shares[i])) return why;
  }
  return std::nullopt;
}

void PlacementViolations::Record(size_t position, const NodeView& node, std::string why) {
  if (count++ == 0) first = absl::StrCat("pod ", position, " on ", Absl(node.name), ": ", why);
}

}  // namespace tessera::sim
