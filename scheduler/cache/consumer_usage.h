// What the pods of each consumer (a namespace, and the tenant label its pods
// carry) hold on GPUs over the whole cluster: what tenant quotas are checked
// against (scheduler/tenancy/). Kept in the snapshot, updated per publish from
// the nodes that changed, so a request reads it without visiting a node.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// GPU resources summed over pods: guaranteed compute, reserved memory and
/// the number of GPUs held (a pod sharing one GPU holds one).
struct GpuTotals {
  MilliGpu milli{0};
  MemoryMiB memory{0};
  int64_t gpus = 0;

  void Add(const GpuTotals& o) {
    milli += o.milli;
    memory += o.memory;
    gpus += o.gpus;
  }
  void Subtract(const GpuTotals& o) {
    milli -= o.milli;
    memory -= o.memory;
    gpus -= o.gpus;
  }
  [[nodiscard]] bool empty() const { return milli.value() == 0 && memory.value() == 0 && gpus == 0; }
  bool operator==(const GpuTotals&) const = default;
};

/// What one pod's assignment holds.
inline GpuTotals TotalsOf(const GpuAssignment& assignment) {
  GpuTotals t;
  for (const GpuShare& share : assignment.gpus) {
    t.milli += share.guaranteed;
    t.memory += share.memory;
    ++t.gpus;
  }
  return t;
}

/// Who holds GPUs, before any tenant is known: tenants are the policy file's
/// and change on reload, so the model keeps what pods say of themselves.
struct ConsumerKey {
  std::string namespace_name;
  std::string tenant_label;  ///< The pod's `tessera.io/tenant` label; empty when it has none.

  bool operator==(const ConsumerKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ConsumerKey& k) {
    return H::combine(std::move(h), k.namespace_name, k.tenant_label);
  }
};

using ConsumerUsage = absl::flat_hash_map<ConsumerKey, GpuTotals>;

}  // namespace tessera
