#include "k8s/gpu_assignment.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/builders.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using testing::Share;

GpuAssignment Assignment(std::string node, std::vector<GpuShare> gpus) {
  return GpuAssignment{std::move(node), std::move(gpus)};
}

constexpr char kHeaderExample[] =
    R"({"node":"n1","gpus":[{"index":0,"uuid":"GPU-..","milli":250,"limitMilli":800,)"
    R"("memoryMiB":10240,"memoryLimitMiB":20480}]})";

void ExpectSameShares(const GpuAssignment& got, const GpuAssignment& want) {
  EXPECT_EQ(got.node, want.node);
  ASSERT_EQ(got.gpus.size(), want.gpus.size());
  for (size_t i = 0; i < want.gpus.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("gpus[", i, "]"));
    EXPECT_EQ(got.gpus[i].index, want.gpus[i].index);
    EXPECT_EQ(got.gpus[i].uuid, want.gpus[i].uuid);
    EXPECT_EQ(got.gpus[i].guaranteed.value(), want.gpus[i].guaranteed.value());
    EXPECT_EQ(got.gpus[i].limit.value(), want.gpus[i].limit.value());
    EXPECT_EQ(got.gpus[i].memory.value(), want.gpus[i].memory.value());
    EXPECT_EQ(got.gpus[i].memory_limit.value(), want.gpus[i].memory_limit.value());
  }
}

struct Accepted {
  std::string name;
  std::string json;
  GpuAssignment want;
};

TEST(ParseGpuAssignment, ReadsTheSchemaAndItsDefaults) {
  const std::vector<Accepted> cases = {
      {"the documented example", kHeaderExample,
       Assignment("n1", {Share(0, 250, 10240).Limit(800).MemoryLimit(20480).Uuid("GPU-..")})},
      {"limits default to the guarantees",
       R"({"node":"n1","gpus":[{"index":0,"milli":250,"memoryMiB":512}]})",
       Assignment("n1", {Share(0, 250, 512)})},
      {"memory defaults to zero", R"({"node":"n1","gpus":[{"index":3,"milli":1000}]})",
       Assignment("n1", {Share(3, 1000)})},
      {"a memory limit without memory", R"({"node":"n1","gpus":[{"index":0,"milli":10,"memoryLimitMiB":64}]})",
       Assignment("n1", {Share(0, 10).MemoryLimit(64)})},
      {"keys in any order, unknown keys ignored, GPU order kept",
       R"({"version":2,"gpus":[{"milli":500,"index":7,"future":[1,2]},{"index":2,"milli":1,"limitMilli":1000}],)"
       R"( "node":"gpu-node-17"})",
       Assignment("gpu-node-17", {Share(7, 500), Share(2, 1).Limit(1000)})},
      {"an empty uuid is no uuid", R"({"node":"n","gpus":[{"index":0,"uuid":"","milli":1}]})",
       Assignment("n", {Share(0, 1)})},
      {"escaped strings are decoded", R"({"node":"n\"1\u00e9","gpus":[{"index":255,"uuid":"GPU-\\x","milli":1}]})",
       Assignment("n\"1\xc3\xa9", {Share(255, 1).Uuid("GPU-\\x")})},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<GpuAssignment> got = ParseGpuAssignment(c.json);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameShares(*got, c.want);
    EXPECT_EQ(*got, c.want);
  }
}

struct Refused {
  std::string name;
  std::string json;
  std::string message;  // a substring of the status message
};

