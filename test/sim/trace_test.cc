// Reading the trace's node and pod lists: parsing by header, the artifact's
// conversions, and errors that name the file and line.
#include "sim/trace.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NodeListTest, ReadsNodesSortedByNameWithTheirGpusAndHost) {
  absl::StatusOr<std::vector<TraceNode>> nodes = ParseNodeList(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n-b,96000,393216,8,G2\n"
      "n-a,32000,131072,2,T4\r\n"
      "\n",
      "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(*nodes, ElementsAre(TraceNode{"n-a", 32000, 131072, 2, "T4"}, TraceNode{"n-b", 96000, 393216, 8, "G2"}));
}

TEST(NodeListTest, FindsColumnsByHeaderWhateverTheirOrder) {
  absl::StatusOr<std::vector<TraceNode>> nodes =
      ParseNodeList("model,gpu,sn,extra,memory_mib,cpu_milli\nV100M16,4,n,x,1024,8000\n", "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_THAT(*nodes, ElementsAre(TraceNode{"n", 8000, 1024, 4, "V100M16"}));
}

TEST(NodeListTest, ACpuOnlyNodeHasNoModel) {
  absl::StatusOr<std::vector<TraceNode>> nodes = ParseNodeList("sn,cpu_milli,memory_mib,gpu,model\nc,32000,1024,0,\n", "n.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ((*nodes)[0].gpus, 0);
  EXPECT_EQ((*nodes)[0].model, "");
}

TEST(NodeListTest, ReadsTheShippedGpuNodes) {
  absl::StatusOr<std::vector<TraceNode>> nodes = LoadNodeList(testing::OpenbPath("openb_node_list_gpu_node.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  int64_t gpus = 0, cpu = 0;
  for (const TraceNode& n : *nodes) {
    gpus += n.gpus;
    cpu += n.cpu_milli;
  }
  EXPECT_EQ(nodes->size(), 1213u);
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(cpu, 107018000);
}

struct BadInput {
  std::string name;
  std::string text;
  std::string error;
};

TEST(NodeListTest, BadInputIsAnErrorNamingTheFileAndLine) {
  const std::vector<BadInput> cases = {
      {"an empty file", "", "nodes.csv:1: empty file; expected a header line"},
      {"a missing column", "sn,cpu_milli,memory_mib,model\nn,1,1,G2\n",
       "nodes.csv:1: missing column \"gpu\"; the header has: sn,cpu_milli,memory_mib,model"},
      {"a short row", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,8\n", "nodes.csv:2: has 4 fields, the header 5"},
      {"a number that is not one", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,8,G2\nm,lots,1,8,G2\n",
       "nodes.csv:3: cpu_milli must be a non-negative integer; got \"lots\""},
      {"a negative number", "sn,cpu_milli,memory_mib,gpu,model\nn,1,-1,8,G2\n",
       "nodes.csv:2: memory_mib must be a non-negative integer; got \"-1\""},
      {"a model without GPUs", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,0,T4\n",
       "nodes.csv:2: node \"n\" has GPU model \"T4\" but gpu is 0"},
      {"a duplicate name", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,1,T4\nm,1,1,1,T4\nn,2,2,1,T4\n",
       "nodes.csv:4: duplicate node name \"n\" (first on line 2)"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<TraceNode>> nodes = ParseNodeList(c.text, "nodes.csv");
    ASSERT_FALSE(nodes.ok());
    EXPECT_EQ(nodes.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(nodes.status().message(), c.error);
  }
}

TEST(NodeListTest, AMissingFileIsNotFoundAndNamesThePath) {
  absl::StatusOr<std::vector<TraceNode>> nodes = LoadNodeList("/nonexistent/nodes.csv");
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(nodes.status().message(), HasSubstr("/nonexistent/nodes.csv: cannot open"));
}

TEST(PodListTest, ParsesPodsAsTheArtifactConvertsThem) {
  absl::StatusOr<std::vector<TracePod>> pods = ParsePodList(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "p3,4000,1024,1,470,V100M16||V100M32,LS,Running,0,10,0\n"
      "p1,88000,327680,8,1000,,BE,Failed,0,10,\n"
      "p2,12000,16384,0,250,,LS,Pending,0,10,\n"
      "p4,1000,1,1,1200,,LS,Running,0,10,0\n",
      "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 4u);
  EXPECT_EQ((*pods)[0].name, "p1");
  EXPECT_EQ((*pods)[0].total_milli(), 8000);
  EXPECT_EQ((*pods)[1].gpu_milli, 0) << "a CPU-only pod has no GPU share whatever gpu_milli says";
  EXPECT_THAT((*pods)[2].models, ElementsAre("V100M16", "V100M32")) << "empty parts of gpu_spec are dropped";
  EXPECT_EQ((*pods)[2].gpu_spec, "V100M16|V100M32");
  EXPECT_EQ((*pods)[3].gpu_milli, 1000) << "gpu_milli is clipped to one GPU";
}

TEST(PodListTest, ReadsQosTimesAndTenantsWhereTheListHasThem) {
  absl::StatusOr<std::vector<TracePod>> timed = ParsePodList(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos,creation_time,deletion_time,tenant\n"
      "p,1000,1024,1,500,LS,427061,12902960,research\n"
      "q,1000,1024,1,500,nan,0,0,\n",
      "pods.csv");
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_EQ((*timed)[0].qos, "LS");
  EXPECT_EQ((*timed)[0].creation_time, 427061);
  EXPECT_EQ((*timed)[0].deletion_time, 12902960);
  EXPECT_EQ((*timed)[0].tenant, "research");
  EXPECT_EQ((*timed)[1].qos, "") << "pandas' nan is no class";
  EXPECT_EQ((*timed)[1].tenant, "");

  absl::StatusOr<std::vector<TracePod>> untimed =
      ParsePodList("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1000,1024,1,500,7\n", "pods.csv");
  ASSERT_TRUE(untimed.ok()) << untimed.status();
  EXPECT_EQ((*untimed)[0].creation_time, std::nullopt) << "a life needs both ends";
  EXPECT_EQ((*untimed)[0].qos, "");
}

TEST(PodListTest, ReadsListsWithoutTheTrailingColumns) {
  absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(testing::OpenbPath("openb_pod_list_multigpu20.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(pods->size(), 8324u);
}

TEST(PodListTest, ReadsTheDefaultTrace) {
  absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(testing::OpenbPath("openb_pod_list_default.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status();
  int cpu_only = 0, share = 0, one = 0, multi = 0;
  for (const TracePod& p : *pods) {
    if (p.gpus == 0) ++cpu_only;
    else if (p.gpus == 1 && p.gpu_milli < 1000) ++share;
    else if (p.gpus == 1) ++one;
    else ++multi;
  }
  EXPECT_EQ(pods->size(), 8152u);
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(share, 3078);
  EXPECT_EQ(one, 3911);
  EXPECT_EQ(multi, 75);
}

TEST(PodListTest, BadInputIsAnErrorNamingTheFileAndLine) {
  const std::vector<BadInput> cases = {
      {"a missing column", "name,cpu_milli,memory_mib,gpu_milli\np,1,1,1\n",
       "pods.csv:1: missing column \"num_gpu\"; the header has: name,cpu_milli,memory_mib,gpu_milli"},
      {"a fraction", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,0.5\n",
       "pods.csv:2: gpu_milli must be a non-negative integer; got \"0.5\""},
      {"GPUs without a share", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,0\n",
       "pods.csv:2: pod \"p\" asks for 2 GPUs with gpu_milli 0"},
      {"a long row", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,5,extra\n", "pods.csv:2: has 6 fields, the header 5"},
      {"a pod deleted before it was created",
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np,1,1,1,5,20,10\n",
       "pods.csv:2: deletion_time 10 is before creation_time 20"},
      {"a time left empty", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np,1,1,1,5,,10\n",
       "pods.csv:2: creation_time must be a non-negative integer; got \"\""},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<TracePod>> pods = ParsePodList(c.text, "pods.csv");
    ASSERT_FALSE(pods.ok());
    EXPECT_EQ(pods.status().message(), c.error);
  }
}

}  // namespace
}  // namespace tessera::sim
