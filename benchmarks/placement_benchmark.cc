// What placement quality costs: a whole replay run of the Alibaba trace
// (tessera-sim's unit of work), and the fragmentation-aware policies on the
// extender's hot path (Profile::Score over a cluster mid-replay).
//
//   ./build/benchmarks/placement_benchmark --benchmark_min_time=0.2
//
//   BM_ReplayDefaultTrace/<policy>   one seed of the default trace, every pod
//                                    to 130% of GPU capacity (10 seeds = the
//                                    docs/benchmarks.md's table row; target: the winning
//                                    policy's 10 seeds in <= 60 s on 2 cores)
//   BM_ReplayMixedFleet/<policy>     the same on the mixed fleet (tessera-sim
//                                    --fleet=mixed; sim/fleet.h): the trace's
//                                    1213 nodes with AMD and MIG nodes, vendor-
//                                    selecting and MIG pods; fgd's file has
//                                    no MIG chooser, so its MIG pods fail
//   BM_Prioritize/<policy>/<nodes>   Profile::Score of a 0.47-GPU, 8-CPU pod
//                                    over 1000 or 5000 nodes with host CPU
//                                    known, as the extender computes a node
//                                    the score memo has not seen. The nodes
//                                    are the trace's, replayed to 80% of
//                                    capacity with the policy, repeated to the size.
//   BM_LeftoverOutlookBuild/<mix>    fgd's `leftover: outlook` tables, built
//                                    once per learned mix, off the request
//                                    path: 0 = the default trace's typical
//                                    pods, 1 = 4096 kinds of distinct CPU
//                                    and 1000 distinct shares (past the
//                                    learner's 64 kinds and the 64 CPU
//                                    levels kept: the most it walks)
//   BM_RetellLearnedMix/<nodes>      the server's once-a-second check between
//                                    two learned mixes, off the request path:
//                                    sum the cluster's supply over 1000 or
//                                    5000 nodes (as BM_Prioritize's), tell the
//                                    mix in force anew and build the default
//                                    policy's profile to compare verdicts
//                                    (MixLearner::Retold,
//                                    Profile::WithRetoldWorkload)
//
// Policies: 0 = fgd, 1 = the default policy (config/examples/default-policy.yaml),
// 2 = gpu-share binpack (the previous default, for comparison).

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "policies/builtin_registry.h"
#include "policies/fgd/expected_waste.h"
#include "scheduler/framework/cluster_supply.h"
#include "scheduler/framework/profile.h"
#include "sim/experiment.h"
#include "sim/fleet.h"
#include "sim/replay.h"
#include "sim/workload.h"

