#include "config/cluster_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/deadline.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(ClusterFileTest, TheDemoClusterLoads) {
  ClusterModel model;
  const absl::Status st =
      LoadClusterFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/demo-cluster.yaml", model);
  EXPECT_TRUE(st.ok()) << st;
}

TEST(ClusterFileTest, ANodesPoolComesFromTheFirstWellKnownPoolLabel) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessera-cluster-pool-" + std::to_string(::getpid()) + ".yaml")).string();
  std::ofstream(path) << R"(nodes:
  - {name: a, labels: {nvidia.com/gpu.count: "1", karpenter.sh/nodepool: spot, tessera.io/node-pool: train}}
  - {name: b, labels: {nvidia.com/gpu.count: "1"}}
)";
  ClusterModel model;
  ASSERT_TRUE(LoadClusterFile(path, model).ok());
  std::filesystem::remove(path);
  const auto snapshot = model.Publish();  // the loader leaves publishing to its caller
  ASSERT_TRUE(snapshot->FindNode("a").has_value() && snapshot->FindNode("b").has_value());
  EXPECT_EQ(snapshot->node(*snapshot->FindNode("a")).pool, "train") << "Tessera's own label first";
  EXPECT_EQ(snapshot->node(*snapshot->FindNode("b")).pool, "");
}

struct HostileCase {
  std::string name;
  std::string yaml;
  std::string want;  // a part of the error
};

TEST(ClusterFileTest, HostileYamlIsRefusedInBoundedTime) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k > 0 ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::vector<HostileCase> cases = {
      {"a file that is just a comma", ",", "cluster.yaml:1:1: unexpected ','"},
      {"a comma after a document start", "---\n,\n", "cluster.yaml:2:1: unexpected ','"},
      {"an alias bomb", bomb, "more than 1000000 nodes"},
      {"a node list that names itself", "nodes: &n [*n]\n", "an alias may not refer to a node that contains it"},
      {"a second document", "nodes: []\n---\npods: []\n", "cluster.yaml:3:1: only one YAML document is allowed"},
  };
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.name);
    const testing::BoundedRun run = testing::RunWithDeadline(
        [&] {
          ClusterModel model;
          return LoadClusterText(c.yaml, "cluster.yaml", model).ok() ? 1 : 0;
        },
        std::chrono::seconds(10));
    ASSERT_TRUE(run.finished) << run.what;
    EXPECT_EQ(run.exit_code, 0) << "not refused";
    ClusterModel model;
    EXPECT_THAT(std::string(LoadClusterText(c.yaml, "cluster.yaml", model).message()), HasSubstr(c.want));
  }
}

TEST(ClusterFileTest, OnlyARegularFileIsRead) {
  std::string dir = (std::filesystem::temp_directory_path() / "tessera-cluster-file-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string fifo = dir + "/cluster.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading waits for a writer; the start must not.
  const testing::BoundedRun run = testing::RunWithDeadline(
      [&] {
        ClusterModel model;
        return LoadClusterFile(fifo, model).ok() ? 1 : 0;
      },
      std::chrono::seconds(10));
  EXPECT_TRUE(run.finished) << run.what;
  EXPECT_EQ(run.exit_code, 0);
  ClusterModel model;
  EXPECT_THAT(std::string(LoadClusterFile(fifo, model).message()),
              HasSubstr("cluster.yaml: cannot read: not a regular file (a FIFO)"));
  EXPECT_THAT(std::string(LoadClusterFile(dir + "/missing.yaml", model).message()),
              HasSubstr("missing.yaml: cannot read: No such file or directory"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
