// GPU fragmentation of a node under a target workload, as the FGD paper
// (Weng et al., ATC '23, §4 and pkg/utils/frag.go) defines it, with one
// optional extension (host stranding, below).
//
// A node's free milli-GPU is "fragmented" for a kind of pod when that pod
// could not use it: all of it when the pod cannot run on the node at all
// (no accepted GPU model, too few GPUs with room, too little CPU), or, when
// it can run, the GPUs individually too small for it. A pod that asks for no
// GPU counts all free GPU as fragment: it can only ever strand it. The
// node's fragmentation is the expectation over the workload's pods:
//
//   F(node) = Σ_m p_m · frag(node, m)      (milli-GPU)
//
// and the cluster's is Σ over nodes. FGD places each pod where F grows least.
//
// Exact. With p_m = w_m / W (the items' integer weights), F is computed as
// the integer Σ_m w_m · frag(node, m) (milli-GPU × weight) divided by W once.
// Integer sums do not depend on their order, so the measure may add kinds in
// groups (all kinds of one share and GPU count at once), and the difference
// between two states of a node, which is what FGD scores, is exact.
//
// Host stranding. The paper asks only whether *one* pod of a kind fits. A
// node whose free CPU is short for its free GPUs strands some of them even
// when every kind still fits once: at the workload's ratio of CPU to GPU
// (Σ w·cpu : Σ w·GPUs over the kinds that ask for GPUs), its free CPU serves
// only so much GPU (milli-GPU, rounded down: exact integers too). With the extension, a kind that fits also counts the GPU
// on the GPUs it fits on beyond that as fragment. It applies on nodes every
// GPU kind of the workload can use (models permitting): where some cannot,
// which node to spend is a question of model scarcity, which the paper's
// no-access term answers, and a CPU-rich node of a scarce model must not look
// better for its CPU.
//
// Workload text (one item per kind of pod, in `workload:` args):
//   "<weight> cpu=<cpu> [gpu=<gpu>] [models=<A|B|...>]"
//   weight  positive integer, relative frequency (e.g. a pod count)
//   cpu     "3152m" (milli-CPU) or "12" (cores)
//   gpu     "810m" (a share of one GPU), "2" (two whole GPUs), "2x500m"; absent or "0": none
//   models  accepted GPU models, as gpu-share matches them; absent: any
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// One kind of pod in a target workload.
struct WorkloadPod {
  int64_t weight = 1;                ///< Relative frequency, ≥ 1.
  MilliCpu cpu{0};
  int32_t gpus = 0;                  ///< 0: the pod asks for no GPU.
  MilliGpu milli{0};                 ///< Per GPU, 1..1000; 0 when gpus is 0.
  std::vector<std::string> models;   ///< Accepted GPU models; empty = any.

  bool operator==(const WorkloadPod&) const = default;
};

/// Parses one workload item ("1078 cpu=3152m gpu=810m"); the error says what is wrong with it.
absl::StatusOr<WorkloadPod> ParseWorkloadPod(std::string_view text);
/// The item text ParseWorkloadPod reads back to `pod`.
std::string FormatWorkloadPod(const WorkloadPod& pod);

/// The kinds of pod a cluster expects, with their probabilities.
class TargetWorkload {
 public:
  /// Σ weight may be at most this: a node's F · W must fit in 64 bits for any
  /// node of up to 2^32 free milli-GPU. Only the weights' ratios matter.
  static constexpr int64_t kMaxTotalWeight = int64_t{1} << 30;

  /// \return InvalidArgument when `pods` is empty, a pod is malformed or the
  ///   weights add up to more than kMaxTotalWeight.
  static absl::StatusOr<TargetWorkload> Create(std::vector<WorkloadPod> pods);

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
  /// Whether some kind accepts only some GPU models.
  [[nodiscard]] bool has_models() const { return has_models_; }

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
  bool has_models_ = false;
  Measure measure_;
};

/// Which GPUs of one node each workload pod may use (its accepted models):
/// fixed for a node, so computed once and shared by every state of it.
class NodeGpuAccess {
 public:
  NodeGpuAccess(const TargetWorkload& workload, absl::Span<const GpuDevice> gpus);
  [[nodiscard]] bool usable(size_t pod, size_t gpu) const {
    return uniform_ ? any_usable(pod) : usable_[pod * gpus_ + gpu] != 0;
  }
  /// Whether workload pod `pod` may use some GPU of the node.
  [[nodiscard]] bool any_usable(size_t pod) const { return any_.empty() ? gpus_ > 0 : any_[pod] != 0; }
  /// Whether every workload pod may use all of the node's GPUs or none (as
  /// on a node of one model): then only the free amounts matter, not which GPU has them.
  [[nodiscard]] bool uniform() const { return uniform_; }
  /// Whether every workload pod that asks for GPUs may use some GPU here.
  [[nodiscard]] bool open() const { return open_; }

 private:
  size_t gpus_;
  bool uniform_ = true;
  bool open_ = true;
  absl::InlinedVector<uint8_t, 64> any_;    // empty when no kind names models: any GPU will do
  absl::InlinedVector<uint8_t, 8> usable_;  // [pod][gpu], only when not uniform
};

/// What the measure takes into account beyond the paper's.
struct FragmentationOptions {
  /// Host stranding (see the top of this file).
  bool host_stranding = false;
};

/// F(node) · W, exactly (milli-GPU × weight): Σ_m w_m · frag(node, m).
/// `free_milli[i]` is GPU i's free milli (the GPUs of `access`, in order;
/// 0..1000, as FreeMilli gives it: beyond that, the nearest end counts);
/// `cpu_free` nullopt means the node's CPU is unknown and never short (and
/// nothing is stranded).
int64_t NodeFragmentationTimesWeight(const TargetWorkload& workload, const NodeGpuAccess& access,
                                     absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                                     const FragmentationOptions& options = {});

/// For FGD's choice of a GPU for a share of one: F·W of the node now minus
/// F·W once the pod has `share` milli-GPU of GPU `positions[j]` (and the
/// node's free CPU is `cpu_after`), into `decreases[j]`. Exactly what two
/// NodeFragmentationTimesWeight calls per position give, computed from one
/// pass over the GPUs where the node changes only at one GPU: without host
/// stranding and kinds that name models, F·W is linear in each GPU's free
/// (room_weight), so moving one GPU changes one term. Otherwise it measures.
void FragmentationDecreases(const TargetWorkload& workload, const NodeGpuAccess& access,
                            absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_now,
                            std::optional<int64_t> cpu_after, int64_t share, absl::Span<const size_t> positions,
                            absl::Span<int64_t> decreases, const FragmentationOptions& options = {});

/// F(node): the expected free milli-GPU of the node a pod drawn from
/// `workload` could not use; NodeFragmentationTimesWeight / W.
double NodeFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                         absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                         const FragmentationOptions& options = {});

}  // namespace tessera