TEST(ParseGpuAssignment, RefusesWhatViolatesTheSchema) {
  const std::string kAnn = "annotation tessera.io/gpu-assignment: ";
  auto one = [](const std::string& gpu) { return absl::StrCat(R"({"node":"n1","gpus":[{)", gpu, "}]}"); };
  const std::vector<Refused> cases = {
      {"text that is not JSON", "node=n1", kAnn + "not valid JSON"},
      {"an empty annotation", "", kAnn + "not valid JSON"},
      {"a list instead of an object", "[]", kAnn + "must be a JSON object"},
      {"no node", R"({"gpus":[{"index":0,"milli":1}]})", kAnn + R"("node" is required)"},
      {"an empty node", R"({"node":"","gpus":[{"index":0,"milli":1}]})", kAnn + R"("node" must be a non-empty string)"},
      {"a node that is not a string", R"({"node":1,"gpus":[{"index":0,"milli":1}]})",
       kAnn + R"("node" must be a non-empty string)"},
      {"no gpus", R"({"node":"n1"})", kAnn + R"("gpus" is required)"},
      {"an empty gpu list", R"({"node":"n1","gpus":[]})", kAnn + R"("gpus" must be a list of 1..64 GPUs)"},
      {"gpus that are not a list", R"({"node":"n1","gpus":{}})", kAnn + R"("gpus" must be a list of 1..64 GPUs)"},
      {"a gpu that is not an object", R"({"node":"n1","gpus":[0]})", kAnn + "gpus[0]: must be a JSON object"},
      {"a gpu without an index", one(R"("milli":1)"), kAnn + R"(gpus[0]: "index" is required)"},
      {"a negative index", one(R"("index":-1,"milli":1)"), kAnn + R"(gpus[0]: "index" must be an integer in 0..255)"},
      {"an index above 255", one(R"("index":256,"milli":1)"), kAnn + R"(gpus[0]: "index" must be an integer in 0..255)"},
      {"a repeated index", R"({"node":"n1","gpus":[{"index":4,"milli":1},{"index":4,"milli":1}]})",
       kAnn + R"(gpus[1]: "index" 4 repeats gpus[0])"},
      {"a MIG instance that is not an object", one(R"("index":0,"milli":142,"mig":"1g.10gb")"),
       kAnn + R"(gpus[0]: "mig": must be a JSON object)"},
      {"a MIG instance without a profile", one(R"("index":0,"milli":142,"mig":{"start":0})"),
       kAnn + R"(gpus[0]: "mig": "profile" is required)"},
      {"a MIG instance without a start", one(R"("index":0,"milli":142,"mig":{"profile":"1g.10gb"})"),
       kAnn + R"(gpus[0]: "mig": "start" is required)"},
      {"a MIG start past the last slice", one(R"("index":0,"milli":142,"mig":{"profile":"1g.10gb","start":8})"),
       kAnn + R"(gpus[0]: "mig": "start" must be a slice in 0..7)"},
      {"a gpu without milli", one(R"("index":0)"), kAnn + R"(gpus[0]: "milli" is required)"},
      {"zero milli", one(R"("index":0,"milli":0)"), kAnn + R"(gpus[0]: "milli" must be an integer in 1..1000)"},
      {"more than a whole GPU", one(R"("index":0,"milli":1001)"),
       kAnn + R"(gpus[0]: "milli" must be an integer in 1..1000)"},
      {"a decimal milli", one(R"("index":0,"milli":2.5)"), kAnn + R"(gpus[0]: "milli" must be an integer in 1..1000)"},
      {"a limit below the guarantee", one(R"("index":0,"milli":250,"limitMilli":100)"),
       kAnn + R"(gpus[0]: "limitMilli" 100 is below "milli" 250)"},
      {"a limit above a whole GPU", one(R"("index":0,"milli":250,"limitMilli":1001)"),
       kAnn + R"(gpus[0]: "limitMilli" must be an integer in 1..1000)"},
      {"negative memory", one(R"("index":0,"milli":1,"memoryMiB":-1)"),
       kAnn + R"(gpus[0]: "memoryMiB" must be a non-negative integer)"},
      {"memory beyond an EiB", one(R"("index":0,"milli":1,"memoryMiB":1099511627777)"),
       kAnn + R"(gpus[0]: "memoryMiB" must be a non-negative integer)"},
      {"a memory limit below the memory", one(R"("index":0,"milli":1,"memoryMiB":20,"memoryLimitMiB":10)"),
       kAnn + R"(gpus[0]: "memoryLimitMiB" 10 is below "memoryMiB" 20)"},
      {"a memory limit that is not a number", one(R"("index":0,"milli":1,"memoryLimitMiB":"1Gi")"),
       kAnn + R"(gpus[0]: "memoryLimitMiB" must be a non-negative integer)"},
      {"a uuid that is not a string", one(R"("index":0,"milli":1,"uuid":null)"),
       kAnn + R"(gpus[0]: "uuid" must be a string)"},
      {"every problem is reported", R"({"node":"","gpus":[{"index":0},{"index":0,"milli":1,"limitMilli":0}]})",
       kAnn + R"("node" must be a non-empty string; )" + kAnn + R"(gpus[0]: "milli" is required; )" + kAnn +
           R"(gpus[1]: "limitMilli" must be an integer in 1..1000)"},
      {"an annotation longer than Kubernetes allows", std::string(256 * 1024 + 1, ' '),
       kAnn + "longer than 262144 bytes"},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<GpuAssignment> got = ParseGpuAssignment(c.json);
    ASSERT_FALSE(got.ok()) << "parsed for node " << got->node;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
}

TEST(ParseGpuAssignment, RefusesMoreThanSixtyFourGpus) {
  std::string json = R"({"node":"n1","gpus":[)";
  for (int i = 0; i < 65; ++i) absl::StrAppend(&json, i > 0 ? "," : "", R"({"index":)", i, R"(,"milli":1})");
  json += "]}";
  absl::StatusOr<GpuAssignment> got = ParseGpuAssignment(json);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(R"("gpus" must be a list of 1..64 GPUs)"));
}

