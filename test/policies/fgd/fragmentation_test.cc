// FGD's fragmentation measure and the fgd plugin: the paper's definitions
// on nodes small enough to check by hand, and the workload text.
#include "policies/fgd/fragmentation.h"

#include <random>
#include <string>
#include <vector>

#include "scheduler/framework/plugin_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/fgd/fgd.h"
#include "policies/baselines/gpu_fit.h"
#include "policies/fgd/host_stranding.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Devices;
using testing::Node;
using testing::Pod;

TargetWorkload Workload(const std::vector<std::string>& items) { return testing::WorkloadOf(items); }

// The measure of a node of G2 GPUs (memory unknown) with `free` milli-GPU free on each.
double F(const TargetWorkload& w, std::vector<int64_t> free, std::optional<int64_t> cpu_free) {
  return NodeFragmentation(w, NodeGpuAccess(w, Devices(static_cast<int>(free.size()), "G2", 0)), free, cpu_free);
}

TEST(WorkloadTextTest, ParsesAndFormatsEveryForm) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1078 cpu=3152m gpu=810m", "1078 cpu=3152m gpu=810m"},
      {"5 cpu=12 gpu=2", "5 cpu=12000m gpu=2"},
      {"3 cpu=0", "3 cpu=0m"},
      {"3 cpu=500m gpu=0", "3 cpu=500m"},
      {"2  cpu=8000m   gpu=2x500m models=V100M16|V100M32", "2 cpu=8000m gpu=2x500m models=V100M16|V100M32"},
      {"1 cpu=1000m gpu=1000m", "1 cpu=1000m gpu=1"},
      {"4 cpu=1000m gpu=500m gpumem=12Gi", "4 cpu=1000m gpu=500m gpumem=12288Mi"},
      {"4 cpu=1000m gpumem=4915Mi gpu=200m models=T4", "4 cpu=1000m gpu=200m gpumem=4915Mi models=T4"},
  };
  for (const auto& [text, canonical] : cases) {
    SCOPED_TRACE(text);
    absl::StatusOr<WorkloadPod> pod = ParseWorkloadPod(text);
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(FormatWorkloadPod(*pod), canonical);
    EXPECT_EQ(*ParseWorkloadPod(canonical), *pod);
  }
}

TEST(WorkloadTextTest, BadItemsSayWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cpu=1000m", "must start with a positive integer weight"},
      {"0 cpu=1000m", "must start with a positive integer weight"},
      {"3 gpu=1", "cpu= is required"},
      {"3 cpu=1.5", "cpu=1.5: must be milli-CPU such as 3152m or whole cores such as 12"},
      {"3 cpu=1000m gpu=1500m", "gpu=1500m: must be a share of one GPU"},
      {"3 cpu=1000m gpu=half", "gpu=half: must be a share"},
      {"3 cpu=1000m ram=4Gi", "unknown field \"ram=4Gi\"; known: cpu=, gpu=, gpumem=, models="},
      {"3 cpu=1000m gpu=500m gpumem=lots", "gpumem=lots: must be GPU memory per GPU such as 12Gi or 12288Mi"},
      {"3 cpu=1000m gpu=500m gpumem=0Mi", "gpumem=0Mi: must be GPU memory per GPU"},
      {"3 cpu=1000m gpumem=4Gi", "gpumem= needs gpu="},
      {"3 cpu=1000m models=", "models=: list at least one model"},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    EXPECT_THAT(ParseWorkloadPod(text).status().message(), HasSubstr(error));
  }
}

TEST(WorkloadTextTest, WeightsTooLargeToMeasureExactlyAreRefusedWithTheRemedy) {
  std::vector<WorkloadPod> pods(2, *ParseWorkloadPod("1000000000 cpu=1000m gpu=500m"));
  const absl::StatusOr<TargetWorkload> workload = TargetWorkload::Create(pods);
  ASSERT_FALSE(workload.ok());
  EXPECT_THAT(workload.status().message(), HasSubstr("scale them down (only their ratios matter)"));
  pods[0].weight = pods[1].weight = TargetWorkload::kMaxTotalWeight / 2;
  EXPECT_TRUE(TargetWorkload::Create(pods).ok()) << "at the limit";
}

TEST(FragmentationTest, CountsTheGpusTooSmallForEachKindWeightedByHowCommonItIs) {
  const TargetWorkload w = Workload({"1 cpu=1000m gpu=500m", "1 cpu=1000m gpu=1"});
  const int64_t plenty = 8000;
  EXPECT_EQ(F(w, {1000, 1000}, plenty), 0) << "both kinds fit, nothing too small";
  // 300 free is too small for both kinds; each still fits on the idle GPU.
  EXPECT_DOUBLE_EQ(F(w, {1000, 300}, plenty), 300);
  // A half-GPU kind fits on 500; a whole-GPU kind nowhere: all 800 free is its fragment.
  EXPECT_DOUBLE_EQ(F(w, {500, 300}, plenty), 0.5 * 300 + 0.5 * 800);
  EXPECT_EQ(F(w, {0, 0}, plenty), 0) << "nothing free, nothing fragmented";
}

