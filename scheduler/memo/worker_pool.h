// A small fixed pool of threads for data-parallel loops inside one request.
//
// kube-scheduler sends the extender one filter or prioritize at a time, so
// while a request runs the process's other CPUs are idle. A WorkerPool lets
// that request spread a loop over them (ScoreMemo: the nodes it has not seen
// at their version). It is not a task queue: one loop at a time, the caller
// working on it too, and nothing outlives the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

/// CPUs a cgroup v2 `cpu.max` text allows: "200000 100000" (quota, period
/// in µs) is 2, a partial CPU counts as one more ("150000 100000" is 2,
/// "50000 100000" is 1). nullopt for "max ..." (no limit) and for anything
/// that is not two positive integers (the caller then ignores the file).
[[nodiscard]] std::optional<int> CpusFromCgroupMax(std::string_view text);

class WorkerPool {
 public:
  /// The most helpers DefaultThreads() proposes: beyond that, the per-node
  /// work of one request is too small to pay for more wake-ups.
  static constexpr int kMaxDefaultThreads = 7;

  /// Starts `threads` helper threads besides the caller (0, or less: none,
  /// every loop runs on the caller).
  explicit WorkerPool(int threads);
  /// Stops and joins the helpers; no ParallelFor may be running.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Helper threads besides the caller.
  [[nodiscard]] int threads() const { return static_cast<int>(helpers_.size()); }

  /// Runs `body(begin, end)` over [0, n) in chunks of `grain` indices (the
  /// last one shorter), handed out one at a time from a shared cursor to the
  /// helpers and to the calling thread, which works too; returns once every
  /// chunk is done, and what the chunks wrote is then visible to the caller.
  /// A loop of at most one chunk, or a pool without helpers, runs on the
  /// caller alone with no wake-up.
  ///
  /// Several callers may share one pool: the first has the helpers, and a
  /// caller that finds them busy runs its whole loop itself rather than
  /// wait. Waiting would put one request's latency behind another's for at
  /// best the same speed, as the helpers would be shared anyway.
  ///
  /// `body` must not throw (the plugins it runs do not): an exception ends
  /// the process rather than leave helpers on a finished loop's stack.
  void ParallelFor(size_t n, size_t grain, absl::FunctionRef<void(size_t begin, size_t end)> body);

  /// Helpers to start for the CPUs this process may really use, one being
  /// the caller's: the CPUs of its affinity mask, fewer where its cgroup v2
  /// `cpu.max` quota (a Kubernetes CPU limit) allows fewer, minus one;
  /// at most kMaxDefaultThreads, never negative. Not hardware_concurrency(),
  /// which counts the machine's CPUs and would oversubscribe a container.
  [[nodiscard]] static int DefaultThreads();

 private:
  // One ParallelFor's loop, on its caller's stack.
  struct Loop;

  void HelperMain();
  // Runs chunks of `loop` until none is left.
  static void RunChunks(Loop& loop) noexcept;

  absl::Mutex callers_;  // held by the caller that has the helpers
  absl::Mutex mu_;
  absl::CondVar work_;        // a loop was posted, or the pool stops
  absl::CondVar helpers_out_;  // the last helper left a loop
  Loop* loop_ ABSL_GUARDED_BY(mu_) = nullptr;  // the loop helpers may join; null between loops
  uint64_t posted_ ABSL_GUARDED_BY(mu_) = 0;    // loops posted so far
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> helpers_;
};

}  // namespace tessera
