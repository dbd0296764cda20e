// The paper's binning of events into arrived-% bins, and seed statistics.
#include "sim/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::sim {
namespace {

TEST(RoundingTest, RoundsHalvesToEvenAsPythonDoes) {
  EXPECT_EQ(RoundHalfEven(2.5), 2);
  EXPECT_EQ(RoundHalfEven(3.5), 4);
  EXPECT_EQ(RoundHalfEven(99.5), 100);
  EXPECT_EQ(RoundHalfEven(100.4), 100);
  EXPECT_DOUBLE_EQ(Round2(95.234), 95.23);
  EXPECT_DOUBLE_EQ(Round2(95.236), 95.24);
}

ReplayEvent Event(int64_t arrived, int64_t used, double fragmented = 0) {
  return ReplayEvent{.arrived_milli = arrived, .used_milli = used, .fragmented_milli = fragmented};
}

TEST(CurveTest, AveragesTheAllocationOfEveryEventInABin) {
  // Capacity 10000 milli: 1% = 100 milli.
  const std::vector<ReplayEvent> events = {Event(9990, 9000), Event(10000, 9100), Event(10040, 9100, 500)};
  const RunCurve curve = CurveOf(events, 10000);
  ASSERT_TRUE(curve.alloc_percent[100].has_value());
  EXPECT_DOUBLE_EQ(*curve.alloc_percent[100], 90.67);  // mean of 90, 91, 91, rounded
  EXPECT_DOUBLE_EQ(*curve.fragmentation_percent[100], 1.67);
}

TEST(CurveTest, ArrivedPercentRoundsHalfToEven) {
  // 100.5% rounds to 100, 101.5% to 102.
  const RunCurve curve = CurveOf({Event(10050, 5000), Event(10150, 6000)}, 10000);
  EXPECT_DOUBLE_EQ(*curve.alloc_percent[100], 50);
  EXPECT_DOUBLE_EQ(*curve.alloc_percent[102], 60);
}

TEST(CurveTest, AnEmptyBinTakesTheEventsOfItsNeighbours) {
  const RunCurve curve = CurveOf({Event(9900, 9000), Event(10100, 9200)}, 10000);
  ASSERT_TRUE(curve.alloc_percent[100].has_value());
  EXPECT_DOUBLE_EQ(*curve.alloc_percent[100], 91);
  EXPECT_FALSE(curve.alloc_percent[103].has_value()) << "no event within one bin of 103";
}

TEST(StatsTest, MeanSampleStandardDeviationAndMedian) {
  const Stats s = StatsOf({95.0, 95.2, 95.4, 95.6});
  EXPECT_DOUBLE_EQ(s.mean, 95.3);
  EXPECT_NEAR(s.sd, 0.2582, 1e-4);
  EXPECT_DOUBLE_EQ(s.median, 95.3);
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(StatsOf({1.0}).sd, 0);
  EXPECT_EQ(StatsOf({}).n, 0u);
}

}  // namespace
}  // namespace tessera::sim
