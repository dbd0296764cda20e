#include "scheduler/cache/pool_usage.h"

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
  for (NodeIndex i = 0; i < snapshot.node_count(); ++i) {
    const NodeState& node = snapshot.node(i);
    const NodeView& view = snapshot.View(i);
    const std::string_view pool = node.pool.empty() ? kNoPool : std::string_view(node.pool);
    // Per model on this node: does it have any, and are its healthy ones all idle?
    std::map<std::string_view, std::pair<bool, bool>> node_models;  // model -> (any healthy, all healthy idle)
    for (size_t g = 0; g < node.inventory.gpus.size() && g < view.gpu_states.size(); ++g) {
      const GpuDevice& device = node.inventory.gpus[g];
      const std::string_view model = device.model.empty() ? kUnknownModel : std::string_view(device.model);
      PoolModelUsage& u = by_key[{pool, model}];
      const bool idle = AddGpu(device, view.gpu_states[g], u);
      auto [it, inserted] = node_models.try_emplace(model, false, true);
      if (view.gpu_states[g].healthy()) {
        it->second.first = true;
        it->second.second = it->second.second && idle;
      }
    }
    for (const auto& [model, seen] : node_models) {
      PoolModelUsage& u = by_key[{pool, model}];
      ++u.nodes;
      if (seen.first && seen.second) ++u.nodes_idle;
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
