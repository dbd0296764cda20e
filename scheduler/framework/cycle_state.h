// The per-request state every plugin reads: kube-scheduler's CycleState.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "scheduler/model/gpu_request.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// What a request asks of a node's GPUs, which decides who places it: the
/// profile routes each kind to the plugins that handle it (plugin.h).
enum class GpuRequestKind : uint8_t {
  kNone,         ///< No GPU: the profile gives none, no GPU point is asked.
  kShares,       ///< Shares of GPUs or whole GPUs: the chooser that places shares.
  kMigInstance,  ///< One MIG instance: the chooser that places instances.
};
/// How many kinds there are (for tables indexed by kind).
inline constexpr size_t kGpuRequestKinds = 3;

/// What one request asks, worked out once before any node is visited and
/// read by every plugin on every node. A caller builds one per pod (the
/// extender per filter, prioritize or bind call; the simulator per pod) and
/// hands it to the profile. Plugins read it and never write it, so one
/// state serves every thread working on the request.
///
/// What a plugin would otherwise derive from the request on every node
/// belongs here, computed once, in one place; so does what the profile
/// decides once for the whole request (whether the pod asks for GPUs at all).
class CycleState {
 public:
  explicit CycleState(PodGpuRequest request)
      : request_(std::move(request)),
        names_models_(!request_.models.empty() || !request_.excluded_models.empty() || !request_.vendors.empty()),
        guaranteed_per_gpu_(request_.whole_gpu && request_.mig_profile.empty() ? kOneGpu : request_.guaranteed),
        memory_limit_per_gpu_(request_.memory_limit > request_.memory ? request_.memory_limit : request_.memory),
        bursts_(!request_.whole_gpu && request_.limit > request_.guaranteed) {
    mig_slots_.fill(-1);
    if (request_.mig_profile.empty()) return;
    for (const MigGeometry& geometry : AllMigGeometries()) {
      const uint8_t id = MigGeometryId(&geometry);
      for (size_t p = 0; p < geometry.profiles.size() && id < mig_slots_.size(); ++p) {
        if (geometry.profiles[p].name == request_.mig_profile) mig_slots_[id] = static_cast<int8_t>(p);
      }
    }
  }

  /// The pod's request as parsed.
  [[nodiscard]] const PodGpuRequest& request() const { return request_; }

  /// Whether the pod asks for GPUs at all. One that does not (a CPU-only
  /// pod, `count` 0) is decided by the profile, once: it gets no GPUs on
  /// every node, and no plugin is asked to choose, rank, rule out or
  /// filter GPUs for it (plugin.h). Node filters and scores still see it.
  [[nodiscard]] bool wants_gpus() const { return request_.count > 0; }
  /// Whether the pod asks for a MIG instance (PodGpuRequest::mig_profile):
  /// then the profile's MIG chooser places it, on GPUs in MIG mode only.
  [[nodiscard]] bool wants_mig_instance() const { return !request_.mig_profile.empty(); }
  /// Which kind of request this is, by which the profile routes it.
  [[nodiscard]] GpuRequestKind kind() const {
    return wants_mig_instance() ? GpuRequestKind::kMigInstance
           : wants_gpus()       ? GpuRequestKind::kShares
                                : GpuRequestKind::kNone;
  }
  /// For a pod asking for a MIG instance: the position of its profile in the
  /// table with geometry id `id` (GpuState::mig_geometry), so that a GPU's
  /// free-instance summary answers "is one free" with a bit test; -1 when
  /// that model offers no such profile, for a GPU not in MIG mode (id 0),
  /// and for any other pod.
  [[nodiscard]] int32_t mig_profile_slot(uint8_t id) const { return id < mig_slots_.size() ? mig_slots_[id] : -1; }
  /// The number of GPUs the pod asks for; 0 when it asks for none.
  [[nodiscard]] size_t gpu_count() const { return wants_gpus() ? static_cast<size_t>(request_.count) : 0; }

  /// Whether the pod accepts or refuses GPU models by name, or selects
  /// vendors. When it does not, every GPU will do and no plugin needs to
  /// read a GPU's model or vendor.
  [[nodiscard]] bool names_models() const { return names_models_; }
  /// The compute the pod reserves on each of its GPUs: all of it (1000
  /// milli) for a whole GPU, its instance's sevenths for a MIG instance,
  /// else its guaranteed share.
  [[nodiscard]] MilliGpu guaranteed_per_gpu() const { return guaranteed_per_gpu_; }
  /// The memory the pod may grow to on each GPU: its limit, and at least
  /// what it reserves.
  [[nodiscard]] MemoryMiB memory_limit_per_gpu() const { return memory_limit_per_gpu_; }
  /// Whether the pod shares GPUs with a burst limit above its guarantee.
  [[nodiscard]] bool bursts() const { return bursts_; }

 private:
  PodGpuRequest request_;
  bool names_models_;
  MilliGpu guaranteed_per_gpu_;
  MemoryMiB memory_limit_per_gpu_;
  bool bursts_;
  std::array<int8_t, 8> mig_slots_;  // by geometry id
};

}  // namespace tessera
