// Loading an experiment (policies, traces, seeds), giving plugins the
// replayed trace's workload, and reporting the runs.
#include "sim/experiment.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "sim/report.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A scratch directory for one test, removed with it.
class ScratchDir {
 public:
  ScratchDir() : path_(std::filesystem::temp_directory_path() /
                       ("tessera-sim-test-" + std::to_string(::getpid()) + "-" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string file = (path_ / name).string();
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

constexpr const char* kFgdPolicy =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: host-resources\n"
    "  - name: fgd\n"
    "    args:\n"
    "      workload: [\"1 cpu=1000m gpu=1\"]\n";

TEST(NamedPathTest, NamesPoliciesAndTracesAfterTheirFiles) {
  EXPECT_EQ(ParseNamedPath("config/examples/placement/best-fit-policy.yaml").name, "best-fit");
  EXPECT_EQ(ParseNamedPath("traces/openb_pod_list_gpushare40.csv").name, "gpushare40");
  const NamedPath explicit_name = ParseNamedPath("mine=/tmp/a-policy.yaml");
  EXPECT_EQ(explicit_name.name, "mine");
  EXPECT_EQ(explicit_name.path, "/tmp/a-policy.yaml");
}

TEST(LoadPolicyForTraceTest, ReplacesEveryWorkloadArgWithTheTracesTypicalPods) {
  ScratchDir dir;
  const std::string policy = dir.Write("fgd.yaml", kFgdPolicy);
  const PluginRegistry registry = NewBuiltinRegistry();
  const std::vector<WorkloadPod> typical = {WorkloadPod{.weight = 3, .cpu = MilliCpu(500),
                                                        .gpus = 1, .milli = MilliGpu(250), .models = {}}};
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyForTrace(policy, registry, &typical);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_THAT((*profile)->PluginNames(), ElementsAre("host-resources", "fgd"));

  // The replaced workload is what the plugin validates: a bad one fails, naming where it came from.
  const std::vector<WorkloadPod> broken = {WorkloadPod{.weight = 0, .cpu = MilliCpu(500),
                                                       .gpus = 1, .milli = MilliGpu(250), .models = {}}};
  EXPECT_THAT(LoadPolicyForTrace(policy, registry, &broken).status().message(),
              HasSubstr("fgd.yaml (workload from the trace)"));
}

TEST(LoadPolicyForTraceTest, ErrorsPointAtThePolicyFileAsWritten) {
  ScratchDir dir;
  const std::string policy = dir.Write("bad.yaml", std::string(kFgdPolicy) + "  - name: best-fitt\n");
  const PluginRegistry registry = NewBuiltinRegistry();
  const std::vector<WorkloadPod> typical;
  EXPECT_THAT(LoadPolicyForTrace(policy, registry, &typical).status().message(),
              HasSubstr("bad.yaml:8:11: plugins[2].name: unknown plugin \"best-fitt\""));
  EXPECT_EQ(LoadPolicyForTrace(dir.Write("x", "") + ".missing", registry, nullptr).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RunExperimentTest, RunsEveryPolicyOnEveryTraceForEverySeed) {
  ScratchDir dir;
  ExperimentOptions options;
  options.nodes = dir.Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\na,32000,65536,2,T4\nb,32000,65536,1,T4\n");
  options.traces = {ParseNamedPath(dir.Write("openb_pod_list_tiny.csv",
                                             "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                             "p1,1000,1024,1,500\np2,1000,1024,1,1000\np3,2000,1024,0,0\np4,1000,1024,1,300\n"))};
  options.policies = {ParseNamedPath(dir.Write("fgd-policy.yaml", kFgdPolicy)),
                      ParseNamedPath(std::string(TESSERA_SOURCE_DIR) + "/config/examples/placement/random-policy.yaml")};
  options.seeds = {1, 2};
  options.jobs = 2;
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_THAT(PoliciesOf(*runs), ElementsAre("fgd", "random"));
  EXPECT_THAT(TracesOf(*runs), ElementsAre("tiny"));
  for (const RunSummary& r : *runs) {
    SCOPED_TRACE(r.policy + " seed " + std::to_string(r.seed));
    EXPECT_EQ(r.capacity_milli, 3000);
    EXPECT_GE(r.submitted_pods, 4);
    EXPECT_EQ(r.memoised, r.policy == "fgd");
    EXPECT_TRUE(r.curve.alloc_percent[60].has_value()) << "the four trace pods ask for 60% of the GPUs";
  }
}

TEST(RunExperimentTest, AMissingTraceIsAnErrorNamingIt) {
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {ParseNamedPath("/nonexistent/pods.csv")};
  options.policies = {ParseNamedPath(std::string(TESSERA_SOURCE_DIR) + "/config/examples/placement/best-fit-policy.yaml")};
  options.seeds = {42};
  EXPECT_THAT(std::string(RunExperiment(options).status().message()), HasSubstr("/nonexistent/pods.csv: cannot open"));
}

RunSummary Summary(std::string policy, uint64_t seed, double alloc100) {
  RunSummary r;
  r.trace = "default";
  r.policy = std::move(policy);
  r.seed = seed;
  r.capacity_milli = 6212000;
  for (int x = 0; x <= kMaxArrivedPercent; ++x) r.curve.alloc_percent[static_cast<size_t>(x)] = std::min<double>(x, alloc100);
  r.curve.fragmentation_percent[100] = 5;
  r.failed_pods = {0, 10, 20, 1};
  return r;
}

TEST(ReportTest, TheSummaryTabulatesMeanAndSdPerTraceAndPolicy) {
  const std::vector<RunSummary> runs = {Summary("fgd", 42, 95.0), Summary("fgd", 43, 95.4), Summary("best-fit", 42, 92.8)};
  const std::string md = MarkdownSummary(runs);
  EXPECT_THAT(md, HasSubstr("| trace | fgd | best-fit |\n|---|---|---|\n| default | 95.20 ± 0.28 | 92.80 ± 0.00 |\n"));
  EXPECT_THAT(md, HasSubstr("### default (2 seeds, 42–43)"));
  // Unallocated GPUs at 100%: (100 − 95.2) · 6212 / 100 = 298.
  EXPECT_THAT(md, HasSubstr("| fgd | 95.20 ± 0.28 | 95.20 | 298 | 5.00 ± 0.00 | 95.20 ± 0.28 | 0 / 10 / 20 / 1 |"));
}

TEST(ReportTest, TheLastPolicyIsComparedWithEachOtherSeedBySeed) {
  const std::vector<RunSummary> runs = {Summary("fgd", 42, 95.0),     Summary("fgd", 43, 95.4),
                                        Summary("tessera", 42, 95.6), Summary("tessera", 43, 95.2),
                                        Summary("tessera", 44, 99.0)};  // seed 44 has no fgd run: not compared
  const std::string md = MarkdownSummary(runs);
  // (0.6 − 0.2) / 2 = +0.20, won on seed 42 only.
  EXPECT_THAT(md, HasSubstr("| trace | vs fgd |\n|---|---|\n| default | +0.20 (1/2) |\n"));
}

TEST(ReportTest, TheCsvHasARowPerRunAndArrivedPercent) {
  std::ostringstream csv;
  WriteCurvesCsv({Summary("fgd", 42, 95.0)}, csv);
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(csv.str());
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + kBins);
  EXPECT_EQ(lines[0], "trace,policy,seed,arrived_percent,alloc_percent,fragmentation_percent");
  EXPECT_EQ(lines[101], "default,fgd,42,100,95.00,5.00");
}

TEST(ReportTest, ThePlotHasALineAndALegendEntryPerPolicy) {
  const std::vector<RunSummary> runs = {Summary("fgd", 42, 95.0), Summary("best-fit", 42, 92.8)};
  const std::string svg = SvgPlot(runs, "default");
  EXPECT_THAT(svg, ::testing::StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, ::testing::EndsWith("</svg>\n"));
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_THAT(svg, HasSubstr(">fgd (95.00)</text>"));
  EXPECT_THAT(svg, HasSubstr(">best-fit (92.80)</text>"));
}

}  // namespace
}  // namespace tessera::sim
