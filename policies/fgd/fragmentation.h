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
// GPU kind of the workload can use (models permitting). Where some cannot,
// which node to spend may be a question of model scarcity, which the paper's
// no-access term answers, and a CPU-rich node of a scarce model must not look
// better for its CPU. So there it applies only where the workload knows
// that CPU is what the cluster runs out of (TargetWorkload::cpu_short: less
// CPU per GPU than the arrivals ask) or that no model is scarce
// (TargetWorkload::models_plentiful: the arrivals naming models would take
// less than half of every model's GPUs), both set when a learned mix is
// published. (Measured on the Alibaba traces whose pods name models: on
// every node always, gpuspec25 fell 1.6 below its current figure; never
// there, node CPU × 0.75 lost up to 5; off on every node some kind cannot
// use, gpuspec05 and gpuspec10 lost 0.7–0.8 against on, runs of CPU
// stranding whole idle GPUs on some seeds.)
//
// GPU memory. The paper asks whether a kind's share fits a GPU's free
// milli-GPU; a GPU whose memory is spent cannot take another share however
// much compute it has left. With the extension (FragmentationOptions::
// gpu_memory, when the workload's sharing kinds ask memory) a GPU some pod
// shares is judged for fitting by the milli-GPU its free memory is worth at
// the workload's memory-per-milli ratio (TargetWorkload::memory_per_milli),
// if that is less than its free milli-GPU; what counts as fragment is still
// its free milli-GPU. An idle GPU fits every kind as before: a whole-GPU pod
// asks none of its memory, and a share asks what any card has (an
// approximation for shares larger than a small card's memory allows).
// Callers pass that "fit" free beside the free (fgd.cc, FitMilli).
//
// The workload: scheduler/model/target_workload.h.
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
#include "scheduler/model/target_workload.h"

namespace tessera {

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
  /// GPU memory (see the top of this file): fgd.cc then passes each GPU's
  /// fit free beside its free.
  bool gpu_memory = false;
};

/// F(node) · W, exactly (milli-GPU × weight): Σ_m w_m · frag(node, m).
/// `free_milli[i]` is GPU i's free milli (the GPUs of `access`, in order;
/// 0..1000, as FreeMilli gives it: beyond that, the nearest end counts);
/// `cpu_free` nullopt means the node's CPU is unknown and never short (and
/// nothing is stranded). `fit_milli`, when given (one per GPU), is what each
/// GPU's free is judged by for fitting a share (GPU memory, at the top of
/// this file; at most its free); empty: the free itself.
int64_t NodeFragmentationTimesWeight(const TargetWorkload& workload, const NodeGpuAccess& access,
                                     absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                                     const FragmentationOptions& options = {},
                                     absl::Span<const int64_t> fit_milli = {});

/// For FGD's choice of a GPU for a share of one: F·W of the node now minus
/// F·W once the pod has `share` milli-GPU of GPU `positions[j]` (and the
/// node's free CPU is `cpu_after`), into `decreases[j]`. Exactly what two
/// NodeFragmentationTimesWeight calls per position give, computed from one
/// pass over the GPUs where the node changes only at one GPU: without host
/// stranding and kinds that name models, F·W is linear in each GPU's free
/// (room_weight), so moving one GPU changes one term; judged by GPU memory
/// too (`fit_now` per GPU, `fit_after[j]` GPU positions[j]'s once it has
/// the share). Otherwise it measures.
void FragmentationDecreases(const TargetWorkload& workload, const NodeGpuAccess& access,
                            absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_now,
                            std::optional<int64_t> cpu_after, int64_t share, absl::Span<const size_t> positions,
                            absl::Span<int64_t> decreases, const FragmentationOptions& options = {},
                            absl::Span<const int64_t> fit_now = {}, absl::Span<const int64_t> fit_after = {});

/// F(node): the expected free milli-GPU of the node a pod drawn from
/// `workload` could not use; NodeFragmentationTimesWeight / W.
double NodeFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                         absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                         const FragmentationOptions& options = {});

}  // namespace tessera
