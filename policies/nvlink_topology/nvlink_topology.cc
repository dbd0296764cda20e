#include "policies/nvlink_topology/nvlink_topology.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_set_search.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera {
namespace {

// Score weights, in fifths: the bottleneck decides a ring all-reduce, the
// total only helps other collectives.
constexpr int64_t kBottleneckFifths = 4;
constexpr int64_t kTotalFifths = 1;

// The GPUs of `choice` as a mask, or nullopt when one is outside the topology.
std::optional<GpuMask> MaskOf(const GpuTopology& topology, const GpuChoice& choice) {
  GpuMask mask = 0;
  for (int32_t gpu : choice.gpu_indices) {
    if (gpu < 0 || gpu >= topology.gpu_count()) return std::nullopt;
    mask |= GpuMask{1} << gpu;
  }
  return mask;
}

// "GPU1-GPU4 SYS, 8000 MB/s": the slowest link inside `gpus` (≥ 2 GPUs).
std::string SlowestLink(const GpuTopology& topology, GpuMask gpus) {
  int32_t slow_a = 0, slow_b = 0;
  uint32_t slowest = ~uint32_t{0};
  for (GpuMask a = gpus; a != 0; a &= a - 1) {
    for (GpuMask b = a & (a - 1); b != 0; b &= b - 1) {
      const int32_t i = std::countr_zero(a), j = std::countr_zero(b);
      if (topology.bandwidth_mbps(i, j) < slowest) {
        slowest = topology.bandwidth_mbps(i, j);
        slow_a = i;
        slow_b = j;
      }
    }
  }
  return absl::StrCat("GPU", slow_a, "-GPU", slow_b, " ", GpuLinkName(topology.link(slow_a, slow_b)), ", ", slowest,
                      " MB/s");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Plugin>> NvlinkTopologyPlugin::New(PluginArgs& args) {
  NvlinkTopologyArgs a;
  a.require_nvlink = args.Bool("requireNvlink", a.require_nvlink,
                                 "Refuse a node where a multi-GPU pod's chosen set has no NVLink between any two of its GPUs.");
  a.protect_free_sets = args.Bool("protectFreeSets", a.protect_free_sets,
                                    "Give a one-GPU pod the GPU whose use least damages the free GPUs' best pair, quad and set of 8.");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  if (a.require_nvlink) return std::make_unique<RequiredNvlinkTopologyPlugin>(a);
  return std::make_unique<NvlinkTopologyPlugin>(a);
}

std::optional<GpuChoice> NvlinkTopologyPlugin::ChooseGpuSet(const CycleState& cycle, const NodeView& node,
                                                            const RankedGpus& ranked) const {
  const int32_t k = cycle.request().count;
  if (node.topology == nullptr || ranked.empty()) return std::nullopt;
  const GpuTopology& topology = *node.topology;
  absl::InlinedVector<int32_t, GpuTopology::kMaxGpus> preference;
  for (const RankedGpu& gpu : ranked) {
    // The inventory was checked against the topology when parsed; a GPU
    // outside it would mean they disagree, and then the chooser decides.
    if (gpu.index < 0 || gpu.index >= topology.gpu_count()) return std::nullopt;
    preference.push_back(gpu.index);
  }

  if (k == 1) {
    if (!args_.protect_free_sets) return std::nullopt;
    size_t tied = 1;
    while (tied < ranked.size() && ranked[tied].tier == ranked.front().tier) ++tied;
    if (tied == 1) return std::nullopt;
    GpuMask free = 0;  // idle GPUs: what whole multi-GPU pods could still get
    for (const GpuDevice& gpu : node.gpus) {
      if (gpu.index < topology.gpu_count() && node.UsageOf(gpu.index).idle()) free |= GpuMask{1} << gpu.index;
    }
    const int32_t gpu = LeastDamagingGpu(topology, free, absl::MakeConstSpan(preference.data(), tied));
    GpuChoice choice;
    choice.gpu_indices.push_back(gpu);
    return choice;
  }

  const std::optional<GpuSetChoice> best = FindBestGpuSet(topology, preference, k);
  if (!best.has_value()) return std::nullopt;
  GpuChoice choice;  // in the chooser's order, like its own choice
  for (int32_t gpu : preference) {
    if ((best->gpus & (GpuMask{1} << gpu)) != 0) choice.gpu_indices.push_back(gpu);
  }
  return choice;
}

FilterVerdict NvlinkTopologyPlugin::JudgeSet(const CycleState& cycle, const NodeView& node,
                                             const GpuChoice& choice) const {
  const int32_t k = cycle.request().count;
  if (k < 2) return FilterVerdict::Success();
  const std::optional<GpuMask> chosen =
      node.topology != nullptr ? MaskOf(*node.topology, choice) : std::optional<GpuMask>();
  if (!chosen.has_value()) {
    return FilterVerdict::Never(
        "gpu_topology_unknown",
        absl::StrCat("pod needs ", k, " GPUs joined by NVLink (nvlink-topology requireNvlink) but the node's GPU "
                     "topology is unknown: ",
                     node.topology_error != nullptr ? node.topology_error->message()
                                                    : absl::string_view("no tessera.io/gpu-topology annotation")));
  }
  const GpuTopology& topology = *node.topology;
  if (topology.HasNvlinkWithin(*chosen)) return FilterVerdict::Success();
  const GpuSetChoice& idle = topology.IdleBest(k);
  if (!topology.HasNvlinkWithin(idle.gpus)) {
    return FilterVerdict::Never(
        "no_nvlink_set",
        absl::StrCat("no ", k, " GPUs of this node are joined by NVLink (nvlink-topology requireNvlink): even idle, "
                     "its best set (GPUs ", DescribeGpuMask(idle.gpus), ") has slowest link ",
                     SlowestLink(topology, idle.gpus)));
  }
  return FilterVerdict::NotNow(
      "no_nvlink_set_free",
      absl::StrCat("the best ", k, " GPUs that can take the pod now (GPUs ", DescribeGpuMask(*chosen),
                   ") have no NVLink between them, slowest link ", SlowestLink(topology, *chosen),
                   " (nvlink-topology requireNvlink); GPUs ", DescribeGpuMask(idle.gpus),
                   " would have it when free"));
}

int64_t NvlinkTopologyPlugin::ScoreNode(const CycleState& cycle, const NodeView& node,
                                        const GpuChoice& choice) const {
  const int32_t k = cycle.request().count;
  if (k < 2) return kMaxPluginScore;
  if (node.topology == nullptr) return 0;
  const GpuTopology& topology = *node.topology;
  const std::optional<GpuMask> chosen = MaskOf(topology, choice);
  if (!chosen.has_value() || k > topology.gpu_count() || std::popcount(*chosen) != k) return 0;
  const GpuSetQuality got = QualityOf(topology, *chosen);
  const GpuSetQuality& best = topology.IdleBest(k).quality;  // bandwidths are positive: no zero divisor
  const int64_t bottleneck_permille = got.bottleneck.value() * 1000 / best.bottleneck.value();
  const int64_t total_permille = std::min<int64_t>(1000, got.total.value() * 1000 / best.total.value());
  return (kBottleneckFifths * bottleneck_permille + kTotalFifths * total_permille) * kMaxPluginScore /
         ((kBottleneckFifths + kTotalFifths) * 1000);
}

}  // namespace tessera
