// Host CPU and memory from the wire and the watch: CPU quantities, a pod's
// effective request as kube-scheduler counts it, a node's allocatable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "k8s/extender_args.h"
#include "k8s/node_allocatable.h"
#include "k8s/pod_host_request.h"
#include "k8s/pod_record.h"
#include "scheduler/model/quantity_parse.h"
#include "test/testing/data_files.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

struct CpuCase {
  std::string name;
  std::string text;
  int64_t milli;  // -1: an error
};

TEST(ParseCpuQuantity, ReadsKubernetesCpuQuantitiesInMilliCpuRoundingUp) {
  const std::vector<CpuCase> cases = {
      {"whole cores", "2", 2000},
      {"milli cores", "500m", 500},
      {"a decimal", "1.5", 1500},
      {"a finer value rounds up to one milli", "0.0001", 1},
      {"micro cores round up", "100u", 1},
      {"an exponent", "1e3", 1000000},
      {"zero", "0", 0},
      {"a negative value is refused", "-1", -1},
      {"nonsense is refused", "two", -1},
      {"an absurd size is refused", "2000000000", -1},
  };
  for (const CpuCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<MilliCpu> got = ParseCpuQuantity(c.text);
    if (c.milli < 0) {
      EXPECT_FALSE(got.ok());
    } else {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->value(), c.milli);
    }
  }
}

struct PodCase {
  std::string name;
  std::string spec;  // the pod's spec, JSON
  int64_t cpu;
  int64_t memory_mib;
};

absl::StatusOr<HostRequest> RequestOf(const std::string& spec, simdjson::dom::parser& parser) {
  const std::string json = R"({"metadata":{"name":"p","uid":"u"},"spec":)" + spec + "}";
  simdjson::dom::element pod;
  if (parser.parse(json).get(pod) != simdjson::SUCCESS) return absl::InvalidArgumentError("test JSON");
  return DecodePodHostRequest(pod);
}

TEST(DecodePodHostRequest, FollowsKubeSchedulersEffectiveRequestRules) {
  const std::vector<PodCase> cases = {
      {"containers add up", R"({"containers":[{"resources":{"requests":{"cpu":"500m","memory":"1Gi"}}},
                                             {"resources":{"requests":{"cpu":"1","memory":"512Mi"}}}]})",
       1500, 1536},
      {"a container without requests counts zero",
       R"({"containers":[{"name":"a"},{"resources":{"limits":{"cpu":"4"}}},{"resources":{"requests":{"cpu":"250m"}}}]})",
       250, 0},
      {"an init container larger than the containers sets the peak",
       R"({"initContainers":[{"resources":{"requests":{"cpu":"4","memory":"100Mi"}}}],
           "containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]})",
       4000, 1024},
      {"init containers take the largest, not the sum",
       R"({"initContainers":[{"resources":{"requests":{"cpu":"2"}}},{"resources":{"requests":{"cpu":"3"}}}],
           "containers":[{"resources":{"requests":{"cpu":"1"}}}]})",
       3000, 0},
      {"a sidecar runs beside the containers and the init containers after it",
       R"({"initContainers":[{"resources":{"requests":{"cpu":"2"}}},
                             {"restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"64Mi"}}},
                             {"resources":{"requests":{"cpu":"3"}}}],
           "containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]})",
       3500, 1088},
      {"overhead adds to the total", R"({"containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}],
                                        "overhead":{"cpu":"250m","memory":"120Mi"}})",
       1250, 1144},
      {"memory rounds up to a whole MiB per container",
       R"({"containers":[{"resources":{"requests":{"memory":"1000000"}}},{"resources":{"requests":{"memory":"1"}}}]})",
       0, 2},
      {"other resources are not read", R"({"containers":[{"resources":{"requests":{"nvidia.com/gpu":"1","ephemeral-storage":"1Gi"}}}]})",
       0, 0},
      {"a pod without containers asks for nothing", R"({})", 0, 0},
  };
  simdjson::dom::parser parser;
  for (const PodCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<HostRequest> got = RequestOf(c.spec, parser);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->cpu.value(), c.cpu);
    EXPECT_EQ(got->memory.value(), c.memory_mib);
  }
}

TEST(DecodePodHostRequest, AnUnreadableQuantityIsAnErrorNamingTheFieldAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"containers":[{"name":"a"},{"resources":{"requests":{"cpu":"two"}}}]})",
       R"(Pod.spec.containers[1].resources.requests.cpu="two": )"},
      {R"({"initContainers":[{"resources":{"requests":{"memory":"-1Gi"}}}]})",
       R"(Pod.spec.initContainers[0].resources.requests.memory="-1Gi": must not be negative)"},
      {R"({"containers":[{"resources":{"requests":{"cpu":2}}}]})",
       "Pod.spec.containers[0].resources.requests.cpu must be a quantity string"},
      {R"({"overhead":{"memory":"lots"}})", R"(Pod.spec.overhead.memory="lots": )"},
      {R"({"containers":{"a":1}})", "Pod.spec.containers must be an array"},
  };
  simdjson::dom::parser parser;
  for (const auto& [spec, message] : cases) {
    SCOPED_TRACE(spec);
    absl::StatusOr<HostRequest> got = RequestOf(spec, parser);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr(message));
  }
}

