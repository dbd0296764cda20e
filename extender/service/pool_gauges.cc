#include "extender/service/pool_gauges.h"

#include "scheduler/cache/pool_usage.h"

namespace tessera {
namespace {

constexpr std::string_view kGpus = "tessera_pool_gpus";
constexpr std::string_view kGpusHelp =
    "GPUs per node pool and model, by state: idle, partial (shared, some free), full, unhealthy.";
constexpr std::string_view kMilli = "tessera_pool_gpu_milli";
constexpr std::string_view kMilliHelp =
    "Milli-GPU per node pool and model: capacity (healthy GPUs), allocated (guaranteed), free_fragmented "
    "(free on partly held GPUs, which a whole-GPU pod cannot use).";
constexpr std::string_view kMemory = "tessera_pool_gpu_memory_mib";
constexpr std::string_view kMemoryHelp = "GPU memory (MiB) per node pool and model: capacity (known), allocated.";
constexpr std::string_view kNodes = "tessera_pool_nodes";
constexpr std::string_view kNodesHelp =
    "Nodes per node pool and GPU model, by state: idle (every healthy GPU of the model free), in_use.";

void Publish(MetricsRegistry& metrics, const PoolModelUsage& u) {
  const auto set = [&](std::string_view name, std::string_view help, std::string_view label, std::string_view value,
                       double v) {
    metrics.Gauge(name, help, {{"pool", u.pool}, {"model", u.model}, {std::string(label), std::string(value)}}).Set(v);
  };
  set(kGpus, kGpusHelp, "state", "idle", double(u.gpus_idle));
  set(kGpus, kGpusHelp, "state", "partial", double(u.gpus_partial));
  set(kGpus, kGpusHelp, "state", "full", double(u.gpus_full));
  set(kGpus, kGpusHelp, "state", "unhealthy", double(u.gpus_unhealthy));
  set(kMilli, kMilliHelp, "kind", "capacity", double(u.milli_capacity.value()));
  set(kMilli, kMilliHelp, "kind", "allocated", double(u.milli_allocated.value()));
  set(kMilli, kMilliHelp, "kind", "free_fragmented", double(u.milli_free_fragmented.value()));
  set(kMemory, kMemoryHelp, "kind", "capacity", double(u.memory_capacity.value()));
  set(kMemory, kMemoryHelp, "kind", "allocated", double(u.memory_allocated.value()));
  set(kNodes, kNodesHelp, "state", "idle", double(u.nodes_idle));
  set(kNodes, kNodesHelp, "state", "in_use", double(u.nodes - u.nodes_idle));
}

}  // namespace

void PoolGauges::Refresh(const ClusterSnapshot& snapshot) {
  absl::MutexLock lock(&mu_);
  std::set<std::pair<std::string, std::string>> now;
  for (const PoolModelUsage& u : UsageByPoolAndModel(snapshot)) {
    Publish(metrics_, u);
    now.emplace(u.pool, u.model);
  }
  for (const auto& [pool, model] : published_) {
    if (!now.contains({pool, model})) Publish(metrics_, PoolModelUsage{.pool = pool, .model = model});
  }
  published_.merge(now);
}

}  // namespace tessera
