#include "telemetry/gpu_samples.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

constexpr int32_t kMaxGpuIndex = 255;
constexpr double kMaxMemoryMiB = 1ULL << 40;

// Whether `v` is a valid value of `metric`.
bool InRange(GpuMetric metric, double v) {
  if (!std::isfinite(v)) return false;
  switch (metric) {
    case GpuMetric::kUtilization:
    case GpuMetric::kSustainedUtilization: return v >= 0 && v <= 100;
    case GpuMetric::kSmActive: return v >= 0 && v <= 1;
    case GpuMetric::kMemoryUsed:
    case GpuMetric::kMemoryFree: return v >= 0 && v <= kMaxMemoryMiB;
    case GpuMetric::kSampleTime: return v > 0;
  }
  return false;
}

int32_t GpuLabelIndex(std::string_view label) {
  int32_t index = -1;
  if (label.empty() || !absl::SimpleAtoi(Absl(label), &index) || index < 0 || index > kMaxGpuIndex) return -1;
  return index;
}

int64_t Round(double v) { return static_cast<int64_t>(std::llround(v)); }

absl::Time FromUnixSeconds(double seconds) { return absl::UnixEpoch() + absl::Milliseconds(Round(seconds * 1000)); }

// The device index of a series: by UUID in the node's inventory, else by its
// gpu label; -1 when neither tells.
int32_t DeviceIndex(const NodeState* node, std::string_view uuid, int32_t gpu_label) {
  if (node != nullptr && !uuid.empty()) {
    for (const GpuDevice& g : node->inventory.gpus) {
      if (g.uuid == uuid) return g.index;
    }
  }
  return gpu_label;
}

}  // namespace

std::string_view GpuMetricName(GpuMetric metric) {
  switch (metric) {
    case GpuMetric::kUtilization: return "utilization";
    case GpuMetric::kSustainedUtilization: return "sustainedUtilization";
    case GpuMetric::kSmActive: return "smActive";
    case GpuMetric::kMemoryUsed: return "memoryUsed";
    case GpuMetric::kMemoryFree: return "memoryFree";
    case GpuMetric::kSampleTime: return "sampleTime";
  }
  return "unknown";
}

GpuSampleTable::GpuSamples* GpuSampleTable::FindOrAddGpu(NodeSamples& node, std::string_view uuid,
                                                         int32_t gpu_label) {
  for (GpuSamples& g : node.gpus) {
    // Series of one GPU agree on its UUID; without UUIDs, on its index.
    if (!uuid.empty() && !g.uuid.empty() ? g.uuid == uuid : g.gpu_label == gpu_label) return &g;
  }
  GpuSamples& g = node.gpus.emplace_back();
  g.uuid = std::string(uuid);
  g.gpu_label = gpu_label;
  g.values.fill(kAbsent);
  ++gpu_series_;
  return &g;
}

void GpuSampleTable::Add(GpuMetric metric, const VectorSample& sample) {
  if (!InRange(metric, sample.value)) {
    ++dropped_.invalid_value;
    return;
  }
  if (sample.node.empty()) {
    ++dropped_.no_node;
    return;
  }
  const int32_t gpu_label = GpuLabelIndex(sample.gpu);
  if (sample.uuid.empty() && gpu_label < 0) {
    ++dropped_.unknown_gpu;
    return;
  }
  if (last_node_ == nullptr || last_name_ != sample.node) {
    // try_emplace may rehash, which is why only the newest pointer is kept.
    last_node_ = &nodes_.try_emplace(Absl(sample.node)).first->second;
    last_name_.assign(sample.node);
  }
  GpuSamples* gpu = FindOrAddGpu(*last_node_, sample.uuid, gpu_label);
  gpu->values[static_cast<size_t>(metric)] = sample.value;
  if (metric == GpuMetric::kUtilization) gpu->evaluated_at = sample.timestamp;
}

std::vector<std::pair<std::string, NodeTelemetry>> GpuSampleTable::Build(const ClusterSnapshot* snapshot,
                                                                         const Options& options) {
  std::vector<std::pair<std::string, NodeTelemetry>> out;
  out.reserve(nodes_.size());
  auto value = [](const GpuSamples& g, GpuMetric m) { return g.values[static_cast<size_t>(m)]; };
  auto known = [&](const GpuSamples& g, GpuMetric m) { return !std::isnan(value(g, m)); };
  for (auto& [name, samples] : nodes_) {
    const NodeState* node = nullptr;
    if (snapshot != nullptr) {
      if (std::optional<NodeIndex> i = snapshot->FindNode(name)) node = &snapshot->node(*i);
    }
    NodeTelemetry telemetry;
    telemetry.source = TelemetrySource::kPrometheus;
    telemetry.stale_after = options.stale_after;
    telemetry.utilization_window = options.utilization_window;
    telemetry.sustained_window = options.sustained_window;
    telemetry.gpus.reserve(samples.gpus.size());
    for (const GpuSamples& g : samples.gpus) {
      const int32_t index = DeviceIndex(node, g.uuid, g.gpu_label);
      if (index < 0) {
        ++dropped_.unknown_gpu;
        continue;
      }
      const double sampled = options.has_sample_time ? value(g, GpuMetric::kSampleTime) : g.evaluated_at;
      if (std::isnan(sampled)) {
        ++dropped_.not_sampled;
        continue;
      }
      GpuTelemetry t;
      t.index = index;
      t.sampled_at = FromUnixSeconds(sampled);
      if (known(g, GpuMetric::kUtilization)) t.utilization = PerMille(Round(value(g, GpuMetric::kUtilization) * 10));
      if (known(g, GpuMetric::kSustainedUtilization)) {
        t.sustained_utilization = PerMille(Round(value(g, GpuMetric::kSustainedUtilization) * 10));
      }
      if (known(g, GpuMetric::kSmActive)) t.sm_active = PerMille(Round(value(g, GpuMetric::kSmActive) * 1000));
      if (known(g, GpuMetric::kMemoryUsed)) t.memory_used = MemoryMiB(Round(value(g, GpuMetric::kMemoryUsed)));
      if (known(g, GpuMetric::kMemoryFree)) t.memory_free = MemoryMiB(Round(value(g, GpuMetric::kMemoryFree)));
      telemetry.gpus.push_back(t);
    }
    if (telemetry.gpus.empty()) continue;
    std::sort(telemetry.gpus.begin(), telemetry.gpus.end(),
              [](const GpuTelemetry& a, const GpuTelemetry& b) { return a.index < b.index; });
    // Two series claiming one device (a relabelling mistake): keep the first.
    auto dup = std::unique(telemetry.gpus.begin(), telemetry.gpus.end(),
                           [](const GpuTelemetry& a, const GpuTelemetry& b) { return a.index == b.index; });
    dropped_.unknown_gpu += static_cast<size_t>(telemetry.gpus.end() - dup);
    telemetry.gpus.erase(dup, telemetry.gpus.end());
    out.emplace_back(name, std::move(telemetry));
  }
  return out;
}

}  // namespace tessera
