// The example pods in k8s/examples/ are what users copy: each must opt in to
// Tessera's scheduler, read its GPUs from the annotation bind writes, ask for
// what its comment says (through Tessera's own annotation parser), and be
// placed where that request fits.
#include <filesystem>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "k8s/pod_gpu_request.h"
#include "test/testing/builders.h"
#include "test/testing/service_fixture.h"

namespace tessera::deploy {
namespace {

using ::testing::UnorderedElementsAreArray;

const std::string kExamplesDir = std::string(TESSERA_SOURCE_DIR) + "/k8s/examples";

// An A100 SXM node (8 GPUs), an A100 PCIe 40GB node (1 GPU) and a T4 node (4 GPUs).
constexpr const char* kCluster = R"(
nodes:
  - {name: a100-sxm, labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "81920"}}
  - {name: a100-pcie, labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.product: NVIDIA-A100-PCIE-40GB, nvidia.com/gpu.memory: "40960"}}
  - {name: t4, labels: {nvidia.com/gpu.count: "4", nvidia.com/gpu.product: NVIDIA-T4, nvidia.com/gpu.memory: "15360"}}
)";

struct ExamplePod {
  const char* file;
  PodGpuRequest request;
  std::vector<std::string> fits;  // nodes of kCluster the pod may go to
};

const ExamplePod kExamples[] = {
    // Not the T4: its 15 GiB cannot hold the pod's 16 GiB memory limit.
    {"fractional-gpu-pod.yaml", testing::Pod().Fraction(250).Limit(800).Memory(10240).MemoryLimit(16384),
     {"a100-sxm", "a100-pcie"}},
    // Any node with four idle GPUs; which four is the policy's choice.
    {"nvlink-four-gpu-pod.yaml", testing::Pod().Count(4), {"a100-sxm", "t4"}},
    {"gpu-model-pod.yaml",
     testing::Pod()
         .Fraction(500)
         .Memory(30720)
         .Models({"NVIDIA-A100*", "NVIDIA-H100-80GB-HBM3"})
         .ExcludeModels({"NVIDIA-A100-PCIE-40GB"}),
     {"a100-sxm"}},
};

// `node` as the API server would read the YAML file: plain scalars typed
// (null, booleans, integers, floats, else strings), quoted ones strings.
nlohmann::json YamlToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsMap()) {
    nlohmann::json object = nlohmann::json::object();
    for (auto kv : node) object[kv.first.Scalar()] = YamlToJson(kv.second);
    return object;
  }
  if (node.IsSequence()) {
    nlohmann::json array = nlohmann::json::array();
    for (auto item : node) array.push_back(YamlToJson(item));
    return array;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() != "?") return s;  // quoted: a string
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+");
  if (s == "null" || s == "Null" || s == "NULL" || s == "~") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, kInteger)) return std::stoll(s);
  if (std::regex_match(s, kFloat)) return std::stod(s);
  return s;
}

class ExamplePodTest : public ::testing::TestWithParam<ExamplePod> {
 protected:
  YAML::Node Pod() const { return YAML::LoadFile(kExamplesDir + "/" + GetParam().file); }
};

TEST_P(ExamplePodTest, OptsInToTesseraScheduler) {
  const YAML::Node pod = Pod();
  EXPECT_EQ(pod["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(pod["kind"].as<std::string>(), "Pod");
  EXPECT_EQ(pod["spec"]["schedulerName"].as<std::string>(), "tessera-scheduler");
}

TEST_P(ExamplePodTest, EveryContainerSeesTheAssignedGpus) {
  for (const YAML::Node& container : Pod()["spec"]["containers"]) {
    bool found = false;
    for (const YAML::Node& env : container["env"]) {
      if (env["name"].as<std::string>() != "NVIDIA_VISIBLE_DEVICES") continue;
      found = true;
      EXPECT_EQ(env["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(),
                "metadata.annotations['tessera.io/visible-devices']");
    }
    EXPECT_TRUE(found) << container["name"] << " has no NVIDIA_VISIBLE_DEVICES";
  }
}

TEST_P(ExamplePodTest, AnnotationsParseToTheRequestDescribed) {
  k8s::Annotations annotations;
  for (auto kv : Pod()["metadata"]["annotations"]) annotations[kv.first.as<std::string>()] = kv.second.as<std::string>();
  const absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(annotations);
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_TRUE(request->has_value()) << "no tessera.io/ request annotations";
  EXPECT_EQ(**request, GetParam().request);
}

TEST_P(ExamplePodTest, FiltersToTheNodesWhereItFits) {
  // Every node that fits, not only the best-ranked (no shortlist).
  testing::ServiceFixture fixture(kCluster, std::string(testing::kBinpackPolicy) + "shortlist: {maxNodes: 0}\n");
  const nlohmann::json args = {{"Pod", YamlToJson(Pod())}, {"Nodes", nullptr}, {"NodeNames", {"a100-sxm", "a100-pcie", "t4"}}};
  const absl::StatusOr<std::string> answer = fixture.service().Filter(args.dump());
  ASSERT_TRUE(answer.ok()) << answer.status();
  const nlohmann::json result = nlohmann::json::parse(*answer);
  EXPECT_THAT(result["NodeNames"].get<std::vector<std::string>>(), UnorderedElementsAreArray(GetParam().fits)) << result.dump();
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplePodTest, ::testing::ValuesIn(kExamples),
                         [](const ::testing::TestParamInfo<ExamplePod>& info) {
                           std::string name = std::filesystem::path(info.param.file).stem().string();
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Examples, EveryExampleFileIsTested) {
  std::vector<std::string> files, tested;
  for (const auto& entry : std::filesystem::directory_iterator(kExamplesDir)) files.push_back(entry.path().filename().string());
  for (const ExamplePod& e : kExamples) tested.emplace_back(e.file);
  EXPECT_THAT(files, UnorderedElementsAreArray(tested));
}

}  // namespace
}  // namespace tessera::deploy
