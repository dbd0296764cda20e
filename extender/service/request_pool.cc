#include "extender/service/request_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/common/thread_name.h"

namespace tessera {

RequestPool::RequestPool(std::string name, int threads, size_t max_queued, MetricsRegistry& metrics)
    : name_(std::move(name)),
      max_queued_(max_queued),
      queued_gauge_(metrics.Gauge("tessera_request_pool_queued", "Requests waiting for a thread of the pool.",
                                  {{"pool", name_}})),
      running_gauge_(metrics.Gauge("tessera_request_pool_running", "Requests running on a thread of the pool.",
                                   {{"pool", name_}})),
      rejected_(metrics.Counter("tessera_request_pool_rejected_total",
                                "Requests refused because the pool's queue was full.", {{"pool", name_}})),
      wait_(metrics.Histogram("tessera_request_pool_wait_seconds", "Time a request waited for a thread of the pool.",
                              {{"pool", name_}}, DefaultLatencyBuckets())) {
  const int n = threads < 1 ? 1 : threads;
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this] {
      NameThisThread(absl::StrCat("pool-", name_));
      ThreadMain();
    });
  }
}

RequestPool::~RequestPool() {
  std::deque<Queued> dropped;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
    work_.SignalAll();
  }
  queued_gauge_.Set(0);
  dropped.clear();  // outside the lock: a task's destructor may answer its request
  for (std::thread& t : threads_) t.join();
}

bool RequestPool::TrySubmit(absl::AnyInvocable<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    // Capacity: a thread for each task, and max_queued_ waiting. (A task
    // queued for an idle thread that has not woken yet does not count
    // against max_queued_.)
    if (!stopping_ && running_ + queue_.size() < threads_.size() + max_queued_) {
      queue_.push_back({std::move(task), absl::Now()});
      queued_gauge_.Inc();
      work_.Signal();
      return true;
    }
  }
  rejected_.Inc();
  return false;  // `task` is destroyed here, outside the lock
}

size_t RequestPool::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void RequestPool::ThreadMain() {
  for (;;) {
    Queued next;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) work_.Wait(&mu_);
      if (stopping_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      queued_gauge_.Dec();
    }
    wait_.Observe(absl::ToDoubleSeconds(absl::Now() - next.since));
    running_gauge_.Inc();
    next.task();
    next.task = nullptr;  // its captures (the request, the responder) go now, not at the next task
    running_gauge_.Dec();
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace tessera
