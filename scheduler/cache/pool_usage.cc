#include "scheduler/cache/pool_usage.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tessera {
namespace {

constexpr MilliGpu kWholeGpu{1000};

// Adds one GPU to `u`; true when it is healthy and idle.
bool AddGpu(const GpuDevice& device, const GpuState& state, PoolModelUsage& u) {
  if (!state.healthy()) {
    ++u.gpus_unhealthy;
    return false;
  }
  const MilliGpu held = state.guaranteed();
  u.milli_capacity += kWholeGpu;
  u.milli_allocated += held;
  if (device.memory_known()) u.memory_capacity += device.memory;
  u.memory_allocated += state.memory_held();
  if (state.idle()) {
    ++u.gpus_idle;
    return true;
  }
  const bool memory_full = state.memory_known() && state.memory_held() >= state.memory();
  if (held >= kWholeGpu || memory_full) {
    ++u.gpus_full;
  } else {
    ++u.gpus_partial;
    u.milli_free_fragmented += kWholeGpu - held;
  }
  return false;
}

}  // namespace

std::vector<PoolModelUsage> UsageByPoolAndModel(const ClusterSnapshot& snapshot) {
  std::map<std::pair<std::string_view, std::string_view>, PoolModelUsage> by_key;
  // Per model on the node at hand (a node has one model, rarely two): its
  // entry, whether it has a healthy GPU, whether all of those are idle.
  struct NodeModel {
    std::string_view model;
    PoolModelUsage* usage;
    bool any_healthy = false;
    bool all_idle = true;
  };
  std::vector<NodeModel> node_models;
  for (NodeIndex i = 0; i < snapshot.node_count(); ++i) {
    const NodeState& node = snapshot.node(i);
    const NodeView& view = snapshot.View(i);
    const std::string_view pool = node.pool.empty() ? kNoPool : std::string_view(node.pool);
    node_models.clear();
    for (size_t g = 0; g < node.inventory.gpus.size() && g < view.gpu_states.size(); ++g) {
      const GpuDevice& device = node.inventory.gpus[g];
      const std::string_view model = device.model.empty() ? kUnknownModel : std::string_view(device.model);
      auto it = std::find_if(node_models.begin(), node_models.end(),
                             [&](const NodeModel& m) { return m.model == model; });
      if (it == node_models.end()) {
        node_models.push_back({.model = model, .usage = &by_key[{pool, model}]});
        it = node_models.end() - 1;
      }
      const bool idle = AddGpu(device, view.gpu_states[g], *it->usage);
      if (view.gpu_states[g].healthy()) {
        it->any_healthy = true;
        it->all_idle = it->all_idle && idle;
      }
    }
    for (const NodeModel& m : node_models) {
      ++m.usage->nodes;
      if (m.any_healthy && m.all_idle) ++m.usage->nodes_idle;
    }
  }
  std::vector<PoolModelUsage> out;
  out.reserve(by_key.size());
  for (auto& [key, u] : by_key) {
    u.pool = std::string(key.first);
    u.model = std::string(key.second);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace tessera
