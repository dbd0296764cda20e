// The kinds of pod a cluster expects and how often: what FGD-style plugins
// measure fragmentation against (policies/fgd/fragmentation.h), written in a
// policy file's `workload:` args or learned from arrivals
// (scheduler/cache/workload_learner.h).
//
// Workload text (one item per kind of pod, in `workload:` args):
//   "<weight> cpu=<cpu> [gpu=<gpu>] [models=<A|B|...>]"
//   weight  positive integer, relative frequency (e.g. a pod count)
//   cpu     "3152m" (milli-CPU) or "12" (cores)
//   gpu     "810m" (a share of one GPU), "2" (two whole GPUs), "2x500m"; absent or "0": none
//   models  accepted GPU models, as gpu-share matches them; absent: any
//   gpumem  GPU memory per GPU the pod reserves ("12Gi", "12288Mi"); absent: none asked
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// One kind of pod in a target workload.
struct WorkloadPod {
  int64_t weight = 1;                ///< Relative frequency, ≥ 1.
  MilliCpu cpu{0};
  int32_t gpus = 0;                  ///< 0: the pod asks for no GPU.
  MilliGpu milli{0};                 ///< Per GPU, 1..1000; 0 when gpus is 0.
  std::vector<std::string> models;   ///< Accepted GPU models; empty = any.
  MemoryMiB gpu_memory{0};           ///< GPU memory reserved per GPU; 0: none asked.

  bool operator==(const WorkloadPod&) const = default;
};

/// Parses one workload item ("1078 cpu=3152m gpu=810m"); the error says what is wrong with it.
absl::StatusOr<WorkloadPod> ParseWorkloadPod(std::string_view text);
/// The item text ParseWorkloadPod reads back to `pod`.
std::string FormatWorkloadPod(const WorkloadPod& pod);

/// How a workload's kinds are weighed in the fragmentation measure.
enum class KindWeights {
  /// By arrivals: a kind's weight is how often it comes (the FGD paper's).
  kPerPod,
  /// By arrivals per GPU asked: a kind's weight is its arrivals ÷ the
  /// GPUs it asks (GPUs × share; a CPU-only kind counts as ten GPUs:
  /// target_workload.cc says why). Against the paper it weighs small shares
  /// up and multi-GPU kinds down, so that a GPU left with room only for
  /// small shares counts as less fragmented. Chosen by measurement, not
  /// derived: better than the paper's on every Alibaba trace and its stress
  /// variants (docs/experiments/2026-11-26-kind-weights-and-gpu-memory.md).
  kPerGpuAsked,
};

/// The kinds of pod a cluster expects, with their probabilities.
class TargetWorkload {
 public:
  /// Σ weight may be at most this: a node's F · W must fit in 64 bits for any
  /// node of up to 2^32 free milli-GPU. Only the weights' ratios matter.
  static constexpr int64_t kMaxTotalWeight = int64_t{1} << 30;

  /// \return InvalidArgument when `pods` is empty, a pod is malformed or the
  ///   weights add up to more than kMaxTotalWeight.
  static absl::StatusOr<TargetWorkload> Create(std::vector<WorkloadPod> pods);
  /// The workload with its kinds weighed by `weights` (from arrivals, as
  /// Create takes them). kPerGpuAsked scales the weights down as a whole
  /// when they would pass kMaxTotalWeight, and keeps every weight ≥ 1.
  /// `cpu_only_asks` is what a kind asking no GPU counts as asking under
  /// kPerGpuAsked (fgd's `cpuOnlyAsksGpus`; see the .cc for why 10 GPUs).
  static absl::StatusOr<TargetWorkload> Create(std::vector<WorkloadPod> pods, KindWeights weights,
                                               MilliGpu cpu_only_asks = MilliGpu(10 * kOneGpu.value()));

