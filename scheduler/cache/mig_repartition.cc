#include "scheduler/cache/mig_repartition.h"

#include <algorithm>
#include <bit>

#include "scheduler/model/mig_geometry.h"

namespace tessera {
namespace {

// Step 3's order: the fewer pods evicted, instances destroyed and geometry
// lost, the better; then by place, so that the advice is stable.
bool Before(const MigRepartitionAdvice& a, const MigRepartitionAdvice& b) {
  if (a.pods_to_evict != b.pods_to_evict) return a.pods_to_evict < b.pods_to_evict;
  if (a.destroy.size() != b.destroy.size()) return a.destroy.size() < b.destroy.size();
  if (a.geometry_loss != b.geometry_loss) return a.geometry_loss < b.geometry_loss;
  if (a.node != b.node) return a.node < b.node;
  if (a.gpu_index != b.gpu_index) return a.gpu_index < b.gpu_index;
  return a.start < b.start;
}

}  // namespace

std::optional<MigRepartitionAdvice> AdviseMigRepartition(std::string_view profile_name,
                                                         absl::Span<const NodeView* const> nodes) {
  std::optional<MigRepartitionAdvice> best;
  for (const NodeView* node : nodes) {
    for (size_t i = 0; i < node->gpus.size() && i < node->gpu_states.size(); ++i) {
      const GpuState& state = node->gpu_states[i];
      if (!state.mig_mode() || !state.healthy()) continue;
      const GpuDevice& gpu = node->gpus[i];
      if (gpu.mig_unlisted) continue;  // its instances exist, unknown: nothing to advise on
      const MigGeometry* geometry = FindMigGeometry(gpu.model);
      const MigProfile* profile = geometry != nullptr ? geometry->Find(profile_name) : nullptr;
      if (profile == nullptr) continue;
      const uint8_t held_starts = node->UsageOf(gpu.index).mig_held_starts;
      const bool has_free_one = std::any_of(gpu.mig.begin(), gpu.mig.end(), [&](const MigInstance& m) {
        return m.profile == profile_name && (held_starts >> m.start & 1u) == 0;
      });
      if (has_free_one) continue;  // nothing to re-partition here
      const SliceMask held = MigHeldSlices(*geometry, gpu.mig, held_starts);
      const std::vector<int64_t> equal(geometry->profiles.size(), 1);
      for (int32_t start = 0; start < kMigSlices; ++start) {
        if ((profile->starts >> start & 1u) == 0) continue;
        const SliceMask wanted = profile->SlicesAt(start);
        MigRepartitionAdvice advice{.profile = std::string(profile_name),
                                    .node = std::string(node->name),
                                    .gpu_index = gpu.index,
                                    .gpu_uuid = gpu.uuid,
                                    .gpu_model = gpu.model,
                                    .start = start};
        for (const MigInstance& m : gpu.mig) {
          const MigProfile* p = geometry->Find(m.profile);
          if (p == nullptr || (p->SlicesAt(m.start) & wanted) == 0) continue;
          if ((held_starts >> m.start & 1u) != 0) {
            ++advice.pods_to_evict;
          } else {
            advice.destroy.push_back(m);
          }
        }
        // The loss counts the slices pods hold as taken; evicted ones are freed first.
        advice.geometry_loss = MigGeometryLoss(*geometry, equal, static_cast<SliceMask>(held & ~wanted), wanted);
        if (!best.has_value() || Before(advice, *best)) best = std::move(advice);
      }
    }
  }
  return best;
}

}  // namespace tessera
