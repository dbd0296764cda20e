// A node's host CPU and memory, and what a pod asks of them.
//
// The extender's cluster model fills them from the API server (a node's
// status.allocatable; the effective requests of every pod bound to it, GPU or
// not, and of binds in flight), the placement simulator from its trace. The
// `host-resources` filter then plays kube-scheduler's NodeResourcesFit (in a
// cluster kube-scheduler checks them too), and scores that weigh CPU against
// GPUs (best-fit, dot-product, fgd, host-stranding) see both. A node whose
// allocatable is unknown has no host: nothing checks or weighs it.
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