  [[nodiscard]] const std::vector<WorkloadPod>& pods() const { return pods_; }
  /// W = Σ weight.
  [[nodiscard]] int64_t total_weight() const { return total_weight_; }
  /// The CPU the kinds that ask for GPUs ask per GPU they ask, weighted by
  /// how common they are: the exact ratio `cpu : gpu` of Σ w·cpu (milli-CPU)
  /// to Σ w·GPUs·share (milli-GPU), kept as two integers so that host
  /// stranding compares by cross-multiplying and never rounds. Both 0 when
  /// no kind asks for a GPU.
  struct CpuPerGpu {
    int64_t cpu = 0;  ///< Σ weight · milli-CPU
    int64_t gpu = 0;  ///< Σ weight · GPUs · milli-GPU
  };
  [[nodiscard]] CpuPerGpu cpu_per_gpu() const { return cpu_per_gpu_; }
  /// The GPU memory the kinds sharing a GPU ask per milli-GPU they ask,
  /// weighted by how common they are, over the kinds that ask memory: the
  /// exact ratio Σ w·memory (MiB) : Σ w·share (milli-GPU). Both 0 when no
  /// kind shares a GPU and asks memory. What a GPU's free memory is worth
  /// in milli-GPU to the expected shares (fragmentation.h, "GPU memory").
  struct MemoryPerMilli {
    int64_t memory = 0;  ///< Σ weight · MiB
    int64_t milli = 0;   ///< Σ weight · milli-GPU
  };
  [[nodiscard]] MemoryPerMilli memory_per_milli() const { return memory_per_milli_; }
  /// What the arrivals ask of CPU per GPU, CPU-only kinds' CPU included:
  /// Σ w·cpu over every kind : Σ w·GPUs·share, by arrivals (the weights
  /// given to Create, before any KindWeights). Zero GPU when no kind asks one.
  [[nodiscard]] CpuPerGpu demand_cpu_per_gpu() const { return demand_cpu_per_gpu_; }
  /// The cluster's CPU per GPU (Σ allocatable milli-CPU : Σ GPUs × 1000), as
  /// whoever published this mix saw the cluster; zeros when not known (a
  /// policy file's list).
  [[nodiscard]] CpuPerGpu cluster_cpu_per_gpu() const { return cluster_cpu_per_gpu_; }
  /// This mix (arrivals) with `prior` mixed in at `prior_percent` of the
  /// whole (0..100): each side's weights scaled to its part, a kind on both
  /// sides summed. Keeps this mix's cluster CPU per GPU (its prior_percent
  /// is 0: it is blended). The prior is what the policy file expects; a
  /// floor of it keeps kinds the recent arrivals lack in the measure.
  [[nodiscard]] TargetWorkload BlendedWith(const TargetWorkload& prior, int64_t prior_percent) const;
  /// For a learned mix: how much of a plugin's own list to blend in
  /// (WorkloadLearning::prior_percent); 0 for a policy file's list.
  [[nodiscard]] int64_t prior_percent() const { return prior_percent_; }
  [[nodiscard]] TargetWorkload WithPriorPercent(int64_t percent) &&;
  /// A copy that knows the cluster's CPU per GPU.
  /// (The rvalue form moves: the measure's tables are tens of KB.)
  [[nodiscard]] TargetWorkload WithClusterCpu(CpuPerGpu cluster) const&;
  [[nodiscard]] TargetWorkload WithClusterCpu(CpuPerGpu cluster) &&;
  /// Whether CPU binds: the cluster has less CPU per GPU than the arrivals
  /// ask (both known). Host stranding then applies on every node
  /// (fragmentation.h).
  [[nodiscard]] bool cpu_short() const;