TEST(FormatGpuAssignment, WritesCompactJsonInSchemaOrder) {
  struct Case {
    std::string name;
    GpuAssignment assignment;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"the documented example",
       Assignment("n1", {Share(0, 250, 10240).Limit(800).MemoryLimit(20480).Uuid("GPU-..")}), kHeaderExample},
      {"an empty uuid is left out and every number is written",
       Assignment("n2", {Share(1, 1000), Share(0, 500, 1).Limit(700).MemoryLimit(2).Uuid("GPU-x")}),
       R"({"node":"n2","gpus":[{"index":1,"milli":1000,"limitMilli":1000,"memoryMiB":0,"memoryLimitMiB":0},)"
       R"({"index":0,"uuid":"GPU-x","milli":500,"limitMilli":700,"memoryMiB":1,"memoryLimitMiB":2}]})"},
      {"strings are escaped", Assignment("a\"b\\c\nd\te\x01\xc3\xa9", {Share(0, 1).Uuid("\x1f")}),
       R"({"node":"a\"b\\c\nd\te\u0001)" "\xc3\xa9"
       R"(","gpus":[{"index":0,"uuid":"\u001f","milli":1,"limitMilli":1,"memoryMiB":0,"memoryLimitMiB":0}]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatGpuAssignment(c.assignment), c.want);
  }
}

TEST(GpuAssignmentRoundTrip, ParseOfFormatIsTheIdentity) {
  std::vector<GpuShare> eight;
  for (int32_t i = 0; i < 8; ++i) {
    eight.push_back(
        Share(7 - i, 125 * (i + 1), 1024 * i).Limit(1000).MemoryLimit(2048 * i).Uuid("GPU-" + std::to_string(i)));
  }
  const std::vector<std::pair<std::string, GpuAssignment>> cases = {
      {"a single quarter GPU", Assignment("n1", {Share(0, 250)})},
      {"the documented example",
       Assignment("n1", {Share(0, 250, 10240).Limit(800).MemoryLimit(20480).Uuid("GPU-..")})},
      {"eight GPUs in descending index order", Assignment("dgx-a100-01.example.com", eight)},
      {"extreme values",
       Assignment("n", {Share(255, 1).Limit(1000).MemoryLimit(int64_t{1} << 40), Share(0, 1000, int64_t{1} << 40)})},
      {"strings that need escaping",
       Assignment("n\"\\/\b\f\n\r\t\x01\x7f\xe2\x82\xac", {Share(0, 1, 3).Limit(2).MemoryLimit(4).Uuid("\"")})},
      {"a MIG instance with its uuid", Assignment("n1", {Share(3, 428, 40960).Mig("3g.40gb", 4, "MIG-abc")})},
      {"a MIG instance whose uuid is unknown", Assignment("n1", {Share(0, 142, 10240).Mig("1g.10gb", 6)})},
  };
  for (const auto& [name, assignment] : cases) {
    SCOPED_TRACE(name);
    const std::string json = FormatGpuAssignment(assignment);
    absl::StatusOr<GpuAssignment> parsed = ParseGpuAssignment(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << " for " << json;
    ExpectSameShares(*parsed, assignment);
    EXPECT_EQ(*parsed, assignment);
    EXPECT_EQ(FormatGpuAssignment(*parsed), json);
  }
}

TEST(FormatVisibleDevices, NamesEachGpuOrMigInstanceByUuidOrAllByIndexAndAnUnnamedMigInstanceNotAtAll) {
  const std::vector<std::tuple<std::string, GpuAssignment, std::string>> cases = {
      {"GPUs with uuids", Assignment("n", {Share(0, 1000).Uuid("GPU-a"), Share(3, 1000).Uuid("GPU-b")}), "GPU-a,GPU-b"},
      {"a GPU without a uuid makes every GPU an index",
       Assignment("n", {Share(0, 1000).Uuid("GPU-a"), Share(3, 1000)}), "0,3"},
      {"a MIG instance is named by its own uuid, not its GPU's",
       Assignment("n", {Share(2, 428).Uuid("GPU-a").Mig("3g.40gb", 4, "MIG-x")}), "MIG-x"},
      {"a MIG instance without a uuid is named by nothing: its GPU's index would hand over the whole GPU",
       Assignment("n", {Share(2, 428).Uuid("GPU-a").Mig("3g.40gb", 4)}), ""},
  };
  for (const auto& [name, assignment, want] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(FormatVisibleDevices(assignment), want);
  }
  // Other vendors' runtimes take the node's device indices, UUIDs known or not.
  EXPECT_EQ(FormatVisibleDevices(Assignment("n", {Share(1, 1000).Uuid("GPU-a"), Share(3, 1000).Uuid("GPU-b")}),
                                 GpuVendor::kAmd),
            "1,3");
}

// Parsed strings are copies: a later parse on the same thread (which reuses
// the parser's buffers) does not change an earlier result.
TEST(ParseGpuAssignment, ResultsOutliveTheNextParse) {
  absl::StatusOr<GpuAssignment> first = ParseGpuAssignment(kHeaderExample);
  ASSERT_TRUE(first.ok());
  absl::StatusOr<GpuAssignment> second =
      ParseGpuAssignment(R"({"node":"another-node-name","gpus":[{"index":1,"uuid":"GPU-zzzzzz","milli":5}]})");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->node, "n1");
  EXPECT_EQ(first->gpus[0].uuid, "GPU-..");
  EXPECT_EQ(second->node, "another-node-name");
}

}  // namespace
}  // namespace tessera::k8s
