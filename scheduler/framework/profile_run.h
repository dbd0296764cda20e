// What Profile::Run, the one loop that runs a profile over a request's
// nodes, takes and gives: the per-node answers a caller may keep between
// requests, the cache it consults for them, and the weighted sums it ends
// with. Prioritize (Profile::Score), its memo (scheduler/memo/score_memo.h)
// and the simulator (sim/node_choice.h) all run a profile through it; they
// differ only in which cache they hand it and what they do with the sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

/// What the memoizable part of a profile says of one node for one request:
/// a function of the request and the node's state (NodeView::version), so
/// a cache may keep it while the version stays.
struct NodeAnswer {
  /// Whether the pod fits (when the run filters, the filters passed too);
  /// `raw` and `choice` hold only then. (First, beside `raw`: the run's
  /// pass over every node's answer reads these two only.)
  bool fits = false;
  /// Only when the run filters: the GPU set filter rejected `choice`. (Kept
  /// apart from `fits`: when GPUs are ruled out the set changes, and the
  /// new one is judged anew.)
  bool set_rejected = false;
  /// Per score plugin, in profile order: its raw score of `choice` when it
  /// is memoizable (the others are asked anew every run, 0 here).
  absl::InlinedVector<int64_t, 3> raw;
  /// The GPUs the chooser (and the GPU set chooser) pick before any GPU is
  /// ruled out.
  GpuChoice choice;
};

/// A per-node cache of NodeAnswers the run consults: for one request (the
/// cache keys on what it knows the request by), each node's answer at the
/// node's state. Profile::Run asks Find once, computes what was not found,
/// uses every answer, then hands the computed ones to Keep.
class NodeAnswerCache {
 public:
  virtual ~NodeAnswerCache() = default;
  /// Sets every `found[i]`: to the answer kept for `nodes[i]` at its state,
  /// or null where there is none, whose position it appends to `missing`
  /// (in order). The answers must stay valid and unchanged until Keep.
  virtual void Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
                    std::vector<size_t>& missing) = 0;
  /// `computed[k]` is the answer for `nodes[computed_at[k]]`, a node Find had
  /// no answer for; the cache keeps what it likes, and may move from `computed`.
  virtual void Keep(absl::Span<const NodeView* const> nodes, absl::Span<const size_t> computed_at,
                    std::vector<NodeAnswer>& computed) = 0;
};

/// Runs `body(begin, end)` over [0, n) in chunks, on several threads, and
/// returns once all are done (WorkerPool::ParallelFor with its grain).
using ParallelFor = absl::FunctionRef<void(size_t n, absl::FunctionRef<void(size_t begin, size_t end)> body)>;

/// Working space a caller that runs often keeps between runs (the memo
/// under its lock, the simulator per replay), so that a run allocates
/// nothing per node once it is warm. Not shared by two runs at once.
struct RunScratch {
  std::vector<const NodeAnswer*> found;  // per node: found or computed
  std::vector<size_t> unknown;           // the nodes to compute
  std::vector<NodeAnswer> computed;      // their answers
  std::vector<std::vector<int64_t>> raw;  // per score plugin, per fitting node
};

/// How one run goes.
struct RunOptions {
  /// Consulted for the nodes' answers when the profile's answers may be kept
  /// (Profile::memoizable(); with `filter`, its node filters' too). Null: none.
  NodeAnswerCache* cache = nullptr;
  /// Filter every node first, as Profile::Filter would, for a caller that
  /// has not (the simulator); a node filtered out does not fit. Prioritize
  /// does not: kube-scheduler filtered the nodes it sends.
  bool filter = false;
  /// Computes the nodes to compute on several threads when there are at
  /// least `min_parallel` of them. Null: on the caller.
  const ParallelFor* parallel_for = nullptr;
  size_t min_parallel = 0;
  /// Kept between runs by the caller; null: the run's own.
  RunScratch* scratch = nullptr;
};

/// What a run ends with: the weighted sums of the nodes where the pod fits.
struct RunResult {
  /// The nodes where the pod fits, by position in the run's nodes, in order.
  std::vector<size_t> fitting;
  /// Per fitting node: Σ over score plugins of weight × normalised score, at
  /// plugin resolution (0..kMaxPluginScore × the weights' sum).
  std::vector<int64_t> totals;
  /// Nodes whose answer was computed rather than found in the cache.
  size_t computed = 0;
  /// Whether they were computed on several threads.
  bool parallel = false;
};

}  // namespace tessera