  /// The GPUs of one model in the cluster.
  struct ModelGpus {
    std::string model;
    int64_t gpus = 0;
    bool operator==(const ModelGpus&) const = default;
  };
  /// A copy that knows the cluster's GPUs by model (each model once; what
  /// ClusterSupplySum counts), and so which models are scarce.
  [[nodiscard]] TargetWorkload WithGpuModels(std::vector<ModelGpus> models) &&;
  /// The cluster's GPUs by model as whoever published this mix saw them;
  /// empty when not known (a policy file's list).
  [[nodiscard]] const std::vector<ModelGpus>& cluster_gpu_models() const { return cluster_gpu_models_; }
  /// The cluster's models that the arrivals naming models would take half
  /// or more of by the time the cluster is full: a model m is scarce when
  /// (what they ask of m ÷ all the arrivals ask) ≥ ½ · (m's GPUs ÷ all
  /// GPUs), a kind that accepts several models asking of each in proportion
  /// to its GPUs (exact integers). Empty when the models are not known.
  [[nodiscard]] const std::vector<std::string>& scarce_models() const { return scarce_models_; }
  /// Idle nodes alike for a kind that takes a whole node: every GPU wholly
  /// free, the same GPU count, free milli-CPU and model (the first GPU's).
  struct IdleNodes {
    int64_t gpus = 0;
    int64_t cpu_free = 0;
    std::string model;
    int64_t nodes = 0;
    bool operator==(const IdleNodes&) const = default;
  };
  /// How many times its expected need a kind that takes whole nodes must
  /// have in idle nodes it fits before breaking one costs it nothing
  /// (idle_node_reserve). Measured (docs/experiments/2026-11-27-cpu-0.9-and-0.6.md): 2 held
  /// too few at node CPU × 0.9, 8 cost the × 0.75 and × 0.6 columns.
  static constexpr int64_t kIdleReserveFactor = 4;
  /// A copy that knows the cluster's idle nodes (each alike group once;
  /// what ClusterSupplySum counts) and the free milli-GPU of all its GPUs,
  /// and so which kinds that take whole nodes are short of idle nodes.
  [[nodiscard]] TargetWorkload WithIdleNodes(std::vector<IdleNodes> idle, int64_t free_milli) &&;
  [[nodiscard]] const std::vector<IdleNodes>& cluster_idle_nodes() const { return cluster_idle_nodes_; }
  [[nodiscard]] int64_t cluster_free_milli() const { return cluster_free_milli_; }
  /// A kind that takes all of a node's GPUs (whole GPUs, two or more), and
  /// whether the idle nodes it fits are short: its arrivals until the
  /// cluster's free GPU is taken, (d ÷ D) · free (d its ask, D every
  /// kind's, by arrivals), ask at least 1 ÷ kIdleReserveFactor of the GPUs
  /// of the idle nodes of its GPU count, free CPU and models.
  struct WholeNodeKind {
    int64_t gpus = 0;
    int64_t cpu = 0;
    std::vector<std::string> models;
    int64_t milli = 0;      ///< what it asks, Σ arrivals · GPUs · 1000
    bool reserved = false;  ///< short of idle nodes (WithIdleNodes)
    bool operator==(const WholeNodeKind&) const = default;
  };
  [[nodiscard]] const std::vector<WholeNodeKind>& whole_node_kinds() const { return whole_node_kinds_; }
  /// What breaking an idle node of `gpus` GPUs of `model` with `cpu_free`
  /// milli-CPU free costs the kinds that take whole nodes, in milli-GPU: all
  /// its GPUs (the pod it would have placed) where a reserved kind fits it;
  /// else 0, as when the idle nodes are not known (a policy file's list).
  [[nodiscard]] int64_t idle_node_reserve(int64_t gpus, int64_t cpu_free, std::string_view model) const;
  /// How many reserved kinds of `gpus` GPUs asking more than
  /// `asking_more_than` milli-CPU fit an idle node of `model` with
  /// `cpu_free` free: those a pod taking the node whole, asking that much,
  /// keeps out (the kinds asking no more fit wherever it does).
  [[nodiscard]] int64_t reserved_kinds_fitting(int64_t gpus, int64_t cpu_free, std::string_view model,
                                               int64_t asking_more_than) const;
  /// What a learned mix is told of the cluster when it is published.
  struct ClusterSupply {
    CpuPerGpu cpu_per_gpu;                ///< WithClusterCpu
    std::vector<ModelGpus> gpu_models;    ///< WithGpuModels
    std::vector<IdleNodes> idle_nodes;    ///< WithIdleNodes
    int64_t free_milli = 0;               ///< WithIdleNodes
  };
  [[nodiscard]] TargetWorkload WithCluster(ClusterSupply cluster) && {
    return std::move(*this)
        .WithClusterCpu(cluster.cpu_per_gpu)
        .WithGpuModels(std::move(cluster.gpu_models))
        .WithIdleNodes(std::move(cluster.idle_nodes), cluster.free_milli);
  }
  [[nodiscard]] TargetWorkload WithCluster(ClusterSupply cluster) const& {
    return TargetWorkload(*this).WithCluster(std::move(cluster));
  }
  /// What this mix was told of the cluster (all zeros and empty for a
  /// policy file's list): a mix derived from it (blended, weighed) is told
  /// the same, as WithCluster(cluster_supply()).
  [[nodiscard]] ClusterSupply cluster_supply() const {
    return {.cpu_per_gpu = cluster_cpu_per_gpu_, .gpu_models = cluster_gpu_models_,
            .idle_nodes = cluster_idle_nodes_, .free_milli = cluster_free_milli_};
  }
  /// Whether the cluster's GPU models are known and none is scarce: then a
  /// node some kind cannot use has nothing to protect, and host stranding
  /// applies on every node (fragmentation.h).
  [[nodiscard]] bool models_plentiful() const { return !cluster_gpu_models_.empty() && scarce_models_.empty(); }
  /// Whether some kind accepts only some GPU models.
  [[nodiscard]] bool has_models() const { return has_models_; }
  /// All the measure concludes from the cluster it was told: whether CPU
  /// binds, whether no model is scarce, and which kinds that take whole
  /// nodes are short of idle ones (whole_node_kinds() order). A mix told
  /// the cluster anew measures every node as before when its verdict is the
  /// same (the mix in force is re-told only when it is not:
  /// Profile::WithRetoldWorkload).
  struct ClusterVerdict {
    bool cpu_short = false;
    bool models_plentiful = false;
    std::vector<bool> reserved;
    bool operator==(const ClusterVerdict&) const = default;
  };
  [[nodiscard]] ClusterVerdict cluster_verdict() const;