TEST(DecodePodHostRequest, TheWatchsPodRecordCarriesTheRequestOrWhyNot) {
  simdjson::dom::parser parser;
  simdjson::dom::element pod;
  ASSERT_EQ(parser.parse(std::string(R"({"metadata":{"name":"p","uid":"u"},
      "spec":{"containers":[{"resources":{"requests":{"cpu":"3","memory":"2Gi"}}}]}})")).get(pod), simdjson::SUCCESS);
  absl::StatusOr<PodRecord> record = DecodePodRecord(pod);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->host, (HostRequest{.cpu = MilliCpu(3000), .memory = MemoryMiB(2048)}));
  EXPECT_TRUE(record->host_error.ok());

  ASSERT_EQ(parser.parse(std::string(R"({"metadata":{"name":"p","uid":"u"},
      "spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}})")).get(pod), simdjson::SUCCESS);
  record = DecodePodRecord(pod);
  ASSERT_TRUE(record.ok()) << "an unreadable request is the pod's problem, not the record's";
  EXPECT_EQ(record->host, HostRequest{});
  EXPECT_THAT(record->host_error.message(), HasSubstr(R"(Pod.spec.containers[0].resources.requests.cpu="x")"));
}

TEST(DecodePodHostRequest, RealKubeSchedulerRequestsCarryThePodsHostRequest) {
  // Every recorded pod asks for cpu (500m, or 2 for the preemptor) and 256Mi.
  const std::vector<std::pair<std::string, int64_t>> fixtures = {
      {"filter-request-nodecache.json", 500},
      {"filter-request-fullnodes.json", 500},
      {"prioritize-request.json", 500},
      {"filter-request-nodecache-after-preemption.json", 2000},
  };
  simdjson::dom::parser parser;
  for (const auto& [name, cpu] : fixtures) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::string> body = testing::ReadDataFile(testing::FixturePath(name));
    ASSERT_TRUE(body.ok()) << body.status();
    absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(*body, parser);
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_TRUE(args->pod.host_error.ok()) << args->pod.host_error;
    EXPECT_EQ(args->pod.host, (HostRequest{.cpu = MilliCpu(cpu), .memory = MemoryMiB(256)}));
  }
}

TEST(ParseNodeAllocatable, RealNodesOfferTheirAllocatableCpuAndMemory) {
  // The recorded nodes: allocatable cpu 4, memory 16Gi.
  absl::StatusOr<std::string> body = testing::ReadDataFile(testing::FixturePath("filter-request-fullnodes.json"));
  ASSERT_TRUE(body.ok()) << body.status();
  simdjson::dom::parser parser;
  absl::StatusOr<ExtenderArgs> args = DecodeExtenderArgs(*body, parser);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_TRUE(args->nodes.has_value());
  ASSERT_FALSE(args->nodes->empty());
  for (const WireNode& node : *args->nodes) {
    SCOPED_TRACE(node.name);
    absl::StatusOr<std::optional<HostResources>> host = ParseNodeAllocatable(node.allocatable_cpu, node.allocatable_memory);
    ASSERT_TRUE(host.ok()) << host.status();
    ASSERT_TRUE(host->has_value());
    EXPECT_EQ(**host, (HostResources{.cpu_capacity = MilliCpu(4000), .memory_capacity = MemoryMiB(16384)}));
  }
}

TEST(ParseNodeAllocatable, AMissingEntryLeavesTheHostUnknownAndABadOneIsAnError) {
  absl::StatusOr<std::optional<HostResources>> host = ParseNodeAllocatable("8", std::nullopt);
  ASSERT_TRUE(host.ok());
  EXPECT_FALSE(host->has_value()) << "memory unknown: the host is unknown";
  host = ParseNodeAllocatable("7910m", "32780516Ki");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(**host, (HostResources{.cpu_capacity = MilliCpu(7910), .memory_capacity = MemoryMiB(32013)}))
      << "32780516Ki is 32012.2 MiB, rounded up as pods' requests are";
  host = ParseNodeAllocatable("lots", "1Gi");
  ASSERT_FALSE(host.ok());
  EXPECT_THAT(host.status().message(), HasSubstr(R"(status.allocatable.cpu="lots": )"));
}

}  // namespace
}  // namespace tessera::k8s