TEST(FragmentationTest, ANodeShortOfCpuIsFragmentedForEveryKindItCannotHost) {
  const TargetWorkload w = Workload({"1 cpu=1000m gpu=500m", "1 cpu=4000m gpu=500m"});
  EXPECT_DOUBLE_EQ(F(w, {1000}, 2000), 0.5 * 1000);
  EXPECT_DOUBLE_EQ(F(w, {1000}, std::nullopt), 0) << "unknown CPU is never short";
}

TEST(FragmentationTest, CpuOnlyKindsCountAllFreeGpuAsFragment) {
  const TargetWorkload w = Workload({"1 cpu=1000m"});
  EXPECT_DOUBLE_EQ(F(w, {1000, 400}, 8000), 1400);
}

TEST(FragmentationTest, AKindThatRefusesTheNodesModelCannotUseAnyOfIt) {
  const TargetWorkload w = Workload({"1 cpu=1000m gpu=1 models=T4", "1 cpu=1000m gpu=1 models=g2|T4"});
  EXPECT_DOUBLE_EQ(F(w, {1000, 1000}, 8000), 0.5 * 2000)
      << "the first kind has no access; the second matches G2 ignoring case";
}

TEST(FragmentationTest, HostStrandingCountsTheGpuTheFreeCpuCannotServe) {
  // GPU kinds ask 4 cores per GPU on average (2 per half GPU, 4 per GPU).
  const TargetWorkload w = Workload({"1 cpu=2000m gpu=500m", "1 cpu=4000m gpu=1"});
  ASSERT_EQ(w.cpu_per_gpu().cpu * 1000, 4000 * w.cpu_per_gpu().gpu) << "4000 milli-CPU per GPU";
  const FragmentationOptions stranding{.host_stranding = true};
  const NodeGpuAccess access(w, Devices(4, "G2", 0));
  const std::vector<int64_t> idle = {1000, 1000, 1000, 1000};
  EXPECT_EQ(NodeFragmentation(w, access, idle, 16000, stranding), 0) << "16 cores serve 4 GPUs";
  // 6 cores serve 1.5 GPUs: 2.5 of the 4 free GPUs are stranded for both kinds.
  EXPECT_EQ(NodeFragmentation(w, access, idle, 6000), 0) << "the paper's measure: one pod of each kind fits";
  EXPECT_DOUBLE_EQ(NodeFragmentation(w, access, idle, 6000, stranding), 2500);
  EXPECT_EQ(NodeFragmentation(w, access, idle, std::nullopt, stranding), 0) << "unknown CPU strands nothing";
  // A node some GPU kind cannot use is left to the paper's no-access term...
  const TargetWorkload typed = Workload({"1 cpu=2000m gpu=500m", "1 cpu=4000m gpu=1 models=T4"});
  EXPECT_DOUBLE_EQ(NodeFragmentation(typed, NodeGpuAccess(typed, Devices(4, "G2", 0)), idle, 6000, stranding),
                   0.5 * 4000);
  // ...unless the cluster is short of CPU: then what the free CPU cannot
  // serve is stranded there too (the first kind's 2.5 GPUs, as above).
  const TargetWorkload typed_short = typed.WithClusterCpu({.cpu = 2000, .gpu = 1000});
  ASSERT_TRUE(typed_short.cpu_short()) << "2 cores per GPU; the kinds ask 4 per GPU";
  EXPECT_DOUBLE_EQ(
      NodeFragmentation(typed_short, NodeGpuAccess(typed_short, Devices(4, "G2", 0)), idle, 6000, stranding),
      0.5 * (2500 + 4000));
}

