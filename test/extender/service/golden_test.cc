// Tessera's answers to real kube-scheduler v1.26 requests (data/kube-scheduler-v1.26),
// as they are and with Tessera's annotations added, checked against golden
// answers in test/golden/. Regenerate after an intended change with
//   scripts/update-golden.sh
// and review the diff.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/extender_args.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FixturePath;
using testing::ReadDataFile;
using testing::ServiceFixture;

// Every recorded request body decodes with the decoder of its verb.
TEST(GoldenFixtures, EveryRecordedRequestDecodes) {
  const fs::path root = FixturePath("");
  // Iterating a missing folder throws; name it instead.
  ASSERT_TRUE(fs::is_directory(root)) << root.string() << ": not a folder of recorded requests";
  int decoded = 0;
  simdjson::dom::parser parser;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    // Top level: "<verb>-request….json"; raw/<run>/: "NNN-<verb>.body.json".
    const bool raw_body = name.ends_with(".body.json");
    const bool request = name.find("-request") != std::string::npos && name != "http-requests.json";
    if (!raw_body && !request) continue;
    const std::string verb = raw_body ? name.substr(name.find('-') + 1, name.find('.') - name.find('-') - 1)
                                      : name.substr(0, name.find('-'));
    SCOPED_TRACE(entry.path().string());
    absl::StatusOr<std::string> body = ReadDataFile(entry.path().string());
    ASSERT_TRUE(body.ok()) << body.status();
    absl::Status status;
    if (verb == "bind") {
      status = k8s::DecodeBindingArgs(*body, parser).status();
    } else if (verb == "preempt") {
      status = k8s::DecodePreemptionArgs(*body, parser).status();
    } else {
      ASSERT_TRUE(verb == "filter" || verb == "prioritize") << verb;
      absl::StatusOr<k8s::ExtenderArgs> args = k8s::DecodeExtenderArgs(*body, parser);
      status = args.status();
      if (args.ok()) {
        EXPECT_FALSE(args->pod.name.empty());
      }
    }
    EXPECT_TRUE(status.ok()) << status;
    ++decoded;
  }
  // 10 top-level requests and 48 raw bodies were recorded.
  EXPECT_EQ(decoded, 58);
}

TEST(GoldenFixtures, PreemptVictimsAreReadInBothForms) {
  absl::StatusOr<std::string> meta_body = ReadDataFile(FixturePath("preempt-request.json"));
  ASSERT_TRUE(meta_body.ok()) << meta_body.status();
  absl::StatusOr<std::string> full_body = ReadDataFile(FixturePath("preempt-request-fullnodes.json"));
  ASSERT_TRUE(full_body.ok()) << full_body.status();
  simdjson::dom::parser parser;
  absl::StatusOr<k8s::ExtenderPreemptionArgs> meta = k8s::DecodePreemptionArgs(*meta_body, parser);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_TRUE(meta->meta_victims);
  EXPECT_EQ(meta->victims.size(), 3u);
  for (const auto& v : meta->victims) EXPECT_EQ(v.pod_uids.size(), 1u) << v.node;
  absl::StatusOr<k8s::ExtenderPreemptionArgs> full = k8s::DecodePreemptionArgs(*full_body, parser);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_FALSE(full->meta_victims);
  EXPECT_EQ(full->victims.size(), 3u);
}

// The fixture cluster with GPUs: gpu-node-1 and -3 carry Tessera's inventory
// (8x A100 80GB), gpu-node-2 GPU Feature Discovery labels (8x T4).
json InventoryAnnotation() {
  json gpus = json::array();
  for (int i = 0; i < 8; ++i) {
    gpus.push_back({{"index", i}, {"uuid", "GPU-fixture-" + std::to_string(i)}, {"model", "NVIDIA-A100-SXM4-80GB"},
                    {"memoryMiB", 81920}, {"numa", i / 4}});
  }
  return gpus;
}

void AddGpusToNodes(json& request) {
  for (json& node : request["Nodes"]["items"]) {
    const std::string name = node["metadata"]["name"];
    if (name == "gpu-node-2") {
      node["metadata"]["labels"]["nvidia.com/gpu.count"] = "8";
      node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-T4";
      node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "15360";
    } else {
      node["metadata"]["annotations"]["tessera.io/gpu-inventory"] = InventoryAnnotation().dump();
    }
  }
}

std::string ClusterWithGpus() {
  std::string inventory = InventoryAnnotation().dump();
  std::string busy_pods;
  for (int i = 0; i < 8; ++i) {
    busy_pods += "  - {namespace: ml, name: busy-" + std::to_string(i) +
                 ", annotations: {tessera.io/gpu-assignment: '{\"node\":\"gpu-node-3\",\"gpus\":[{\"index\":" +
                 std::to_string(i) + ",\"milli\":600}]}'}}\n";
  }
  return "nodes:\n"
         "  - {name: gpu-node-1, annotations: {tessera.io/gpu-inventory: '" + inventory + "'}}\n"
         "  - {name: gpu-node-2, labels: {nvidia.com/gpu.count: \"8\", nvidia.com/gpu.product: NVIDIA-T4, "
         "nvidia.com/gpu.memory: \"15360\"}}\n"
         "  - {name: gpu-node-3, annotations: {tessera.io/gpu-inventory: '" + inventory + "'}}\n"
         "pods:\n"
         "  - {namespace: ml, name: half-0, annotations: {tessera.io/gpu-assignment: "
         "'{\"node\":\"gpu-node-1\",\"gpus\":[{\"index\":0,\"milli\":250,\"memoryMiB\":10240}]}'}}\n" +
         busy_pods;
}

