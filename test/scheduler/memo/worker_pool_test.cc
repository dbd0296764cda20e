#include "scheduler/memo/worker_pool.h"

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

constexpr size_t kGrain = 16;

// How often ParallelFor's body saw each index, and whether it saw a chunk
// other than [k·grain, min(n, (k+1)·grain)).
struct Visits {
  explicit Visits(size_t n) : count(n) {}
  std::vector<std::atomic<int>> count;
  std::atomic<int> bad_chunks{0};

  void Record(size_t begin, size_t end, size_t grain) {
    if (begin % grain != 0 || end <= begin || end - begin > grain || end > count.size()) bad_chunks.fetch_add(1);
    for (size_t i = begin; i < end && i < count.size(); ++i) count[i].fetch_add(1, std::memory_order_relaxed);
  }
  // The indices not visited exactly once.
  std::vector<size_t> Wrong() const {
    std::vector<size_t> wrong;
    for (size_t i = 0; i < count.size(); ++i) {
      if (count[i].load() != 1) wrong.push_back(i);
    }
    return wrong;
  }
};

TEST(WorkerPoolTest, ParallelForVisitsEveryIndexExactlyOnce) {
  for (const int threads : {0, 1, 3}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (const size_t n : {size_t{0}, size_t{1}, kGrain - 1, kGrain, kGrain + 1, size_t{10'000}}) {
      SCOPED_TRACE(absl::StrCat(threads, " helpers, n = ", n));
      Visits visits(n);
      pool.ParallelFor(n, kGrain, [&](size_t begin, size_t end) { visits.Record(begin, end, kGrain); });
      EXPECT_EQ(visits.Wrong(), std::vector<size_t>{});
      EXPECT_EQ(visits.bad_chunks.load(), 0);
    }
  }
}

TEST(WorkerPoolTest, ALoopOfOneChunkRunsOnTheCaller) {
  WorkerPool pool(3);
  std::vector<std::thread::id> ran_on;
  pool.ParallelFor(kGrain, kGrain, [&](size_t, size_t) { ran_on.push_back(std::this_thread::get_id()); });
  EXPECT_EQ(ran_on, std::vector<std::thread::id>{std::this_thread::get_id()});
}

TEST(WorkerPoolTest, HelpersShareALongLoop) {
  // Each chunk waits until a chunk has run on another thread, or gives up
  // after a while: with helpers, two threads work on the loop at once.
  WorkerPool pool(1);
  std::atomic<int> threads_seen{0};
  std::atomic<bool> caller_ran{false}, helper_ran{false};
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(64, 1, [&](size_t, size_t) {
    std::atomic<bool>& mine = std::this_thread::get_id() == caller ? caller_ran : helper_ran;
    if (!mine.exchange(true)) threads_seen.fetch_add(1);
    for (int spin = 0; spin < 200'000 && threads_seen.load() < 2; ++spin) std::this_thread::yield();
  });
  EXPECT_TRUE(caller_ran.load()) << "the caller takes chunks too";
  EXPECT_TRUE(helper_ran.load()) << "the helper takes chunks";
}

TEST(WorkerPoolTest, ConcurrentCallersEachGetAllTheirIndices) {
  WorkerPool pool(3);
  constexpr int kCallers = 4, kLoopsEach = 50;
  constexpr size_t kN = 5'000;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      for (int loop = 0; loop < kLoopsEach; ++loop) {
        Visits visits(kN);
        pool.ParallelFor(kN, 64, [&](size_t begin, size_t end) { visits.Record(begin, end, 64); });
        if (!visits.Wrong().empty() || visits.bad_chunks.load() != 0) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(WorkerPoolTest, WritesOfEveryChunkAreVisibleWhenParallelForReturns) {
  WorkerPool pool(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<int> out(4'096, 0);  // plain ints: ParallelFor's return must publish them
    pool.ParallelFor(out.size(), 32, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) out[i] = static_cast<int>(i) + round;
    });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<int>(i) + round) << "round " << round;
  }
}

TEST(WorkerPoolTest, APoolIsJoinedWhenDestroyedWhetherUsedOrNot) {
  { WorkerPool unused(4); }
  {
    WorkerPool used(2);
    std::atomic<size_t> sum{0};
    used.ParallelFor(1'000, 10, [&](size_t begin, size_t end) { sum.fetch_add(end - begin); });
    EXPECT_EQ(sum.load(), 1'000u);
  }
}

TEST(WorkerPoolTest, NegativeThreadsMeanNone) {
  WorkerPool pool(-2);
  EXPECT_EQ(pool.threads(), 0);
  size_t sum = 0;
  pool.ParallelFor(100, 7, [&](size_t begin, size_t end) { sum += end - begin; });
  EXPECT_EQ(sum, 100u);
}

TEST(CpusFromCgroupMaxTest, ReadsTheQuotaInWholeCpus) {
  struct Case {
    std::string text;
    std::optional<int> cpus;
  };
  const std::vector<Case> cases = {
      {"max 100000", std::nullopt},            // no limit
      {"max 100000\n", std::nullopt},
      {"200000 100000", 2},
      {"200000 100000\n", 2},                  // as the kernel writes it
      {"150000 100000", 2},                    // a partial CPU still needs a thread
      {"50000 100000", 1},
      {"100000 100000", 1},
      {"400000 50000", 8},
      {"1 100000", 1},
      {"", std::nullopt},
      {"garbage", std::nullopt},
      {"200000", std::nullopt},                // no period
      {"200000 100000 7", std::nullopt},
      {"-200000 100000", std::nullopt},
      {"200000 0", std::nullopt},
      {"0 100000", std::nullopt},
      {"2e5 100000", std::nullopt},
      {"99999999999999999999 100000", std::nullopt},  // overflows int64
  };
  for (const Case& c : cases) EXPECT_EQ(CpusFromCgroupMax(c.text), c.cpus) << "'" << c.text << "'";
}

TEST(WorkerPoolTest, DefaultThreadsLeaveTheCallerACpuOfItsAffinityAndStayCapped) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int affinity = CPU_COUNT(&set);
  const int helpers = WorkerPool::DefaultThreads();
  EXPECT_GE(helpers, 0);
  EXPECT_LE(helpers, WorkerPool::kMaxDefaultThreads);
  EXPECT_LE(helpers, affinity - 1);
}

}  // namespace
}  // namespace tessera