TEST(CpuShortTest, CpuIsShortWhereTheClusterHasLessCpuPerGpuThanTheArrivalsAsk) {
  // The arrivals ask 8000 + 4000 + 12000 milli-CPU for 2000 milli-GPU: 12 cores
  // per GPU, the CPU-only kind's CPU included.
  const TargetWorkload w = Workload({"1 cpu=8000m gpu=1", "1 cpu=4000m gpu=1", "1 cpu=12000m"});
  EXPECT_EQ(w.demand_cpu_per_gpu().cpu, 24000);
  EXPECT_EQ(w.demand_cpu_per_gpu().gpu, 2000);
  struct Case {
    std::string name;
    TargetWorkload::CpuPerGpu cluster;
    bool short_of_cpu;
  };
  const std::vector<Case> cases = {
      {"a policy file's list knows no cluster", {}, false},
      {"11 cores per GPU is short", {.cpu = 88000, .gpu = 8000}, true},
      {"12 cores per GPU is just enough", {.cpu = 96000, .gpu = 8000}, false},
      {"16 cores per GPU is plenty", {.cpu = 128000, .gpu = 8000}, false},
      {"a cluster without GPUs says nothing", {.cpu = 64000, .gpu = 0}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload known = w.WithClusterCpu(c.cluster);
    EXPECT_EQ(known.cpu_short(), c.short_of_cpu);
    EXPECT_EQ(known.cluster_cpu_per_gpu().cpu, c.cluster.cpu);
    EXPECT_EQ(known.pods().size(), w.pods().size()) << "the kinds and weights are the mix's own";
  }
  EXPECT_FALSE(Workload({"3 cpu=8000m"}).WithClusterCpu({.cpu = 1, .gpu = 1000}).cpu_short())
      << "arrivals that ask no GPU cannot be short of CPU per GPU";
}

TEST(FragmentationTest, HostStrandingAppliesOnANodeSomeKindRefusesWhereNoModelIsScarce) {
  // 9 arrivals of any model to 1 that takes T4 only; 4 cores per GPU asked.
  const TargetWorkload typed = Workload({"9 cpu=2000m gpu=500m", "1 cpu=4000m gpu=1 models=T4"});
  const FragmentationOptions stranding{.host_stranding = true};
  const std::vector<int64_t> idle = {1000, 1000, 1000, 1000};
  const auto on_g2 = [&](const TargetWorkload& w) {
    return NodeFragmentation(w, NodeGpuAccess(w, Devices(4, "G2", 0)), idle, 6000, stranding);
  };
  // T4 a quarter of the GPUs: the T4 pods would take 73 % of them. A G2
  // node keeps the paper's measure (the T4 kind's no-access term alone).
  const TargetWorkload t4_scarce =
      typed.WithCluster({.cpu_per_gpu = {}, .gpu_models = {{"G2", 24}, {"T4", 8}}, .idle_nodes = {}, .free_milli = 0});
  ASSERT_THAT(t4_scarce.scarce_models(), ::testing::ElementsAre("T4"));
  EXPECT_DOUBLE_EQ(on_g2(t4_scarce), 0.1 * 4000);
  // T4 half of them: they would take 36 %. 6 cores serve 1.5 of the G2
  // node's 4 GPUs, so the kind of any model leaves 2.5 stranded.
  const TargetWorkload t4_plentiful =
      typed.WithCluster({.cpu_per_gpu = {}, .gpu_models = {{"G2", 8}, {"T4", 8}}, .idle_nodes = {}, .free_milli = 0});
  ASSERT_TRUE(t4_plentiful.models_plentiful());
  EXPECT_DOUBLE_EQ(on_g2(t4_plentiful), 0.9 * 2500 + 0.1 * 4000);
  EXPECT_DOUBLE_EQ(on_g2(typed), 0.1 * 4000) << "a policy file's list knows no cluster: as before";
}

TEST(ModelScarcityTest, AModelIsScarceWhereThePodsNamingItWouldTakeHalfOfIt) {
  using ModelGpus = TargetWorkload::ModelGpus;
  struct Case {
    std::string name;
    std::vector<std::string> workload;
    std::vector<ModelGpus> cluster;
    std::vector<std::string> scarce;
    bool plentiful;
  };
  // The any-model kinds ask 4500 milli-GPU per 1000 the T4 kind asks
  // (5500 in all): T4 is scarce from 4 in 11 GPUs down.
  const std::vector<std::string> one_in_ten = {"9 cpu=1 gpu=500m", "1 cpu=1 gpu=1 models=T4"};
  const std::vector<Case> cases = {
      {"a policy file's list knows no cluster", one_in_ten, {}, {}, false},
      {"T4 half the GPUs: its pods would take 36 % of them", one_in_ten, {{"G2", 8}, {"T4", 8}}, {}, true},
      {"T4 a quarter: 73 %", one_in_ten, {{"G2", 24}, {"T4", 8}}, {"T4"}, false},
      {"T4 4 in 11: exactly half is scarce", one_in_ten, {{"G2", 7}, {"T4", 4}}, {"T4"}, false},
      {"a kind of two models asks of each in proportion to its GPUs",
       {"28 cpu=1 gpu=500m", "2 cpu=1 gpu=1 models=T4|A10"}, {{"G2", 8}, {"T4", 4}, {"A10", 4}}, {}, true},
      {"the same asked of one of them only", {"28 cpu=1 gpu=500m", "2 cpu=1 gpu=1 models=T4"},
       {{"G2", 8}, {"T4", 4}, {"A10", 4}}, {"T4"}, false},
      {"a pattern matches the models it names", {"15 cpu=1 gpu=1", "1 cpu=1 gpu=1 models=NVIDIA-A100*"},
       {{"G2", 28}, {"NVIDIA-A100-SXM4-80GB", 4}}, {"NVIDIA-A100-SXM4-80GB"}, false},
      {"a kind whose models the cluster lacks takes nothing", {"1 cpu=1 gpu=1", "1 cpu=1 gpu=1 models=H100"},
       {{"G2", 8}}, {}, true},
      {"pods asking no GPU do not dilute what a model is asked", {"100 cpu=8", "1 cpu=1 gpu=1 models=T4", "3 cpu=1 gpu=1"},
       {{"G2", 8}, {"T4", 8}}, {"T4"}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload known =
        Workload(c.workload)
            .WithCluster({.cpu_per_gpu = {}, .gpu_models = c.cluster, .idle_nodes = {}, .free_milli = 0});
    EXPECT_EQ(known.scarce_models(), c.scarce);
    EXPECT_EQ(known.models_plentiful(), c.plentiful);
  }
}

TEST(ModelScarcityTest, ItIsJudgedByArrivalsWhateverTheKindWeightsAndKeptThroughABlend) {
  // Weighed per GPU asked, the T4 kind's weight grows 4x against the
  // half-GPU kind's; scarcity is still by what the arrivals ask.
  std::vector<WorkloadPod> pods = {*ParseWorkloadPod("9 cpu=1 gpu=500m"), *ParseWorkloadPod("1 cpu=1 gpu=1 models=T4")};
  const std::vector<TargetWorkload::ModelGpus> cluster = {{"G2", 8}, {"T4", 8}};
  absl::StatusOr<TargetWorkload> weighed = TargetWorkload::Create(pods, KindWeights::kPerGpuAsked);
  ASSERT_TRUE(weighed.ok());
  EXPECT_TRUE(std::move(*weighed).WithGpuModels(cluster).models_plentiful());
  // A learned mix blended with a list of T4 pods: the blend asks more of T4.
  const TargetWorkload learned =
      Workload({"9 cpu=1 gpu=500m", "1 cpu=1 gpu=1 models=T4"})
          .WithCluster({.cpu_per_gpu = {}, .gpu_models = cluster, .idle_nodes = {}, .free_milli = 0});
  const TargetWorkload blended = learned.BlendedWith(Workload({"1 cpu=1 gpu=1 models=T4"}), 50);
  EXPECT_EQ(blended.cluster_gpu_models(), cluster);
  EXPECT_THAT(blended.scarce_models(), ::testing::ElementsAre("T4"));
}

TEST(FragmentationTest, HostStrandingIsExactWhereFloatingPointWouldRound) {
  // 3 kinds at 3000 milli-CPU per GPU-milli-sum 3 · 1000: 1000 milli-CPU per
  // 1000 milli-GPU, so 1 milli-CPU serves exactly 1 milli-GPU. 1/3 and 2/3
  // have no exact binary fraction; the integer ratio makes no such step.
  const TargetWorkload w = Workload({"1 cpu=333m gpu=333m", "1 cpu=333m gpu=333m", "1 cpu=334m gpu=334m"});
  const FragmentationOptions stranding{.host_stranding = true};
  const NodeGpuAccess access(w, Devices(1, "G2", 0));
  EXPECT_EQ(NodeFragmentation(w, access, {1000}, 1000, stranding), 0) << "the CPU serves exactly what is free";
  EXPECT_EQ(NodeFragmentation(w, access, {1000}, 999, stranding), 1) << "one milli-CPU short strands one milli-GPU";
}

// F · W by its definition, kind by kind and GPU by GPU: Σ_m w_m · frag(node, m).
// `fit` (empty: `free`): what each GPU's free is judged by for fitting (GPU memory).
int64_t DefinitionOfFTimesWeight(const TargetWorkload& w, const NodeGpuAccess& access, const std::vector<int64_t>& free,
                                 std::optional<int64_t> cpu_free, bool host_stranding,
                                 const std::vector<int64_t>& fit = {}) {
  int64_t total = 0;
  for (int64_t f : free) total += f;
  int64_t sum = 0;
  for (size_t m = 0; m < w.pods().size(); ++m) {
    const WorkloadPod& pod = w.pods()[m];
    const bool cpu_fits = !cpu_free.has_value() || *cpu_free >= pod.cpu.value();
    int64_t fragment = total;  // cannot run here: all of it
    if (pod.gpus > 0 && access.any_usable(m) && cpu_fits) {
      int64_t fitting = 0, too_small = 0;
      for (size_t i = 0; i < free.size(); ++i) {
        if (access.usable(m, i) && (fit.empty() ? free[i] : fit[i]) >= pod.milli.value()) {
          ++fitting;
        } else {
          too_small += free[i];
        }
      }
      if (fitting >= pod.gpus) {
        fragment = too_small;
        const int64_t usable = total - too_small;
        const auto [cpu, gpu] = w.cpu_per_gpu();
        if (host_stranding && cpu_free.has_value() && (access.open() || w.cpu_short() || w.models_plentiful()) &&
            cpu > 0) {
          // Stranded: the whole milli-GPU of `usable` beyond cpu_free · gpu / cpu.
          const __int128 over = static_cast<__int128>(usable) * cpu - static_cast<__int128>(*cpu_free) * gpu;
          if (over > 0) fragment += static_cast<int64_t>(over / cpu);
        }
      }
    }
    sum += pod.weight * fragment;
  }
  return sum;
}

TEST(FragmentationTest, TheGroupedMeasureIsExactlyItsDefinition) {
  const TargetWorkload any_model = Workload({"1047 cpu=3152m gpu=810m", "874 cpu=11300m gpu=1", "470 cpu=3152m gpu=1",
                                             "388 cpu=11908m gpu=470m", "366 cpu=12500m", "232 cpu=4000m gpu=320m",
                                             "84 cpu=24200m gpu=2", "54 cpu=4000m gpu=160m", "31 cpu=4152m gpu=4x500m"});
  const TargetWorkload by_model = Workload({"5 cpu=4000m gpu=500m models=T4", "3 cpu=8000m gpu=1 models=A100",
                                            "2 cpu=2000m gpu=250m", "1 cpu=16000m"});
  // The same where the cluster has less CPU per GPU than the kinds ask: stranding on every node.
  const TargetWorkload by_model_cpu_short = by_model.WithClusterCpu({.cpu = 1000, .gpu = 1000});
  // The same kinds where no model is scarce: the T4 and A100 kinds ask
  // 2000 of the 19000 milli-GPU asked each, their models a quarter of the GPUs.
  const TargetWorkload by_model_plentiful =
      Workload({"4 cpu=4000m gpu=500m models=T4", "2 cpu=8000m gpu=1 models=A100", "60 cpu=2000m gpu=250m",
                "1 cpu=16000m"})
          .WithGpuModels({{"G2", 16}, {"T4", 8}, {"A100", 8}});
  std::vector<GpuDevice> mixed = Devices(8, "A100", 0);
  for (size_t i = 5; i < mixed.size(); ++i) mixed[i].model = "T4";
  struct Case {
    std::string name;
    const TargetWorkload* workload;
    std::vector<GpuDevice> gpus;
  };
  const std::vector<Case> cases = {
      {"a node every kind uses alike", &any_model, Devices(8, "G2", 0)},
      {"a node of one model some kinds refuse", &by_model, Devices(8, "T4", 0)},
      {"a node of two models", &by_model, mixed},
      {"a node of one model some kinds refuse, the cluster short of CPU", &by_model_cpu_short, Devices(8, "T4", 0)},
      {"a node of two models, the cluster short of CPU", &by_model_cpu_short, mixed},
      {"a node of one model some kinds refuse, no model scarce", &by_model_plentiful, Devices(8, "T4", 0)},
      {"a node of two models, no model scarce", &by_model_plentiful, mixed},
  };
  ASSERT_TRUE(by_model_plentiful.models_plentiful());
  std::mt19937_64 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeGpuAccess access(*c.workload, c.gpus);
    for (int round = 0; round < 1000; ++round) {
      // Idle, shared, full and empty GPUs; CPU short, plenty or unknown.
      std::vector<int64_t> free;
      for (size_t g = 0; g < c.gpus.size(); ++g) {
        free.push_back(rng() % 4 == 0 ? 1000 : static_cast<int64_t>(rng() % 101) * 10);
      }
      if (rng() % 10 == 0) free.assign(c.gpus.size(), 0);
      const std::optional<int64_t> cpu =
          rng() % 4 == 0 ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(rng() % 64'000));
      // GPU memory: a shared GPU judged by less than its free (fit ≤ free).
      std::vector<int64_t> fit;
      for (const int64_t f : free) fit.push_back(f == 1000 || f == 0 ? f : static_cast<int64_t>(rng() % (f + 1)));
      for (const bool stranding : {false, true}) {
        const FragmentationOptions options{.host_stranding = stranding};
        ASSERT_EQ(NodeFragmentationTimesWeight(*c.workload, access, free, cpu, options),
                  DefinitionOfFTimesWeight(*c.workload, access, free, cpu, stranding))
            << "round " << round << " stranding " << stranding;
        ASSERT_EQ(NodeFragmentationTimesWeight(*c.workload, access, free, cpu, options, fit),
                  DefinitionOfFTimesWeight(*c.workload, access, free, cpu, stranding, fit))
            << "round " << round << " stranding " << stranding << ", judged by GPU memory";
      }
    }
  }
}

TEST(FragmentationTest, TheDecreasesFgdChoosesFromAreTheMeasuresDifferences) {
  // One-GPU and multi-GPU groups (the linear path), kinds that name models
  // (measured), and host stranding (measured).
  const TargetWorkload any_model = Workload({"1047 cpu=3152m gpu=810m", "874 cpu=11300m gpu=1", "470 cpu=3152m gpu=1",
                                             "388 cpu=11908m gpu=470m", "366 cpu=12500m", "232 cpu=4000m gpu=320m",
                                             "84 cpu=24200m gpu=2", "54 cpu=4000m gpu=160m", "31 cpu=4152m gpu=4x500m"});
  const TargetWorkload by_model = Workload({"5 cpu=4000m gpu=500m models=T4", "3 cpu=8000m gpu=1 models=A100",
                                            "2 cpu=2000m gpu=250m", "1 cpu=16000m"});
  struct Case {
    std::string name;
    const TargetWorkload* workload;
    std::vector<GpuDevice> gpus;
    bool host_stranding;
  };
  const std::vector<Case> cases = {
      {"an 8-GPU node every kind uses alike", &any_model, Devices(8, "G2", 0), false},
      {"a 2-GPU node", &any_model, Devices(2, "G2", 0), false},
      {"a 20-GPU node", &any_model, Devices(20, "G2", 0), false},
      {"with host stranding", &any_model, Devices(8, "G2", 0), true},
      {"a workload that names models", &by_model, Devices(8, "T4", 0), false},
  };
  std::mt19937_64 rng(13);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const FragmentationOptions options{.host_stranding = c.host_stranding};
    const NodeGpuAccess access(*c.workload, c.gpus);
    for (int round = 0; round < 1000; ++round) {
      // Idle, shared, full and empty GPUs, and free beyond either end (the
      // measure clamps); CPU short, plenty or unknown, before and after.
      std::vector<int64_t> free;
      for (size_t g = 0; g < c.gpus.size(); ++g) {
        const uint64_t kind = rng() % 8;
        free.push_back(kind == 0 ? 1000 : kind == 1 ? 1200 : kind == 2 ? -50 : static_cast<int64_t>(rng() % 101) * 10);
      }
      if (rng() % 10 == 0) free.assign(c.gpus.size(), 0);
      const int64_t share = 1 + static_cast<int64_t>(rng() % 1000);
      const std::optional<int64_t> cpu =
          rng() % 4 == 0 ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(rng() % 64'000));
      const std::optional<int64_t> cpu_after =
          cpu.has_value() ? std::optional<int64_t>(*cpu - static_cast<int64_t>(rng() % 16'000)) : std::nullopt;
      std::vector<size_t> positions;
      for (size_t g = 0; g < c.gpus.size(); ++g) {
        if (rng() % 3 != 0) positions.push_back(g);
      }
      std::vector<int64_t> decreases(positions.size(), -1);
      FragmentationDecreases(*c.workload, access, free, cpu, cpu_after, share, positions, absl::MakeSpan(decreases),
                             options);
      const int64_t before = NodeFragmentationTimesWeight(*c.workload, access, free, cpu, options);
      for (size_t j = 0; j < positions.size(); ++j) {
        std::vector<int64_t> after = free;
        after[positions[j]] -= share;
        ASSERT_EQ(decreases[j], before - NodeFragmentationTimesWeight(*c.workload, access, after, cpu_after, options))
            << "round " << round << " GPU " << positions[j] << " share " << share;
      }
      // Judged by GPU memory: each GPU's fit free now, and the chosen one's after.
      std::vector<int64_t> fit_now, fit_after;
      for (const int64_t f : free) fit_now.push_back(f <= 0 ? 0 : static_cast<int64_t>(rng() % (f + 1)));
      for (const size_t i : positions) fit_after.push_back(std::max<int64_t>(0, fit_now[i] - share));
      FragmentationDecreases(*c.workload, access, free, cpu, cpu_after, share, positions, absl::MakeSpan(decreases),
                             options, fit_now, fit_after);
      const int64_t fit_before = NodeFragmentationTimesWeight(*c.workload, access, free, cpu, options, fit_now);
      for (size_t j = 0; j < positions.size(); ++j) {
        std::vector<int64_t> after = free;
        std::vector<int64_t> fit = fit_now;
        after[positions[j]] -= share;
        fit[positions[j]] = fit_after[j];
        ASSERT_EQ(decreases[j],
                  fit_before - NodeFragmentationTimesWeight(*c.workload, access, after, cpu_after, options, fit))
            << "round " << round << " GPU " << positions[j] << " share " << share << ", judged by GPU memory";
      }
    }
  }
}

TEST(FgdScoreTest, NoChangeScoresFiftyAndLessFragmentationMore) {
  EXPECT_EQ(FragmentationScore(300, 300), 50);
  EXPECT_EQ(FragmentationScore(300, 550), 43);  // trunc(100 · σ(−0.25))
  EXPECT_EQ(FragmentationScore(800, 0), 68);    // trunc(100 · σ(0.8))
}

class FgdPluginTest : public ::testing::Test {
 protected:
  FgdPluginTest() : plugin_(Workload({"1 cpu=1000m gpu=500m", "1 cpu=1000m gpu=1"})) {}

  // The nodes of these tests have a host of 8 cores, all free, and 1 TiB: Host(8000, 8000, 1 << 20).
  FgdPlugin plugin_;
};

TEST_F(FgdPluginTest, AShareGoesToTheGpuWhereFragmentationGrowsLeast) {
  // GPU 0 has 700 free, GPU 1 is idle. 500 on GPU 0 leaves 200 (too small
  // for both kinds) and keeps the idle GPU; on GPU 1 it would strand the
  // whole-GPU kind.
  const Node node = Node("n").Gpus(2, "G2", 0).Hold(0, 300).Host(8000, 8000, 1 << 20);
  const NodeView view = node.View();
  const PodGpuRequest pod = Pod().Fraction(500).Cpu(1000);
  std::optional<GpuChoice> choice = plugin_.ChooseGpus(CycleState(pod), view);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->gpu_indices[0], 0);
  // F before: 700 is enough for the half kind, not the whole one: 0.5 · 700.
  // F after: 200 is too small for both: 200.  Δ = 150 → trunc(100 · σ(0.15)) = 53.
  EXPECT_EQ(plugin_.ScoreNode(CycleState(pod), view, *choice), 53);
}

TEST_F(FgdPluginTest, WholeGpusAreTheLowestIdleOnesAndNoGpuPodsGetNone) {
  const Node node = Node("n").Gpus(3, "G2", 0).Hold(0, 300).Host(8000, 8000, 1 << 20);
  const NodeView view = node.View();
  EXPECT_EQ(plugin_.ChooseGpus(CycleState(Pod().Count(2)), view)->gpu_indices, (absl::InlinedVector<int32_t, 8>{1, 2}));
  const PodGpuRequest cpu_only = Pod().Count(0).Cpu(7500);
  // The profile gives it no GPUs (profile_test.cc); fgd still scores it.
  // Taking 7.5 of 8 cores leaves too little for either kind: all 2700 free becomes fragment.
  EXPECT_EQ(plugin_.ScoreNode(CycleState(cpu_only), view, GpuChoice{}), FragmentationScore(0.5 * 700, 2700));
}

TEST_F(FgdPluginTest, TheRankingBeginsWithTheChoiceAndOrdersSharesByScore) {
  // Random node states: RankGpus must begin with ChooseGpus (a GPU filter or
  // set plugin beside fgd then only ever departs from fgd's choice when it
  // must), list exactly the GPUs that fit, and put better scores first.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> held(0, 10);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    Node node = Node("n").Gpus(4, "G2", 0).Host(8000, 8000, 1 << 20);
    for (int32_t i = 0; i < 4; ++i) {
      if (const int h = held(rng); h > 0) node.Hold(i, h * 100);
    }
    const NodeView view = node.View();
    for (const PodGpuRequest& pod : {PodGpuRequest(Pod().Fraction(300)), PodGpuRequest(Pod().Fraction(500)),
                                     PodGpuRequest(Pod().Count(2))}) {
      const std::optional<GpuChoice> choice = plugin_.ChooseGpus(CycleState(pod), view);
      const RankedGpus ranked_gpus = testing::Ranked(plugin_, CycleState(pod), view);
      const RankedGpus* ranked = &ranked_gpus;
      if (!choice.has_value()) {
        EXPECT_LT(ranked->size(), static_cast<size_t>(pod.count));
        continue;
      }
      ASSERT_GE(ranked->size(), choice->gpu_indices.size());
      for (size_t k = 0; k < choice->gpu_indices.size(); ++k) EXPECT_EQ((*ranked)[k].index, choice->gpu_indices[k]);
      for (size_t k = 1; k < ranked->size(); ++k) {
        EXPECT_LE((*ranked)[k - 1].tier, (*ranked)[k].tier);
        if (pod.count != 1 || pod.whole_gpu) continue;
        GpuChoice a, b;
        a.gpu_indices.push_back((*ranked)[k - 1].index);
        b.gpu_indices.push_back((*ranked)[k].index);
        EXPECT_GE(plugin_.ScoreNode(CycleState(pod), view, a), plugin_.ScoreNode(CycleState(pod), view, b));
      }
    }
  }
}

TEST_F(FgdPluginTest, AShareCarriesItsScoreAndItIsTheScore) {
  // The profile takes the score a share's choice carries for fgd's Score:
  // on random nodes, with and without host resources and with two GPU
  // models, it must be exactly what Score says.
  const FgdPlugin typed(Workload({"3 cpu=1000m gpu=500m", "2 cpu=2000m gpu=1 models=T4", "1 cpu=4000m"}));
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    Node node = Node("n").Gpus(3, "G2", 0).Gpus(1, round % 3 == 0 ? "T4" : "G2", 0);
    for (int32_t i = 0; i < 4; ++i) {
      if (const int h = static_cast<int>(rng() % 11); h > 0) node.Hold(i, h * 100);
    }
    const NodeView bare = node.View();
    const NodeView with_host = node.Host(8000, 8000, 1 << 20).View();
    for (const FgdPlugin* plugin : {static_cast<const FgdPlugin*>(&plugin_), &typed}) {
      for (const NodeView& view : {bare, with_host}) {
        for (const int64_t milli : {200, 500, 900}) {
          const PodGpuRequest pod = Pod().Fraction(milli).Cpu(1000 * static_cast<int64_t>(rng() % 9));
          const std::optional<GpuChoice> choice = plugin->ChooseGpus(CycleState(pod), view);
          if (!choice.has_value()) continue;
          ASSERT_TRUE(choice->chooser_score.has_value());
          EXPECT_EQ(*choice->chooser_score, plugin->ScoreNode(CycleState(pod), view, *choice));
        }
        const std::optional<GpuChoice> whole = plugin->ChooseGpus(CycleState(Pod().Count(2)), view);
        if (whole.has_value()) {
          EXPECT_FALSE(whole->chooser_score.has_value()) << "whole GPUs are scored by Score";
        }
      }
    }
  }
}

TEST(GpuFitRankingTest, TheRankingBeginsWithTheChoiceForBothSelections) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> held(0, 10);
  for (const GpuSelection selection : {GpuSelection::kBest, GpuSelection::kRandom}) {
    const GpuFitPlugin plugin(selection);
    for (int round = 0; round < 100; ++round) {
      Node node = Node(absl::StrCat("n", round)).Gpus(4, "G2", 0);
      for (int32_t i = 0; i < 4; ++i) {
        if (const int h = held(rng); h > 0) node.Hold(i, h * 100);
      }
      PodGpuRequest pod = Pod().Fraction(400);
      pod.salt = static_cast<uint64_t>(round);
      const std::optional<GpuChoice> choice = plugin.ChooseGpus(CycleState(pod), node.View());
      const RankedGpus ranked_gpus = testing::Ranked(plugin, CycleState(pod), node.View());
      const RankedGpus* ranked = &ranked_gpus;
      if (!choice.has_value()) {
        EXPECT_TRUE(ranked->empty());
        continue;
      }
      ASSERT_FALSE(ranked->empty());
      EXPECT_EQ(ranked->front().index, choice->gpu_indices[0]);
    }
  }
}

