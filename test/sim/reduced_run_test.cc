// The reduced benchmark: every shipped placement policy, one seed (42) of
// the default trace, through tessera-sim's whole path (load, inflate,
// replay, bin). The values pin the replay bit for bit: any change to the
// protocol, a plugin or the binning moves them. The 10-seed table, which
// the published numbers compare with, is benchmarks/placement.sh (docs/benchmarks.md).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/experiment.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

struct Expected {
  std::string policy;
  double alloc_100;      // this replay, seed 42
  double published_100;  // the paper's 10-seed mean (0: not published)
};

TEST(ReducedRunTest, SeedFortyTwoOfTheDefaultTraceGivesTheKnownAllocation) {
  const std::vector<Expected> expected = {
      {"random", 86.49, 86.30},      {"dot-product", 90.44, 90.62}, {"gpu-clustering", 92.63, 91.65},
      {"gpu-packing", 92.49, 91.78}, {"best-fit", 92.19, 92.86},   {"fgd", 95.33, 95.23},
      {"default", 96.12, 0},  // learning the workload from the run's arrivals (its file's list the prior)
  };
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {ParseNamedPath(testing::OpenbPath("openb_pod_list_default.csv"))};
  for (const Expected& e : expected) {
    const std::string dir = e.policy == "default" ? "/config/examples/" : "/config/examples/placement/";
    options.policies.push_back(ParseNamedPath(std::string(TESSERA_SOURCE_DIR) + dir + e.policy + "-policy.yaml"));
  }
  options.seeds = {42};
  options.jobs = 2;
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const RunSummary& r = (*runs)[i];
    SCOPED_TRACE(r.policy);
    ASSERT_EQ(r.policy, expected[i].policy);
    ASSERT_TRUE(r.curve.alloc_percent[100].has_value());
    EXPECT_DOUBLE_EQ(*r.curve.alloc_percent[100], expected[i].alloc_100);
    // One seed of ten: within about three of the paper's standard deviations.
    if (expected[i].published_100 > 0) {
      EXPECT_NEAR(*r.curve.alloc_percent[100], expected[i].published_100, 1.5);
    }
    EXPECT_EQ(r.submitted_pods, 10823);
  }
}

TEST(ReducedRunTest, TheDefaultPolicyPlacesMoreThanFgd) {
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {ParseNamedPath(testing::OpenbPath("openb_pod_list_default.csv"))};
  options.policies = {ParseNamedPath(TESSERA_SOURCE_DIR "/config/examples/placement/fgd-policy.yaml"),
                      ParseNamedPath(TESSERA_SOURCE_DIR "/config/examples/default-policy.yaml")};
  options.seeds = {43, 44, 45};
  options.jobs = 2;
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  ASSERT_TRUE(runs.ok()) << runs.status();
  double fgd = 0, tessera = 0;
  for (const RunSummary& r : *runs) (r.policy == "fgd" ? fgd : tessera) += *r.curve.alloc_percent[100] / 3;
  EXPECT_GT(tessera, fgd + 0.2);
}

}  // namespace
}  // namespace tessera::sim
