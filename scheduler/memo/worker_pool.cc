#include "scheduler/memo/worker_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "scheduler/common/thread_name.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

struct WorkerPool::Loop {
  absl::FunctionRef<void(size_t, size_t)> body;
  size_t n;
  size_t grain;
  std::atomic<size_t> next{0};  // the first index no one has taken yet
  int helpers_inside = 0;       // helpers running its chunks; guarded by the pool's mu_
};

WorkerPool::WorkerPool(int threads) {
  helpers_.reserve(static_cast<size_t>(std::max(0, threads)));
  for (int i = 0; i < threads; ++i) {
    helpers_.emplace_back([this] {
      NameThisThread("score-helper");
      HelperMain();
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.SignalAll();
  for (std::thread& helper : helpers_) helper.join();
}

void WorkerPool::ParallelFor(size_t n, size_t grain, absl::FunctionRef<void(size_t begin, size_t end)> body) {
  Loop loop{.body = body, .n = n, .grain = std::max<size_t>(grain, 1)};
  if (helpers_.empty() || n <= loop.grain || !callers_.TryLock()) {
    RunChunks(loop);
    return;
  }
  // Wake no more helpers than there are chunks besides the caller's first.
  const size_t chunks = (n + loop.grain - 1) / loop.grain;
  const size_t wake = std::min(helpers_.size(), chunks - 1);
  {
    absl::MutexLock lock(&mu_);
    loop_ = &loop;
    ++posted_;
  }
  for (size_t i = 0; i < wake; ++i) work_.Signal();
  RunChunks(loop);
  {
    // No helper joins from now on; those inside finish their last chunk.
    absl::MutexLock lock(&mu_);
    loop_ = nullptr;
    while (loop.helpers_inside > 0) helpers_out_.Wait(&mu_);
  }
  callers_.Unlock();
}

void WorkerPool::RunChunks(Loop& loop) noexcept {
  for (;;) {
    const size_t begin = loop.next.fetch_add(loop.grain, std::memory_order_relaxed);
    if (begin >= loop.n) return;
    loop.body(begin, std::min(loop.n, begin + loop.grain));
  }
}

void WorkerPool::HelperMain() {
  uint64_t joined = 0;  // the last loop this helper worked on, by posted_ count
  mu_.Lock();
  for (;;) {
    while (!stopping_ && (loop_ == nullptr || posted_ == joined)) work_.Wait(&mu_);
    if (stopping_) break;
    joined = posted_;
    Loop& loop = *loop_;
    ++loop.helpers_inside;
    mu_.Unlock();
    RunChunks(loop);
    mu_.Lock();
    // The unlock publishes the chunks' writes to the caller, who waits under mu_.
    if (--loop.helpers_inside == 0) helpers_out_.Signal();
  }
  mu_.Unlock();
}

std::optional<int> CpusFromCgroupMax(std::string_view text) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(Absl(text)), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &quota) || !absl::SimpleAtoi(fields[1], &period) ||
      quota <= 0 || period <= 0) {
    return std::nullopt;  // "max <period>" (no limit) among them
  }
  const int64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<int>(std::min<int64_t>(cpus, INT_MAX));
}

namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

// CPUs of this thread's affinity mask (the process's, as set by taskset or a
// cpuset); the machine's count where the mask cannot be read.
int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// The tightest cgroup v2 CPU quota over this process's cgroup and its
// ancestors, read below /sys/fs/cgroup. In a container (its own cgroup
// namespace) the process's cgroup is "/", whose cpu.max is the container's
// limit; outside one, the limit sits on the cgroup /proc/self/cgroup names.
std::optional<int> CgroupCpus() {
  std::string cgroup = "/";
  if (const std::optional<std::string> self = ReadSmallFile("/proc/self/cgroup")) {
    for (absl::string_view line : absl::StrSplit(*self, '\n')) {
      if (absl::ConsumePrefix(&line, "0::") && absl::StartsWith(line, "/") && !absl::StrContains(line, "..")) {
        cgroup = std::string(line);
      }
    }
  }
  std::optional<int> tightest;
  for (;;) {
    const std::string file = absl::StrCat("/sys/fs/cgroup", cgroup == "/" ? "" : cgroup, "/cpu.max");
    if (const std::optional<std::string> text = ReadSmallFile(file)) {
      if (const std::optional<int> cpus = CpusFromCgroupMax(*text)) tightest = std::min(tightest.value_or(INT_MAX), *cpus);
    }
    if (cgroup == "/") return tightest;
    cgroup.resize(std::max<size_t>(cgroup.rfind('/'), 1));  // the parent; "/x" -> "/"
  }
}

}  // namespace

int WorkerPool::DefaultThreads() {
  int cpus = AffinityCpus();
  if (const std::optional<int> quota = CgroupCpus()) cpus = std::min(cpus, *quota);
  return std::clamp(cpus - 1, 0, kMaxDefaultThreads);
}

}  // namespace tessera