TEST(HostStrandingPluginTest, ScoresTheChoiceUnderTheExtendedMeasure) {
  const TargetWorkload w = Workload({"1 cpu=2000m gpu=500m", "1 cpu=4000m gpu=1"});
  const HostStrandingPlugin plugin(w);
  const FgdPlugin fgd(w);
  const Node node = Node("n").Gpus(4, "G2", 0);
  HostResources host{.cpu_capacity = MilliCpu(6000), .cpu_used = MilliCpu(0),
                     .memory_capacity = MemoryMiB(1 << 20), .memory_used = MemoryMiB(0)};
  NodeView view = node.View();
  const PodGpuRequest pod = Pod().Cpu(4000);
  GpuChoice choice;
  choice.gpu_indices.push_back(0);
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), view, choice), 0) << "host unknown: nothing stranded, no order to add";
  view.host = &host;
  // fgd: F 0 → 1500 (the whole-GPU kind lacks CPU after): trunc(100 · σ(−1.5)) = 18.
  EXPECT_EQ(fgd.ScoreNode(CycleState(pod), view, choice), 18);
  // Stranding: F 2500 (6 cores serve 1.5 of 4 GPUs) → 2750: trunc(100 · σ(−0.25)) = 43.
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), view, choice), 43);
}

TEST(HostStrandingPluginTest, TakesTheSameWorkloadArgAsFgd) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("workload: [\"3 cpu=4 gpu=1\"]\nweight: 2\n");
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(HostStrandingPlugin::New(*args).status().message(), HasSubstr("args.weight: unknown field"));
}

