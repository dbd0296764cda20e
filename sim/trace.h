// The Alibaba GPU-sharing trace's node and pod lists (the "openb" CSVs of
// the FGD paper's artifact; data/openb/README.md), parsed as the paper's
// replay reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu_vendor.h"
#include "scheduler/model/mig_geometry.h"

namespace tessera::sim {

/// One node of a node list (`sn, cpu_milli, memory_mib, gpu, model`).
struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;  ///< Empty for a node without GPUs.
  int64_t gpu_memory_mib = 0;  ///< Per GPU; 0: unknown (the trace has none; sim/stress.h may set it).
  /// The GPUs' vendor (the trace's are all NVIDIA-style; sim/fleet.h may set another).
  GpuVendor vendor = GpuVendor::kNvidia;
  /// Not empty: every GPU of the node is in MIG mode, split into these
  /// instances (the trace has none; sim/fleet.h).
  std::vector<MigInstance> mig = {};
  bool operator==(const TraceNode&) const = default;
};

/// One pod of a pod list (`name, cpu_milli, memory_mib, num_gpu, gpu_milli`,
/// optionally `gpu_spec`, `qos`, `creation_time`, `deletion_time`, `tenant`
/// and columns the replay ignores). The paper's replay reads the first six;
/// the tenant replay (sim/tenant_replay.h) the others too.
struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;                 ///< 0: asks for no GPU.
  int64_t gpu_milli = 0;            ///< Per GPU: min(gpu_milli, 1000); 0 when gpus is 0.
  int64_t gpu_memory_mib = 0;       ///< GPU memory per GPU of a share; 0: none (the trace has none; sim/stress.h).
  std::string gpu_spec;             ///< As written, e.g. "V100M16|V100M32"; empty: any model.
  std::vector<std::string> models;  ///< gpu_spec split on '|', empty parts dropped.
  std::string qos;                  ///< The trace's QoS class (LS, BE, Burstable, Guaranteed); empty: none.
  std::string tenant;               ///< A `tenant` column's value; empty: none (the openb lists have none).
  /// Accepted GPU vendors; empty: any (the trace has none; sim/fleet.h).
  std::vector<GpuVendor> vendors = {};
  /// Not empty: the pod asks for one MIG instance of this profile (gpus 1,
  /// gpu_milli the instance's compute); the trace has none (sim/fleet.h).
  std::string mig_profile = {};
  /// Seconds from the trace's start; nullopt when the list has no such columns.
  std::optional<int64_t> creation_time;
  std::optional<int64_t> deletion_time;  ///< At least creation_time.

  /// milli-GPU the pod asks for in all.
  [[nodiscard]] int64_t total_milli() const { return gpus * gpu_milli; }
  bool operator==(const TracePod&) const = default;
};

/// Reads a node list, sorted by name. Columns are found by header name, so
/// their order and extra columns do not matter.
/// \return NotFound for a missing file; InvalidArgument naming the file and
///   line for a missing column, a short row, a bad number, a duplicate name,
///   or a node with a GPU model but no GPUs.
absl::StatusOr<std::vector<TraceNode>> LoadNodeList(const std::string& path);

/// Reads a pod list, sorted by name (`gpu_spec` may be absent, as in the
/// multigpu lists). Errors as LoadNodeList, plus a pod asking for GPUs with
/// no gpu_milli.
absl::StatusOr<std::vector<TracePod>> LoadPodList(const std::string& path);

/// The same from text already read; `file_name` names it in errors.
absl::StatusOr<std::vector<TraceNode>> ParseNodeList(std::string_view text, std::string_view file_name);
absl::StatusOr<std::vector<TracePod>> ParsePodList(std::string_view text, std::string_view file_name);

}  // namespace tessera::sim
