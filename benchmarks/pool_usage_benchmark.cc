// What the tessera_pool_* gauges cost per /metrics scrape: UsageByPoolAndModel
// over 100, 1000 and 5000 nodes × 8 GPUs in 4 pools of 2 models, half the GPUs
// shared by quarter pods, a quarter held whole.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pool_usage.h"

namespace tessera {
namespace {

constexpr int kGpus = 8;

std::shared_ptr<const ClusterSnapshot> Cluster(int nodes) {
  ClusterModel model;
  for (int n = 0; n < nodes; ++n) {
    NodeInventory inventory;
    inventory.source = InventorySource::kAnnotation;
    const std::string model_name = n % 2 == 0 ? "NVIDIA-A100-SXM4-80GB" : "NVIDIA-H100-80GB-HBM3";
    for (int g = 0; g < kGpus; ++g) {
      inventory.gpus.push_back(GpuDevice{.index = g, .uuid = absl::StrCat("GPU-", n, "-", g), .model = model_name,
                                         .memory = MemoryMiB(81920), .numa = 0});
    }
    const std::string name = absl::StrCat("node-", n);
    model.UpsertNode(name, std::move(inventory), absl::OkStatus(), std::nullopt, absl::StrCat("pool-", n % 4));
    for (int g = 0; g < kGpus; ++g) {
      if (g % 4 == 3) continue;  // a quarter idle
      PodHolding pod;
      pod.uid = absl::StrCat(name, "-", g);
      pod.pod_key = "ml/" + pod.uid;
      pod.assignment.node = name;
      pod.assignment.gpus.push_back(GpuShare{.index = g, .uuid = {}, .guaranteed = MilliGpu(g % 2 == 0 ? 250 : 1000),
                                             .limit = MilliGpu(1000), .memory = MemoryMiB(10240),
                                             .memory_limit = MemoryMiB(10240)});
      model.UpsertPod(std::move(pod));
    }
  }
  return model.Publish();
}

void BM_UsageByPoolAndModel(benchmark::State& state) {
  const std::shared_ptr<const ClusterSnapshot> snapshot = Cluster(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(UsageByPoolAndModel(*snapshot));
  state.counters["gpus"] = static_cast<double>(snapshot->gpu_count());
}
BENCHMARK(BM_UsageByPoolAndModel)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
