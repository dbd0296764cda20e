#include "sim/cluster.h"

namespace tessera::sim {
namespace {

// GpuUsage::Add's inverse: one pod holding `s` fewer (and its MIG instance,
// if it held one, free again: a pod holds one instance, instances never overlap).
void Subtract(const GpuShare& s, GpuUsage& u) {
  u.guaranteed -= s.guaranteed;
  u.limit -= s.limit;
  u.memory -= s.memory;
  u.memory_limit -= s.memory_limit;
  --u.pods;
  if (s.mig.has_value() && s.mig->start >= 0 && s.mig->start < kMigSlices) {
    u.mig_held_starts = static_cast<uint8_t>(u.mig_held_starts & ~(1u << s.mig->start));
  }
}

// CountPodShape's inverse: one pod holding `shares` fewer.
void UncountPodShape(const std::vector<GpuShare>& shares, std::vector<GpuPodShape>& shapes) {
  if (shares.empty()) return;
  GpuPodShape shape{.gpus = static_cast<int32_t>(shares.size()), .whole_gpu = true, .pods = 1};
  for (const GpuShare& s : shares) shape.whole_gpu = shape.whole_gpu && s.guaranteed >= MilliGpu(1000);
  for (auto it = shapes.begin(); it != shapes.end(); ++it) {
    if (!it->SameShape(shape)) continue;
    if (--it->pods == 0) shapes.erase(it);
    return;
  }
}

}  // namespace

Cluster::Cluster(const std::vector<TraceNode>& nodes) {
  nodes_.reserve(nodes.size());
  for (const TraceNode& t : nodes) {
    Node n;
    n.name = t.name;
    for (int32_t i = 0; i < t.gpus; ++i) {
      n.gpus.push_back(GpuDevice{.index = i, .uuid = {}, .model = t.model, .memory = MemoryMiB(t.gpu_memory_mib),
                                 .numa = -1, .healthy = true, .mig_mode = !t.mig.empty(), .mig = t.mig,
                                 .mig_unlisted = false, .vendor = t.vendor});
    }
    n.usage.resize(n.gpus.size());
    n.host = HostResources{.cpu_capacity = MilliCpu(t.cpu_milli), .cpu_used = MilliCpu(0),
                           .memory_capacity = MemoryMiB(t.memory_mib), .memory_used = MemoryMiB(0)};
    capacity_milli_ += kOneGpu.value() * t.gpus;
    nodes_.push_back(std::move(n));
  }
  views_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) Refresh(i);
}

Cluster::Cluster(const Cluster& other)
    : nodes_(other.nodes_), capacity_milli_(other.capacity_milli_), used_milli_(other.used_milli_) {
  views_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) Refresh(i);
}

void Cluster::Refresh(size_t i) {
  Node& n = nodes_[i];
  n.gpu_states = JoinGpuStates(n.gpus, n.usage);
  views_[i] = NodeView{.name = n.name, .gpus = n.gpus, .inventory_error = nullptr, .usage = n.usage,
                       .gpu_states = n.gpu_states};
  views_[i].host = &n.host;
  views_[i].pod_shapes = n.pod_shapes;
}

void Cluster::Place(size_t i, const PodGpuRequest& request, const std::vector<GpuShare>& shares) {
  Node& n = nodes_[i];
  for (const GpuShare& s : shares) {
    if (s.index < 0) continue;
    if (static_cast<size_t>(s.index) >= n.usage.size()) n.usage.resize(static_cast<size_t>(s.index) + 1);
    n.usage[static_cast<size_t>(s.index)].Add(s);
    used_milli_ += s.guaranteed.value();
  }
  n.host.cpu_used += request.host.cpu;
  n.host.memory_used += request.host.memory;
  CountPodShape(shares, n.pod_shapes);
  ++n.version;
  Refresh(i);
}

void Cluster::Remove(size_t i, const PodGpuRequest& request, const std::vector<GpuShare>& shares) {
  Node& n = nodes_[i];
  for (const GpuShare& s : shares) {
    if (s.index < 0 || static_cast<size_t>(s.index) >= n.usage.size()) continue;
    Subtract(s, n.usage[static_cast<size_t>(s.index)]);
    used_milli_ -= s.guaranteed.value();
  }
  n.host.cpu_used -= request.host.cpu;
  n.host.memory_used -= request.host.memory;
  UncountPodShape(shares, n.pod_shapes);
  ++n.version;
  Refresh(i);
}

}  // namespace tessera::sim
