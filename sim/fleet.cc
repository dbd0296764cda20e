#include "sim/fleet.h"

#include "absl/strings/str_cat.h"
#include "policies/stable_hash.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::sim {
namespace {

// The layout's profiles, smallest first (MigProfileCovering's order).
constexpr std::string_view kLayoutProfiles[] = {"1g.10gb", "2g.20gb", "3g.40gb"};

}  // namespace

absl::StatusOr<Fleet> ParseFleet(std::string_view text) {
  if (text == "trace") return Fleet::kTrace;
  if (text == "mixed") return Fleet::kMixed;
  return absl::InvalidArgumentError(absl::StrCat("\"", Absl(text), "\" is not a fleet (trace, mixed)"));
}

const char* FleetName(Fleet fleet) { return fleet == Fleet::kMixed ? "mixed" : "trace"; }

std::vector<MigInstance> MixedFleetMigLayout() {
  return {MigInstance{.profile = "2g.20gb", .start = 0, .uuid = {}},
          MigInstance{.profile = "1g.10gb", .start = 2, .uuid = {}},
          MigInstance{.profile = "1g.10gb", .start = 3, .uuid = {}},
          MigInstance{.profile = "3g.40gb", .start = 4, .uuid = {}}};
}

std::string MigProfileCovering(int64_t gpu_milli) {
  for (std::string_view profile : kLayoutProfiles) {
    if (gpu_milli <= MigComputeOfName(profile).value()) return std::string(profile);
  }
  return {};
}

void ApplyFleet(Fleet fleet, std::vector<TraceNode>& nodes) {
  if (fleet != Fleet::kMixed) return;
  size_t position = 0;  // among the nodes with GPUs
  for (TraceNode& n : nodes) {
    if (n.gpus == 0) continue;
    const size_t i = position++;
    if (i % 4 == 3) {
      n.vendor = GpuVendor::kAmd;
      n.model = std::string(kAmdModel);
    } else if (n.gpus == 8 && i % 8 == 1) {
      n.model = std::string(kMigModel);
      n.mig = MixedFleetMigLayout();
    }
  }
}

void ApplyFleet(Fleet fleet, std::vector<TracePod>& pods) {
  if (fleet != Fleet::kMixed) return;
  for (TracePod& p : pods) {
    if (p.gpus == 0 || !p.models.empty()) continue;  // a pod naming models has chosen its GPUs already
    const uint64_t h = StableHash(kFleetHashSeed, p.name);
    const std::string profile = p.gpus == 1 && p.gpu_milli < 1000 ? MigProfileCovering(p.gpu_milli) : std::string();
    if (!profile.empty()) {
      p.mig_profile = profile;
      p.gpu_milli = MigComputeOfName(profile).value();
    } else if (h % 8 == 0) {
      p.vendors = {GpuVendor::kAmd};
    } else if (h % 8 == 1) {
      p.vendors = {GpuVendor::kNvidia};
    }
  }
}

}  // namespace tessera::sim