namespace tessera::sim {
namespace {

const char* const kPolicies[] = {TESSERA_SOURCE_DIR "/config/examples/placement/fgd-policy.yaml",
                                 TESSERA_SOURCE_DIR "/config/examples/default-policy.yaml",
                                 TESSERA_SOURCE_DIR "/config/examples/binpack-policy.yaml"};

struct Trace {
  std::vector<TraceNode> nodes;
  std::vector<TracePod> pods;
  PodClasses classes;
  std::vector<WorkloadPod> typical;
  std::unique_ptr<Cluster> empty;
};

// Stops the benchmark with the loader's message, which names the file.
template <typename T>
T OrExit(absl::StatusOr<T> loaded) {
  if (!loaded.ok()) {
    std::fprintf(stderr, "placement_benchmark: %s\n", std::string(loaded.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(loaded);
}

const Trace* LoadTrace(Fleet fleet) {
  auto t = new Trace;
  t->nodes = OrExit(LoadNodeList(TESSERA_DATA_DIR "/openb/openb_node_list_gpu_node.csv"));
  t->pods = OrExit(LoadPodList(TESSERA_DATA_DIR "/openb/openb_pod_list_default.csv"));
  ApplyFleet(fleet, t->nodes);
  ApplyFleet(fleet, t->pods);
  t->classes = ClassifyPods(t->pods);
  t->typical = TypicalPods(t->pods, 95);
  t->empty = std::make_unique<Cluster>(t->nodes);
  return t;
}

const Trace& DefaultTrace() {
  static const Trace* trace = LoadTrace(Fleet::kTrace);
  return *trace;
}

const Trace& MixedFleetTrace() {
  static const Trace* trace = LoadTrace(Fleet::kMixed);
  return *trace;
}

std::shared_ptr<const Profile> Policy(int64_t which, const Trace& trace = DefaultTrace()) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyForTrace(kPolicies[which], registry, &trace.typical);
  if (!profile.ok()) {
    std::fprintf(stderr, "%s\n", std::string(profile.status().message()).c_str());
    std::abort();
  }
  return *profile;
}

// One seed (42) of `t` replayed with policy `which`, every pod to 130% of capacity.
void ReplayOneSeed(benchmark::State& state, const Trace& t, int64_t which) {
  const std::shared_ptr<const Profile> profile = Policy(which, t);
  const RunWorkload workload = MakeRunWorkload(t.pods, t.empty->size(), t.empty->capacity_milli(), 130, 42);
  int64_t violations = 0;
  for (auto _ : state) {
    ReplayResult r = Replay(ReplayInput{.profile = profile.get(), .empty_cluster = t.empty.get(), .pods = &t.pods,
                                        .classes = &t.classes, .workload = &workload, .typical = nullptr,
                                        .seed = 42, .memo = MemoMode::kAuto, .keep_cluster = false});
    benchmark::DoNotOptimize(r.placed_pods);
    violations += r.violations.count;
  }
  if (violations > 0) state.SkipWithError("a placement broke sim/placement_check.h's rules");
  state.counters["pods"] = static_cast<double>(workload.pods.size());
}

void BM_ReplayDefaultTrace(benchmark::State& state) { ReplayOneSeed(state, DefaultTrace(), state.range(0)); }

void BM_ReplayMixedFleet(benchmark::State& state) { ReplayOneSeed(state, MixedFleetTrace(), state.range(0)); }

void BM_Prioritize(benchmark::State& state) {
  const Trace& t = DefaultTrace();
  const std::shared_ptr<const Profile> profile = Policy(state.range(0));
  RunWorkload workload = MakeRunWorkload(t.pods, t.empty->size(), t.empty->capacity_milli(), 80, 42);
  const ReplayResult replayed = Replay(ReplayInput{.profile = profile.get(), .empty_cluster = t.empty.get(),
                                                   .pods = &t.pods, .classes = &t.classes, .workload = &workload,
                                                   .typical = nullptr, .seed = 42, .memo = MemoMode::kAuto,
                                                   .keep_cluster = true});
  std::vector<const NodeView*> views;
  for (size_t i = 0; views.size() < static_cast<size_t>(state.range(1)); i = (i + 1) % replayed.cluster->size()) {
    views.push_back(&replayed.cluster->View(i));  // host CPU known, as the watch gives it online
  }
  PodGpuRequest pod;
  pod.whole_gpu = false;
  pod.guaranteed = pod.limit = MilliGpu(470);
  pod.host.cpu = MilliCpu(8000);
  for (auto _ : state) {
    std::vector<int64_t> scores = profile->Score(CycleState(pod), views, nullptr);
    benchmark::DoNotOptimize(scores.data());
  }
}

void BM_LeftoverOutlookBuild(benchmark::State& state) {
  std::vector<WorkloadPod> kinds = DefaultTrace().typical;
  if (state.range(0) == 1) {
    kinds.clear();
    for (int64_t i = 1; i <= 4096; ++i) {
      WorkloadPod kind;
      kind.weight = 1 + i % 7;
      kind.cpu = MilliCpu(100 * i);
      kind.gpus = 1;
      kind.milli = MilliGpu(1 + i % 1000);
      kinds.push_back(std::move(kind));
    }
  }
  const absl::StatusOr<TargetWorkload> workload = TargetWorkload::Create(kinds);
  if (!workload.ok()) {
    state.SkipWithError(std::string(workload.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    const ExpectedWaste outlook(*workload);
    benchmark::DoNotOptimize(outlook.Of(500));
  }
  state.counters["kinds"] = static_cast<double>(kinds.size());
}

void BM_RetellLearnedMix(benchmark::State& state) {
  const Trace& t = DefaultTrace();
  const std::shared_ptr<const Profile> file = Policy(1);
  RunWorkload workload = MakeRunWorkload(t.pods, t.empty->size(), t.empty->capacity_milli(), 80, 42);
  const ReplayResult replayed = Replay(ReplayInput{.profile = file.get(), .empty_cluster = t.empty.get(),
                                                   .pods = &t.pods, .classes = &t.classes, .workload = &workload,
                                                   .typical = nullptr, .seed = 42, .memo = MemoMode::kAuto,
                                                   .keep_cluster = true});
  std::vector<const NodeView*> views;
  for (size_t i = 0; views.size() < static_cast<size_t>(state.range(0)); i = (i + 1) % replayed.cluster->size()) {
    views.push_back(&replayed.cluster->View(i));
  }
  const auto supply = [&] {
    ClusterSupplySum sum;
    for (const NodeView* view : views) sum.Add(*view);
    return std::move(sum).Take();
  };
  const auto learned = std::make_shared<const TargetWorkload>(
      OrExit(TargetWorkload::Create(t.typical)).WithCluster(TargetWorkload::ClusterSupply{}).WithPriorPercent(5));
  const std::shared_ptr<const Profile> in_force = file->WithWorkload(learned);
  for (auto _ : state) {
    auto retold = std::make_shared<const TargetWorkload>(learned->WithCluster(supply()));
    std::shared_ptr<const Profile> next = file->WithRetoldWorkload(std::move(retold), *in_force);
    benchmark::DoNotOptimize(next);
  }
}

BENCHMARK(BM_ReplayDefaultTrace)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayMixedFleet)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Prioritize)->ArgsProduct({{0, 1, 2}, {1000, 5000}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LeftoverOutlookBuild)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RetellLearnedMix)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::sim

BENCHMARK_MAIN();
