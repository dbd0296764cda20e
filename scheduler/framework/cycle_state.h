// The per-request state every plugin reads: kube-scheduler's CycleState.
#pragma once

#include <cstddef>
#include <utility>

#include "scheduler/model/gpu_request.h"
#include "scheduler/model/quantity.h"

namespace tessera {

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
        bursts_(!request_.whole_gpu && request_.limit > request_.guaranteed) {}

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
};

}  // namespace tessera