TEST(FgdArgsTest, TheWorkloadIsRequiredAndEveryBadItemIsReported) {
  absl::StatusOr<PluginArgs> missing = PluginArgs::FromText("");
  ASSERT_TRUE(missing.ok());
  EXPECT_THAT(FgdPlugin::New(*missing).status().message(), HasSubstr("args.workload: required"));
  absl::StatusOr<PluginArgs> bad = PluginArgs::FromText("workload: [\"1 cpu=1\", \"x\", \"2 cpu=1 gpu=3x\"]\n");
  ASSERT_TRUE(bad.ok());
  const std::string message(FgdPlugin::New(*bad).status().message());
  EXPECT_THAT(message, HasSubstr("args.workload: item 1 \"x\": must start with a positive integer weight"));
  EXPECT_THAT(message, HasSubstr("args.workload: item 2 \"2 cpu=1 gpu=3x\": gpu=3x: must be"));
}

TEST(FgdArgsTest, TakesGpuSharesArgsForTheFit) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("workload: [\"1 cpu=1\"]\ngpuMemoryReserve: 256Mi\nmaxLimitPercent: 50\n");
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(FgdPlugin::New(*args).status().message(), HasSubstr("args.maxLimitPercent: must be an integer in 100..1000"));
  absl::StatusOr<PluginArgs> good = PluginArgs::FromText("workload: [\"1 cpu=1\"]\ngpuMemoryReserve: 256Mi\n");
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(FgdPlugin::New(*good).ok());
}

}  // namespace
}  // namespace tessera
