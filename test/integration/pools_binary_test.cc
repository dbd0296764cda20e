// The real tessera-extender with config/examples/pools-policy.yaml: filter
// over HTTP routes a pod by its task type, /debug shows the routes, and a
// reload that drops the pools drops the routing with them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/integration/extender_process.h"
#include "test/testing/data_files.h"
#include "test/testing/http_client.h"

namespace tessera {
namespace {

using json = nlohmann::json;
using ::testing::UnorderedElementsAre;
namespace fs = std::filesystem;

// Two L4s a node; two training nodes, one inference node, one of no pool.
constexpr const char* kCluster = R"(nodes:
  - {name: train-1, labels: {tessera.io/node-pool: gpu-training, nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
  - {name: train-2, labels: {karpenter.sh/nodepool: gpu-training, nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
  - {name: infer-1, labels: {tessera.io/node-pool: gpu-inference, nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
  - {name: spare-1, labels: {nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
)";

std::string FilterBody(const std::string& task_type) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"annotations", {{"tessera.io/gpu-fraction", "0.5"}}}}}};
  if (!task_type.empty()) pod["metadata"]["labels"]["tessera.io/task-type"] = task_type;
  return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"train-1", "train-2", "infer-1", "spare-1"}}}.dump();
}

class PoolsBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-pools-binary-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "cluster.yaml") << kCluster;
    // Filter passes every node the route admits (no shortlist), so that its answers show routing alone.
    std::ofstream(dir_ / "policy.yaml")
        << testing::ReadFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/pools-policy.yaml")
        << "shortlist: {maxNodes: 0}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(PoolsBinaryTest, FilterRoutesByTaskTypeDebugShowsTheRoutesAndAReloadWithoutPoolsEndsTheRouting) {
  testing::Extender e({"--port=0", "--cluster-file=" + (dir_ / "cluster.yaml").string(),
                       "--policy-file=" + (dir_ / "policy.yaml").string(), "--policy-poll-interval=100ms"});
  const std::vector<std::string> serving = e.WaitFor(std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(serving.empty()) << e.AllOutput();
  EXPECT_THAT(e.AllOutput(), ::testing::HasSubstr("task types training, fine-tuning go to node pool gpu-training "
                                                  "(exclusive) with plugins host-resources, gpu-share, nvlink-topology"));
  testing::HttpClient client(static_cast<uint16_t>(std::stoi(serving[1])));

  const json training = json::parse(client.Post("/filter", FilterBody("training")).body);
  EXPECT_THAT(training["NodeNames"], UnorderedElementsAre("train-1", "train-2")) << training.dump();
  EXPECT_EQ(training["FailedAndUnresolvableNodes"]["spare-1"],
            "pods of task type training run only in node pool gpu-training; this node is in no node pool");
  const json untyped = json::parse(client.Post("/filter", FilterBody("")).body);
  EXPECT_THAT(untyped["NodeNames"], UnorderedElementsAre("infer-1", "spare-1")) << "the training pool is exclusive";

  const json debug = json::parse(client.Get("/debug").body);
  ASSERT_EQ(debug["pools"]["routes"].size(), 2u) << debug.dump();
  EXPECT_EQ(debug["pools"]["routes"][0]["pool"], "gpu-training");
  EXPECT_EQ(debug["pools"]["routes"][0]["nodes"], 2);
  EXPECT_EQ(debug["pools"]["routes"][0]["gpuMilli"]["capacity"], 4000);

  std::ofstream(dir_ / "policy.yaml", std::ios::trunc)
      << "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nshortlist: {maxNodes: 0}\nplugins:\n  - name: gpu-share\n";
  ASSERT_FALSE(e.WaitFor(std::regex("policy reloaded")).empty()) << e.AllOutput();
  const json after = json::parse(client.Post("/filter", FilterBody("training")).body);
  EXPECT_THAT(after["NodeNames"], UnorderedElementsAre("train-1", "train-2", "infer-1", "spare-1")) << after.dump();
  EXPECT_FALSE(json::parse(client.Get("/debug").body).contains("pools"));
}

}  // namespace
}  // namespace tessera
