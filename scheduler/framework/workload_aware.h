// A capability a plugin opts into, beside its extension points: it measures
// against the workload the cluster expects (fgd, host-stranding), and can be
// rebuilt to measure against a learned one. The profile finds such plugins
// as kube-scheduler's framework finds a plugin's interfaces, by asking
// whether the plugin is one (AsWorkloadAware); no other plugin carries hooks
// for it.
#pragma once

#include <memory>

#include "scheduler/framework/plugin.h"
#include "scheduler/model/target_workload.h"

namespace tessera {

class WorkloadAware {
 public:
  virtual ~WorkloadAware() = default;
  /// The same plugin, same args, measuring against `workload` instead of its
  /// own (the policy file's). A profile learning the workload from arrivals
  /// (scheduler/cache/workload_learner.h) swaps it in this way: plugins stay
  /// immutable, and the new profile is a new memo key, as a reload is.
  [[nodiscard]] virtual std::shared_ptr<const Plugin> WithWorkload(
      std::shared_ptr<const TargetWorkload> workload) const = 0;
  /// The workload it measures against now (after its own blending and
  /// weighing). What it concludes from the cluster is this workload's
  /// cluster_verdict().
  [[nodiscard]] virtual const TargetWorkload& MeasuredWorkload() const = 0;
};

/// `plugin` as a WorkloadAware, or null when it does not measure against a workload.
inline const WorkloadAware* AsWorkloadAware(const Plugin& plugin) {
  return dynamic_cast<const WorkloadAware*>(&plugin);
}

}  // namespace tessera
