// Joins the answers of several Prometheus queries (utilisation, memory, sample
// time...) into one NodeTelemetry per node: series are matched to nodes by
// their node label and to GPUs by UUID (looked up in the node's inventory) or,
// failing that, by the gpu index label.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/model/telemetry.h"
#include "telemetry/prometheus_vector.h"

namespace tessera {

/// What one query measures; fixes the unit its values are read in.
enum class GpuMetric : uint8_t {
  kUtilization,           ///< percent 0..100
  kSustainedUtilization,  ///< percent 0..100
  kSmActive,              ///< ratio 0..1
  kMemoryUsed,            ///< MiB
  kMemoryFree,            ///< MiB
  kSampleTime,            ///< Unix seconds
};
inline constexpr size_t kGpuMetricCount = 6;

/// The name of `metric` in the policy file and in metric labels ("sustainedUtilization").
std::string_view GpuMetricName(GpuMetric metric);

/// Why a sample or a GPU was left out.
struct DroppedSamples {
  size_t invalid_value = 0;  ///< NaN, ±Inf, or outside the metric's range.
  size_t no_node = 0;        ///< The series has no node label.
  size_t unknown_gpu = 0;    ///< Neither a UUID of the node's inventory nor a gpu index label.
  size_t not_sampled = 0;    ///< A GPU without a sample time (its series went stale).

  [[nodiscard]] size_t total() const { return invalid_value + no_node + unknown_gpu + not_sampled; }
};

class GpuSampleTable {
 public:
  /// How Build() turns samples into telemetry.
  struct Options {
    absl::Duration stale_after = absl::Minutes(3);
    /// Whether a kSampleTime query ran: then a GPU without one is not sampled.
    /// Otherwise a GPU counts as sampled when kUtilization was evaluated.
    bool has_sample_time = true;
    std::string utilization_window;
    std::string sustained_window;
  };

  GpuSampleTable() = default;

  /// Records one sample of `metric`; an invalid or unattributable one is
  /// counted in dropped() instead.
  void Add(GpuMetric metric, const VectorSample& sample);

  /// Telemetry per node (in no particular order). `snapshot` (may be null)
  /// maps GPU UUIDs to device indices.
  [[nodiscard]] std::vector<std::pair<std::string, NodeTelemetry>> Build(const ClusterSnapshot* snapshot,
                                                                         const Options& options);

  [[nodiscard]] const DroppedSamples& dropped() const { return dropped_; }
  /// Distinct (node, GPU) series seen.
  [[nodiscard]] size_t gpu_series() const { return gpu_series_; }

 private:
  static constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

  struct GpuSamples {
    std::string uuid;
    int32_t gpu_label = -1;  // the gpu label as an index; -1 when absent or not a number
    double evaluated_at = kAbsent;
    std::array<double, kGpuMetricCount> values;
  };
  struct NodeSamples {
    absl::InlinedVector<GpuSamples, 8> gpus;
  };

  GpuSamples* FindOrAddGpu(NodeSamples& node, std::string_view uuid, int32_t gpu_label);

  absl::flat_hash_map<std::string, NodeSamples> nodes_;
  // The node of the previous sample: answers list a node's GPUs together.
  std::string last_name_;
  NodeSamples* last_node_ = nullptr;
  DroppedSamples dropped_;
  size_t gpu_series_ = 0;
};

}  // namespace tessera
