// The reduced benchmark: every shipped placement policy, one seed (42) of
// the default trace, through tessera-sim's whole path (load, inflate,
// replay, bin). test/golden/replay/seed-42-default-trace.csv pins the replay
// to the 0.01 tessera-sim prints: any change to the protocol, a plugin or the
// binning moves it. A change meant to move it rewrites the file with
// scripts/update-golden.sh, and the diff is what a reviewer reads. The
// 10-seed table, which the published numbers compare with, is
// benchmarks/placement.sh (docs/benchmarks.md).
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/experiment.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

struct Policy {
  std::string name;
  double published_100;  // the FGD paper's 10-seed mean (0: not published); an outside figure, not ours to regenerate
};

constexpr char kGolden[] = TESSERA_SOURCE_DIR "/test/golden/replay/seed-42-default-trace.csv";

TEST(ReducedRunTest, SeedFortyTwoOfTheDefaultTraceGivesTheAllocationInItsGoldenFile) {
  const std::vector<Policy> expected = {
      {"random", 86.30},      {"dot-product", 90.62}, {"gpu-clustering", 91.65},
      {"gpu-packing", 91.78}, {"best-fit", 92.86},    {"fgd", 95.23},
      {"default", 0},  // learning the workload from the run's arrivals (its file's list the prior)
  };
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {ParseNamedPath(testing::OpenbPath("openb_pod_list_default.csv"))};
  for (const Policy& e : expected) {
    const std::string dir = e.name == "default" ? "/config/examples/" : "/config/examples/placement/";
    options.policies.push_back(ParseNamedPath(std::string(TESSERA_SOURCE_DIR) + dir + e.name + "-policy.yaml"));
  }
  options.seeds = {42};
  options.jobs = 2;
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), expected.size());
  std::string got = "policy,alloc_percent_at_100,submitted_pods\n";
  for (size_t i = 0; i < expected.size(); ++i) {
    const RunSummary& r = (*runs)[i];
    SCOPED_TRACE(r.policy);
    ASSERT_EQ(r.policy, expected[i].name);
    ASSERT_TRUE(r.curve.alloc_percent[100].has_value());
    got += absl::StrFormat("%s,%.2f,%d\n", r.policy, *r.curve.alloc_percent[100], r.submitted_pods);
    // One seed of ten: within about three of the paper's standard deviations.
    if (expected[i].published_100 > 0) {
      EXPECT_NEAR(*r.curve.alloc_percent[100], expected[i].published_100, 1.5);
    }
  }
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden) << got;
    return;
  }
  absl::StatusOr<std::string> golden = testing::ReadDataFile(kGolden);
  ASSERT_TRUE(golden.ok()) << golden.status() << " (scripts/update-golden.sh writes it)";
  EXPECT_EQ(got, *golden) << "the replay moved; if that was meant, scripts/update-golden.sh rewrites " << kGolden;
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