  /// The workload arranged for the measure (NodeFragmentationTimesWeight).
  struct Measure {
    /// The distinct per-GPU shares of the kinds that ask for GPUs, ascending.
    std::vector<int64_t> shares;
    /// [free milli-GPU 0..1000]: how many of `shares` a GPU with that much free has room for.
    std::vector<uint16_t> shares_within;
    /// Σ weight of the kinds that ask for no GPU: all free GPU is their fragment.
    int64_t cpu_only_weight = 0;
    /// Σ weight of the kinds that name no models (cpu_only_weight and the groups').
    int64_t any_model_weight = 0;
    /// The kinds that ask for GPUs of any model, by share and GPU count (in
    /// that order): on a node they all fit or all miss GPUs, and differ only in CPU.
    struct Group {
      size_t share = 0;   ///< position in `shares`
      int64_t gpus = 0;
      int64_t weight = 0;  ///< Σ weight of its kinds
    };
    std::vector<Group> groups;
    /// The distinct CPU requests of the groups' kinds, ascending.
    std::vector<int64_t> cpu_levels;
    /// [group · (cpu_levels.size() + 1) + r]: Σ weight of the group's kinds
    /// asking at most cpu_levels[r − 1] (r = 0: none of them; r =
    /// cpu_levels.size(): all).
    std::vector<int64_t> weight_within_cpu;
    /// The kinds that ask for GPUs of some models only (pods() positions);
    /// measured kind by kind, GPU by GPU.
    std::vector<size_t> model_kinds;
    /// [rank · 1001 + f]: Σ weight_within_cpu at `rank` of the one-GPU
    /// groups whose share is at most f milli-GPU. A GPU with f free is usable
    /// by exactly those, so Σ over GPUs of f · room_weight[rank][f] is what
    /// the one-GPU groups can use (FragmentationDecreases). Weights add up
    /// to at most 2^30: int32 suffices. 4 KB per CPU rank (the default
    /// workload: 19 ranks, 76 KB).
    std::vector<int32_t> room_weight;
    /// The groups asking for more than one GPU (positions in `groups`).
    std::vector<size_t> multi_gpu_groups;
    /// Per pods() position: its share's position in `shares` (0 when it asks for no GPU).
    std::vector<size_t> share_of;
  };
  [[nodiscard]] const Measure& measure() const { return measure_; }

 private:
  TargetWorkload() = default;
  std::vector<WorkloadPod> pods_;
  int64_t total_weight_ = 0;
  CpuPerGpu cpu_per_gpu_;
  CpuPerGpu demand_cpu_per_gpu_;
  CpuPerGpu cluster_cpu_per_gpu_;
  int64_t prior_percent_ = 0;
  MemoryPerMilli memory_per_milli_;
  bool has_models_ = false;
  /// What the arrivals naming models ask (Σ weight · GPUs · share, by
  /// arrivals as Create took them), by accepted models.
  struct ModelDemand {
    std::vector<std::string> models;
    int64_t milli = 0;
  };
  /// The kinds naming models by their list (kinds with the same list
  /// summed), by the weights as given.
  static std::vector<ModelDemand> ModelDemandOf(const std::vector<WorkloadPod>& pods);
  std::vector<ModelDemand> model_demand_;
  std::vector<ModelGpus> cluster_gpu_models_;
  std::vector<std::string> scarce_models_;
  /// The kinds that take whole nodes, by arrivals as Create took them.
  static std::vector<WholeNodeKind> WholeNodeKindsOf(const std::vector<WorkloadPod>& pods);
  std::vector<WholeNodeKind> whole_node_kinds_;
  std::vector<IdleNodes> cluster_idle_nodes_;
  int64_t cluster_free_milli_ = 0;
  Measure measure_;
};

}  // namespace tessera