void AskForHalf(json& request) {
  request["Pod"]["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "0.5";
}

void AskForHalfAnA100(json& request) {
  request["Pod"]["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "0.5";
  request["Pod"]["metadata"]["annotations"]["tessera.io/gpu-fraction-limit"] = "0.8";
  request["Pod"]["metadata"]["annotations"]["tessera.io/gpu-memory"] = "20Gi";
  request["Pod"]["metadata"]["annotations"]["tessera.io/gpu-model"] = "NVIDIA-A100*";
}

struct GoldenCase {
  std::string name;
  std::string fixture;
  std::string verb;
  std::function<void(json&)> edit;  // applied to the recorded request; null: sent as recorded
  std::string cluster;              // cluster-file YAML
  std::string golden;               // file under test/golden/
};

std::vector<GoldenCase> Cases() {
  return {
      {"a pod without tessera annotations passes every named node", "filter-request-nodecache.json", "filter", nullptr,
       "", "filter-nodecache-untouched.json"},
      {"a pod without tessera annotations passes every full node, echoed as sent", "filter-request-fullnodes.json",
       "filter", nullptr, "", "filter-fullnodes-untouched.json"},
      {"a pod without tessera annotations passes the nominated node after preemption",
       "filter-request-nodecache-after-preemption.json", "filter", nullptr, "", "filter-after-preemption.json"},
      {"a pod without tessera annotations gets no preference", "prioritize-request.json", "prioritize", nullptr, "",
       "prioritize-nodecache-untouched.json"},
      {"a pod without tessera annotations gets no preference with full nodes", "prioritize-request-fullnodes.json",
       "prioritize", nullptr, "", "prioritize-fullnodes-untouched.json"},
      {"half an A100 with full nodes: T4 node never, busy node not now, free node passes",
       "filter-request-fullnodes.json", "filter",
       [](json& r) { AddGpusToNodes(r); AskForHalfAnA100(r); }, ClusterWithGpus(), "filter-fullnodes-half-a100.json"},
      {"half an A100 by node name: the same verdicts from the model", "filter-request-nodecache.json", "filter",
       AskForHalfAnA100, ClusterWithGpus(), "filter-nodecache-half-a100.json"},
      {"half a GPU by node name: binpack prefers the partly used node over the idle one", "prioritize-request.json",
       "prioritize", AskForHalf, ClusterWithGpus(), "prioritize-nodecache-half-gpu.json"},
      {"an invalid fraction fails the pod once in Error, naming the annotation, with no percent sign",
       "filter-request-nodecache.json", "filter",
       [](json& r) { r["Pod"]["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "1.5"; }, ClusterWithGpus(),
       "filter-nodecache-invalid-fraction.json"},
  };
}

TEST(GoldenAnswers, MatchTheReviewedAnswers) {
  const bool update = std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr;
  for (const GoldenCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::string> recorded = ReadDataFile(FixturePath(c.fixture));
    ASSERT_TRUE(recorded.ok()) << recorded.status();
    std::string body = *std::move(recorded);
    if (c.edit) {
      json request = json::parse(body);
      c.edit(request);
      body = request.dump();
    }
    ServiceFixture fixture(c.cluster);
    absl::StatusOr<std::string> answer =
        c.verb == "filter" ? fixture.service().Filter(body) : fixture.service().Prioritize(body);
    ASSERT_TRUE(answer.ok()) << answer.status();
    const json got = json::parse(*answer);
    const std::string golden_path = std::string(TESSERA_SOURCE_DIR) + "/test/golden/" + c.golden;
    if (update) {
      std::ofstream(golden_path) << got.dump(2) << "\n";
      continue;
    }
    absl::StatusOr<std::string> golden = ReadDataFile(golden_path);
    ASSERT_TRUE(golden.ok()) << golden.status() << " (TESSERA_UPDATE_GOLDEN=1 writes it)";
    const json want = json::parse(*golden);
    EXPECT_EQ(got, want) << "got:\n" << got.dump(2) << "\nwant:\n" << want.dump(2);
  }
}

// Properties that hold whatever the golden files say.
TEST(GoldenAnswers, FullNodesAreEchoedUnchangedAndNamesAreAlwaysAList) {
  absl::StatusOr<std::string> body = ReadDataFile(FixturePath("filter-request-fullnodes.json"));
  ASSERT_TRUE(body.ok()) << body.status();
  ServiceFixture fixture;
  absl::StatusOr<std::string> answer = fixture.service().Filter(*body);
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json got = json::parse(*answer);
  const json sent = json::parse(*body);
  EXPECT_EQ(got["Nodes"]["items"], sent["Nodes"]["items"]);
  ASSERT_TRUE(got["NodeNames"].is_array());
  EXPECT_EQ(got["NodeNames"].size(), sent["Nodes"]["items"].size());
  EXPECT_EQ(got["Error"], "");
}

}  // namespace
}  // namespace tessera
