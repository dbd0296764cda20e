// A node's host CPU and memory, and what a pod asks of them.
//
// kube-scheduler accounts for CPU and memory itself (NodeResourcesFit), so
// the extender leaves them unknown and checks nothing. The placement
// simulator, which has no kube-scheduler in front of it, fills them in: the
// `host-resources` filter then plays NodeResourcesFit, and scores that weigh
// CPU against GPUs (best-fit, dot-product, fgd) can see both.
#pragma once

#include "scheduler/model/quantity.h"

namespace tessera {

/// What a node offers and what pods on it have requested.
struct HostResources {
  MilliCpu cpu_capacity{0};
  MilliCpu cpu_used{0};
  MemoryMiB memory_capacity{0};
  MemoryMiB memory_used{0};

  [[nodiscard]] MilliCpu cpu_free() const { return cpu_capacity - cpu_used; }
  [[nodiscard]] MemoryMiB memory_free() const { return memory_capacity - memory_used; }
  bool operator==(const HostResources&) const = default;
};

/// A pod's host CPU and memory request; zero asks for nothing.
struct HostRequest {
  MilliCpu cpu{0};
  MemoryMiB memory{0};
  bool operator==(const HostRequest&) const = default;
};

}  // namespace tessera
