#include "policies/baselines/best_fit.h"

#include <algorithm>

#include "scheduler/framework/plugin_args.h"
#include "policies/node_resources.h"

namespace tessera {

void MinMaxNormalize(absl::Span<int64_t> scores) {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t lowest = *lo, range = *hi - *lo;
  for (int64_t& s : scores) s = range == 0 ? 0 : (s - lowest) * kMaxPluginScore / range;
}

absl::StatusOr<std::unique_ptr<Plugin>> BestFitPlugin::New(PluginArgs& args) {
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<BestFitPlugin>();
}

int64_t BestFitPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice&) const {
  const PodGpuRequest& r = cycle.request();
  const double cpu_left = static_cast<double>(FreeCpuMilli(node) - RequestedCpuMilli(r, node));
  const double gpu_left = static_cast<double>(TotalFreeMilli(node) - RequestedGpuMilli(r));
  double leftover = 0;
  leftover += cpu_left / kMaxSpecCpuMilli * 0.5;
  leftover += gpu_left / kMaxSpecGpuMilli * 0.5;
  return static_cast<int64_t>((1.0 - leftover) * static_cast<double>(kMaxPluginScore));
}

void BestFitPlugin::NormalizeScores(absl::Span<int64_t> scores) const { MinMaxNormalize(scores); }

}  // namespace tessera
