// The best-set search against brute force over every subset, on the
// reference topologies and on random ones, in random free/used states.
#include "scheduler/model/gpu_set_search.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testing/topologies.h"

namespace tessera {
namespace {

using testing::ParseTopology;

constexpr GpuMask Bit(int32_t i) { return GpuMask{1} << i; }

GpuMask MaskOf(std::initializer_list<int32_t> gpus) {
  GpuMask m = 0;
  for (int32_t g : gpus) m |= Bit(g);
  return m;
}

// The answer by definition: every k-subset of `preference`, the best by
// quality, ties to the lexicographically first list of preference ranks.
std::optional<GpuSetChoice> BruteForceBest(const GpuTopology& t, const std::vector<int32_t>& preference, int32_t k) {
  const auto m = static_cast<int32_t>(preference.size());
  if (k < 1 || k > m) return std::nullopt;
  std::optional<GpuSetChoice> best;
  std::vector<int32_t> best_ranks;
  // Subsets of ranks in increasing lexicographic order of their sorted lists.
  std::vector<int32_t> ranks(static_cast<size_t>(k));
  std::iota(ranks.begin(), ranks.end(), 0);
  while (true) {
    GpuMask gpus = 0;
    for (int32_t r : ranks) gpus |= Bit(preference[static_cast<size_t>(r)]);
    const GpuSetQuality q = QualityOf(t, gpus);
    if (!best.has_value() || q > best->quality || (q == best->quality && ranks < best_ranks)) {
      best = GpuSetChoice{gpus, q};
      best_ranks = ranks;
    }
    int32_t i = k - 1;
    while (i >= 0 && ranks[static_cast<size_t>(i)] == m - k + i) --i;
    if (i < 0) break;
    ++ranks[static_cast<size_t>(i)];
    for (int32_t j = i + 1; j < k; ++j) ranks[static_cast<size_t>(j)] = ranks[static_cast<size_t>(j - 1)] + 1;
  }
  return best;
}

// The profile LeastDamagingGpu maximises, by brute force.
std::vector<GpuSetQuality> BruteForceProfile(const GpuTopology& t, GpuMask free, int32_t gpu) {
  std::vector<int32_t> left;
  for (int32_t g = 0; g < t.gpu_count(); ++g) {
    if ((free & Bit(g)) != 0 && g != gpu) left.push_back(g);
  }
  std::vector<GpuSetQuality> profile;
  for (int32_t size = 2; size < std::popcount(free); size *= 2) {
    profile.push_back(BruteForceBest(t, left, size)->quality);
  }
  return profile;
}

int32_t BruteForceLeastDamaging(const GpuTopology& t, GpuMask free, const std::vector<int32_t>& contenders) {
  for (int32_t g : contenders) {
    if ((free & Bit(g)) == 0) return g;
  }
  int32_t best = contenders.front();
  std::vector<GpuSetQuality> best_profile = BruteForceProfile(t, free, best);
  for (int32_t g : contenders) {
    std::vector<GpuSetQuality> p = BruteForceProfile(t, free, g);
    if (p > best_profile) {
      best = g;
      best_profile = std::move(p);
    }
  }
  return best;
}

std::vector<int32_t> AllGpus(const GpuTopology& t) {
  std::vector<int32_t> all(static_cast<size_t>(t.gpu_count()));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// A random symmetric topology of `n` GPUs: every kind of link, NVLink counts 1..4.
std::shared_ptr<const GpuTopology> RandomTopology(int32_t n, std::mt19937& rng) {
  std::vector<GpuLink> links(static_cast<size_t>(n * n));
  std::uniform_int_distribution<int> kind(0, 5), count(1, 4);
  for (int32_t a = 0; a < n; ++a) {
    for (int32_t b = a + 1; b < n; ++b) {
      const auto k = static_cast<GpuLinkKind>(kind(rng));
      const GpuLink link{k, k == GpuLinkKind::kNvLink ? count(rng) : 0};
      links[static_cast<size_t>(a * n + b)] = links[static_cast<size_t>(b * n + a)] = link;
    }
  }
  return *GpuTopology::Create(n, std::move(links), LinkBandwidths{});
}

// Checks FindBestGpuSet against brute force for every k on `trials` random
// subsets of `t`'s GPUs in random preference orders (plus the idle node).
void CheckAgainstBruteForce(const GpuTopology& t, int trials, std::mt19937& rng) {
  std::vector<std::vector<int32_t>> states = {AllGpus(t)};
  for (int i = 0; i < trials; ++i) {
    std::vector<int32_t> eligible;
    for (int32_t g = 0; g < t.gpu_count(); ++g) {
      if (rng() % 3 != 0) eligible.push_back(g);  // a third of the GPUs taken
    }
    std::shuffle(eligible.begin(), eligible.end(), rng);
    states.push_back(std::move(eligible));
  }
  for (const std::vector<int32_t>& preference : states) {
    for (int32_t k = 1; k <= static_cast<int32_t>(preference.size()); ++k) {
      const std::optional<GpuSetChoice> got = FindBestGpuSet(t, preference, k);
      const std::optional<GpuSetChoice> want = BruteForceBest(t, preference, k);
      ASSERT_TRUE(got.has_value());
      ASSERT_EQ(got->quality, want->quality) << "k=" << k << " got " << DescribeGpuMask(got->gpus) << " want "
                                             << DescribeGpuMask(want->gpus);
      ASSERT_EQ(got->gpus, want->gpus) << "k=" << k << " tie broken differently";
    }
  }
}

TEST(FindBestGpuSet, IsOptimalOnEveryReferenceTopologyIdleAndInRandomStates) {
  std::mt19937 rng(20240611);
  for (const testing::ReferenceTopology& ref : testing::ReferenceTopologies()) {
    SCOPED_TRACE(ref.name);
    const std::shared_ptr<const GpuTopology> t = ParseTopology(ref.text);
    ASSERT_NE(t, nullptr);
    CheckAgainstBruteForce(*t, t->gpu_count() > 8 ? 12 : 60, rng);
  }
}

TEST(FindBestGpuSet, IsOptimalOnRandomTopologiesOfEverySize) {
  std::mt19937 rng(7);
  for (int32_t n = 2; n <= GpuTopology::kMaxGpus; ++n) {
    SCOPED_TRACE(n);
    for (int i = 0; i < (n > 12 ? 2 : 6); ++i) CheckAgainstBruteForce(*RandomTopology(n, rng), 4, rng);
  }
}

TEST(FindBestGpuSet, OnTheDgx1) {
  const std::shared_ptr<const GpuTopology> dgx1 = ParseTopology(testing::kDgx1V100);
  ASSERT_NE(dgx1, nullptr);
  const std::vector<int32_t> all = AllGpus(*dgx1);
  struct Case {
    std::string name;
    std::vector<int32_t> preference;
    int32_t k;
    GpuMask want;
  };
  const std::vector<Case> cases = {
      {"a pair is a double NVLink, the first in index order", all, 2, MaskOf({0, 3})},
      {"a pair prefers what the chooser prefers among double NVLinks", {6, 0, 1, 2, 3, 4, 5, 7}, 2, MaskOf({6, 5})},
      {"a quad is one of the fully NVLinked quads", all, 4, MaskOf({0, 1, 2, 3})},
      {"a quad avoids a taken GPU of the first quad", {0, 2, 3, 4, 5, 6, 7}, 4, MaskOf({4, 5, 6, 7})},
      {"a triple takes two double links", all, 3, MaskOf({0, 2, 3})},
      {"GPU0 with the cross-quad GPUs pairs on its double link", {0, 4, 5, 6, 7}, 2, MaskOf({0, 4})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<GpuSetChoice> got = FindBestGpuSet(*dgx1, c.preference, c.k);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(DescribeGpuMask(got->gpus), DescribeGpuMask(c.want));
  }
  // Never the SYS pair GPU0+GPU6 while any NVLink pair is free.
  EXPECT_NE(FindBestGpuSet(*dgx1, {0, 6, 7}, 2)->gpus, MaskOf({0, 6}));
}

TEST(FindBestGpuSet, RefusesImpossibleRequests) {
  const std::shared_ptr<const GpuTopology> t = ParseTopology(testing::kHgx4Gpu);
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(FindBestGpuSet(*t, {0, 1}, 3).has_value()) << "fewer GPUs than asked";
  EXPECT_FALSE(FindBestGpuSet(*t, {0, 1}, 0).has_value());
  EXPECT_FALSE(FindBestGpuSet(*t, {0, 7}, 2).has_value()) << "a GPU outside the topology";
  EXPECT_FALSE(FindBestGpuSet(*t, {1, 1}, 2).has_value()) << "a GPU twice";
}

TEST(QualityOf, IsTheSlowestLinkThenTheSum) {
  const std::shared_ptr<const GpuTopology> dgx1 = ParseTopology(testing::kDgx1V100);
  ASSERT_NE(dgx1, nullptr);
  // NV1 = 25000 MB/s, NV2 = 50000, SYS = 8000 (the defaults).
  EXPECT_EQ(QualityOf(*dgx1, MaskOf({0, 3})), (GpuSetQuality{BandwidthMBps(50000), BandwidthMBps(50000)}));
  EXPECT_EQ(QualityOf(*dgx1, MaskOf({0, 1, 3})), (GpuSetQuality{BandwidthMBps(25000), BandwidthMBps(100000)}));
  EXPECT_EQ(QualityOf(*dgx1, MaskOf({0, 6})), (GpuSetQuality{BandwidthMBps(8000), BandwidthMBps(8000)}));
  EXPECT_EQ(QualityOf(*dgx1, MaskOf({5})), GpuSetQuality{});
}

TEST(LeastDamagingGpu, MatchesBruteForceInRandomStates) {
  std::mt19937 rng(99);
  std::vector<std::shared_ptr<const GpuTopology>> topologies;
  for (const testing::ReferenceTopology& ref : testing::ReferenceTopologies()) {
    if (std::shared_ptr<const GpuTopology> t = ParseTopology(ref.text); t != nullptr && t->gpu_count() <= 8) {
      topologies.push_back(t);
    }
  }
  for (int i = 0; i < 12; ++i) topologies.push_back(RandomTopology(3 + static_cast<int32_t>(rng() % 8), rng));
  for (const auto& t : topologies) {
    for (int trial = 0; trial < 40; ++trial) {
      const GpuMask free = trial == 0 ? t->all_gpus() : static_cast<GpuMask>(rng()) & t->all_gpus();
      std::vector<int32_t> contenders;
      for (int32_t g = 0; g < t->gpu_count(); ++g) {
        if ((free & Bit(g)) != 0 && (trial < 20 || rng() % 2 == 0)) contenders.push_back(g);
      }
      if (contenders.empty()) continue;
      std::shuffle(contenders.begin(), contenders.end(), rng);
      EXPECT_EQ(LeastDamagingGpu(*t, free, contenders), BruteForceLeastDamaging(*t, free, contenders))
          << "free " << DescribeGpuMask(free);
    }
  }
}

TEST(LeastDamagingGpu, KeepsTheIntactQuadOfADgx1) {
  const std::shared_ptr<const GpuTopology> dgx1 = ParseTopology(testing::kDgx1V100);
  ASSERT_NE(dgx1, nullptr);
  // GPUs 0-2 taken: GPU3 is the stray one; taking it keeps 4-7 whole.
  EXPECT_EQ(LeastDamagingGpu(*dgx1, MaskOf({3, 4, 5, 6, 7}), {4, 5, 6, 7, 3}), 3);
  // GPUs 5-7 taken: GPU4 is the stray one.
  EXPECT_EQ(LeastDamagingGpu(*dgx1, MaskOf({0, 1, 2, 3, 4}), {0, 1, 2, 3, 4}), 4);
  // A contender that is not free costs nothing.
  EXPECT_EQ(LeastDamagingGpu(*dgx1, MaskOf({0, 1, 2, 3}), {0, 6}), 6);
}

TEST(LeastDamagingGpu, KeepsASocketWholeOnPcieNodes) {
  const std::shared_ptr<const GpuTopology> pcie = ParseTopology(testing::kPcie8TwoSockets);
  ASSERT_NE(pcie, nullptr);
  // Socket 1 has only GPU4 free: take it, keep socket 0's quad.
  EXPECT_EQ(LeastDamagingGpu(*pcie, MaskOf({0, 1, 2, 3, 4}), {0, 1, 2, 3, 4}), 4);
  // GPU1's switch partner is taken: GPU1 is the lone one, the pair 2-3 stays.
  EXPECT_EQ(LeastDamagingGpu(*pcie, MaskOf({1, 2, 3}), {2, 3, 1}), 1);
}

TEST(GpuTopology, PrecomputesWhatAnIdleNodeOffers) {
  const std::shared_ptr<const GpuTopology> dgx1 = ParseTopology(testing::kDgx1V100);
  ASSERT_NE(dgx1, nullptr);
  EXPECT_EQ(dgx1->IdleBest(2).gpus, MaskOf({0, 3}));
  EXPECT_EQ(dgx1->IdleBest(4).quality, (GpuSetQuality{BandwidthMBps(25000), BandwidthMBps(225000)}));
  EXPECT_EQ(dgx1->IdleBest(8).gpus, dgx1->all_gpus());
  // Every GPU of the symmetric cube-mesh is alike.
  for (int32_t g = 1; g < 8; ++g) EXPECT_EQ(dgx1->CompareDamage(dgx1->all_gpus(), 0, g), 0) << g;
}

// The tables built with the topology (by dynamic programming over subsets)
// order the GPUs exactly as the searched DamageProfile does, for every set of
// free GPUs; above 8 GPUs, for the idle node.
TEST(GpuTopology, TabulatedDamageAgreesWithTheSearch) {
  std::mt19937 rng(5);
  std::vector<std::shared_ptr<const GpuTopology>> topologies;
  for (const testing::ReferenceTopology& ref : testing::ReferenceTopologies()) topologies.push_back(ParseTopology(ref.text));
  for (int32_t n = 2; n <= 10; ++n) topologies.push_back(RandomTopology(n, rng));
  for (const auto& t : topologies) {
    ASSERT_NE(t, nullptr);
    for (GpuMask free = 1; free <= t->all_gpus(); ++free) {
      if (!t->KnowsDamage(free)) continue;
      for (int32_t a = 0; a < t->gpu_count(); ++a) {
        for (int32_t b = 0; b < t->gpu_count(); ++b) {
          if ((free & Bit(a)) == 0 || (free & Bit(b)) == 0) continue;
          const auto pa = DamageProfile(*t, free, a), pb = DamageProfile(*t, free, b);
          const int want = pa > pb ? -1 : pa < pb ? 1 : 0;
          ASSERT_EQ(std::clamp(t->CompareDamage(free, a, b), -1, 1), want)
              << t->gpu_count() << " GPUs, free " << DescribeGpuMask(free) << ", GPUs " << a << " and " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
