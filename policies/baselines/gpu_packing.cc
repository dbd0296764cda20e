#include "policies/baselines/gpu_packing.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "scheduler/framework/plugin_args.h"
#include "policies/node_resources.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> GpuPackingPlugin::New(PluginArgs& args) {
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuPackingPlugin>();
}

int64_t GpuPackingPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice&) const {
  const PodGpuRequest& r = cycle.request();
  const int64_t milli = PerGpuMilli(r);
  if (milli <= 0) return 0;
  absl::InlinedVector<int64_t, 8> free;
  for (const GpuState& g : node.gpu_states) free.push_back(FreeMilli(g));
  const int64_t gpus = static_cast<int64_t>(free.size());
  const int64_t idle = std::count(free.begin(), free.end(), kOneGpu.value());
  if (idle == gpus) return std::max<int64_t>(kMaxPluginScore / 3 - idle, idle);

  std::sort(free.begin(), free.end());  // least free first
  int64_t wanted = r.count, idle_taken = 0, free_percent_taken = 0;
  for (int64_t f : free) {
    if (wanted == 0) break;
    if (f < milli) continue;
    --wanted;
    if (f == kOneGpu.value()) ++idle_taken;
    free_percent_taken += f * 100 / kOneGpu.value();
  }
  if (wanted > 0) return 0;  // does not fit; the filter has rejected the node already
  if (idle_taken > 0) return std::max<int64_t>(kMaxPluginScore / 2 - idle_taken, kMaxPluginScore / 3);
  return std::max<int64_t>(kMaxPluginScore - free_percent_taken / 10, kMaxPluginScore / 2);
}

}  // namespace tessera
