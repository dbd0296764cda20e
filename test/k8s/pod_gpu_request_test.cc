#include "k8s/pod_gpu_request.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/builders.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using testing::Pod;

struct Accepted {
  std::string name;
  Annotations annotations;
  std::optional<PodGpuRequest> want;
};

TEST(ParsePodGpuRequest, ReadsEveryAcceptedForm) {
  const std::vector<Accepted> cases = {
      {"a pod without annotations is not a GPU pod", {}, std::nullopt},
      {"an assignment alone is not a request",
       {{"tessera.io/gpu-assignment", R"({"node":"n1","gpus":[{"index":0,"milli":1000}]})"}},
       std::nullopt},
      {"unrelated tessera and nvidia keys are not a request",
       {{"tessera.io/other", "x"}, {"nvidia.com/gpu.count", "8"}, {"gpu-count", "2"}},
       std::nullopt},
      {"a count alone asks for whole GPUs", {{"tessera.io/gpu-count", "2"}}, Pod().Count(2)},
      {"a count of one is the default made explicit", {{"tessera.io/gpu-count", "1"}}, Pod().Count(1)},
      {"sixty-four GPUs is the largest count", {{"tessera.io/gpu-count", "64"}}, Pod().Count(64)},
      {"a model list alone asks for one whole GPU", {{"tessera.io/gpu-model", "A100"}},
       Pod().Models({"A100"})},
      {"an exclusion alone asks for one whole GPU", {{"tessera.io/gpu-model-exclude", "T4"}},
       Pod().ExcludeModels({"T4"})},
      {"a fraction asks for a share", {{"tessera.io/gpu-fraction", "0.25"}}, Pod().Fraction(250)},
      {"a percentage asks for a share", {{"tessera.io/gpu-fraction", "25%"}}, Pod().Fraction(250)},
      {"a fraction of one is still a shared request", {{"tessera.io/gpu-fraction", "1"}}, Pod().Fraction(1000)},
      {"a limit above the fraction allows bursting",
       {{"tessera.io/gpu-fraction", "0.25"}, {"tessera.io/gpu-fraction-limit", "0.5"}}, Pod().Fraction(250).Limit(500)},
      {"a limit equal to the fraction in another form",
       {{"tessera.io/gpu-fraction", "0.5"}, {"tessera.io/gpu-fraction-limit", "50%"}}, Pod().Fraction(500)},
      {"a limit of a whole GPU", {{"tessera.io/gpu-fraction", ".1"}, {"tessera.io/gpu-fraction-limit", "1.0"}},
       Pod().Fraction(100).Limit(1000)},
      {"memory alone defaults its limit to itself", {{"tessera.io/gpu-memory", "10Gi"}},
       Pod().Memory(10240)},
      {"memory with a higher limit",
       {{"tessera.io/gpu-memory", "10Gi"}, {"tessera.io/gpu-memory-limit", "20Gi"}},
       Pod().Memory(10240).MemoryLimit(20480)},
      {"memory is rounded up to whole MiB", {{"tessera.io/gpu-memory", "1G"}}, Pod().Memory(954)},
      {"a limit equal to the memory in another unit",
       {{"tessera.io/gpu-memory", "1Gi"}, {"tessera.io/gpu-memory-limit", "1024Mi"}},
       Pod().Memory(1024)},
      {"a MIG profile asks for one instance and counts its compute and memory", {{"tessera.io/mig-profile", "3g.40gb"}},
       Pod().MigProfile("3g.40gb")},
      {"a MIG profile with a model and a count of one",
       {{"tessera.io/mig-profile", " 1g.10gb "}, {"tessera.io/gpu-count", "1"}, {"tessera.io/gpu-model", "H100*"}},
       Pod().MigProfile("1g.10gb").Models({"H100*"})},
      {"a vendor list selects vendors", {{"tessera.io/gpu-vendor", "amd, nvidia,amd"}},
       Pod().Vendors({GpuVendor::kAmd, GpuVendor::kNvidia})},
      {"model lists are trimmed and repeats collapse",
       {{"tessera.io/gpu-model", " A100 ,H100,A100 "}, {"tessera.io/gpu-model-exclude", "T4 , V100"}},
       Pod().Models({"A100", "H100"}).ExcludeModels({"T4", "V100"})},
      {"model names are compared exactly, so case differs",
       {{"tessera.io/gpu-model", "a100"}, {"tessera.io/gpu-model-exclude", "A100"}},
       Pod().Models({"a100"}).ExcludeModels({"A100"})},
      {"everything at once",
       {{"tessera.io/gpu-count", "2"},
        {"tessera.io/gpu-fraction", "0.3"},
        {"tessera.io/gpu-fraction-limit", "60%"},
        {"tessera.io/gpu-memory", "8Gi"},
        {"tessera.io/gpu-memory-limit", "16Gi"},
        {"tessera.io/gpu-model", "NVIDIA-A100-SXM4-80GB,NVIDIA-H100-80GB-HBM3"},
        {"tessera.io/gpu-model-exclude", "Tesla-T4"},
        {"tessera.io/gpu-assignment", "ignored"}},
       Pod()
           .Count(2)
           .Fraction(300)
           .Limit(600)
           .Memory(8192)
           .MemoryLimit(16384)
           .Models({"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"})
           .ExcludeModels({"Tesla-T4"})},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::optional<PodGpuRequest>> got = ParsePodGpuRequest(c.annotations);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->has_value(), c.want.has_value());
    if (!c.want) continue;
    const PodGpuRequest& r = **got;
    EXPECT_EQ(r.count, c.want->count);
    EXPECT_EQ(r.whole_gpu, c.want->whole_gpu);
    EXPECT_EQ(r.guaranteed.value(), c.want->guaranteed.value());
    EXPECT_EQ(r.limit.value(), c.want->limit.value());
    EXPECT_EQ(r.memory.value(), c.want->memory.value());
    EXPECT_EQ(r.memory_limit.value(), c.want->memory_limit.value());
    EXPECT_EQ(r.models, c.want->models);
    EXPECT_EQ(r.excluded_models, c.want->excluded_models);
    EXPECT_EQ(r, *c.want);  // and nothing else differs
  }
}

struct Refused {
  std::string name;
  Annotations annotations;
  std::vector<std::string> messages;  // each a substring of the status message
};

TEST(ParsePodGpuRequest, RefusesMalformedOrInconsistentAnnotations) {
  const std::vector<Refused> cases = {
      {"a count of zero is refused", {{"tessera.io/gpu-count", "0"}},
       {R"(tessera.io/gpu-count="0": must be an integer in 1..64)"}},
      {"a count above sixty-four is refused", {{"tessera.io/gpu-count", "65"}},
       {R"(tessera.io/gpu-count="65": must be an integer in 1..64)"}},
      {"a fractional count is refused", {{"tessera.io/gpu-count", "1.5"}},
       {R"(tessera.io/gpu-count="1.5": must be an integer in 1..64)"}},
      {"a negative count is refused", {{"tessera.io/gpu-count", "-1"}},
       {R"(tessera.io/gpu-count="-1": must be an integer in 1..64)"}},
      {"a word for a count is refused", {{"tessera.io/gpu-count", "two"}},
       {R"(tessera.io/gpu-count="two": must be an integer in 1..64)"}},
      {"a fraction above one is refused", {{"tessera.io/gpu-fraction", "1.5"}},
       {R"(tessera.io/gpu-fraction="1.5": must be in (0, 1] or (0%, 100%])"}},
      {"a fraction of zero is refused", {{"tessera.io/gpu-fraction", "0"}},
       {R"(tessera.io/gpu-fraction="0": must be in (0, 1] or (0%, 100%])"}},
      {"a fraction finer than a percent is refused", {{"tessera.io/gpu-fraction", "0.255"}},
       {R"(tessera.io/gpu-fraction="0.255": must be a whole percent)"}},
      {"a fractional percentage is refused", {{"tessera.io/gpu-fraction", "25.5%"}},
       {R"(tessera.io/gpu-fraction="25.5%": must be a whole percent)"}},
      {"a fraction that is not a number is refused", {{"tessera.io/gpu-fraction", "half"}},
       {R"(tessera.io/gpu-fraction="half": must be a decimal such as 0.25 or a percentage such as 25%)"}},
      {"an empty fraction is refused", {{"tessera.io/gpu-fraction", ""}},
       {R"(tessera.io/gpu-fraction="": must be a decimal)"}},
      {"a limit below the fraction is refused",
       {{"tessera.io/gpu-fraction", "0.5"}, {"tessera.io/gpu-fraction-limit", "0.2"}},
       {R"(tessera.io/gpu-fraction-limit="0.2" is below tessera.io/gpu-fraction="0.5")"}},
      {"a limit without a fraction is refused", {{"tessera.io/gpu-fraction-limit", "0.5"}},
       {R"(tessera.io/gpu-fraction-limit="0.5" requires tessera.io/gpu-fraction)"}},
      {"an unknown vendor is refused", {{"tessera.io/gpu-vendor", "nvidia,acme"}},
       {R"(tessera.io/gpu-vendor="nvidia,acme": "acme" is not a vendor (nvidia, amd, intel, ascend, cambricon, hygon))"}},
      {"a MIG profile that is not spelled as one is refused", {{"tessera.io/mig-profile", "large"}},
       {R"(tessera.io/mig-profile="large": must be a MIG profile such as 1g.10gb)"}},
      {"a MIG profile with a share beside it is refused",
       {{"tessera.io/mig-profile", "1g.10gb"}, {"tessera.io/gpu-fraction", "0.5"}},
       {R"(tessera.io/mig-profile="1g.10gb" comes with its own compute and memory: drop tessera.io/gpu-fraction="0.5")"}},
      {"two MIG instances in one pod are refused", {{"tessera.io/mig-profile", "1g.10gb"}, {"tessera.io/gpu-count", "2"}},
       {R"(places one MIG instance per pod: drop tessera.io/gpu-count="2")"}},
      {"a limit above one is refused",
       {{"tessera.io/gpu-fraction", "0.5"}, {"tessera.io/gpu-fraction-limit", "2"}},
       {R"(tessera.io/gpu-fraction-limit="2": must be in (0, 1] or (0%, 100%])"}},
      {"a malformed limit without a fraction gets both errors", {{"tessera.io/gpu-fraction-limit", "x"}},
       {R"(tessera.io/gpu-fraction-limit="x": must be a decimal)",
        R"(tessera.io/gpu-fraction-limit="x" requires tessera.io/gpu-fraction)"}},
      {"memory with a made-up suffix is refused", {{"tessera.io/gpu-memory", "10GB"}},
       {R"(tessera.io/gpu-memory="10GB": unknown suffix "GB")"}},
      {"negative memory is refused", {{"tessera.io/gpu-memory", "-1Gi"}},
       {R"(tessera.io/gpu-memory="-1Gi": must not be negative)"}},
      {"milli-byte memory is refused as a likely typo", {{"tessera.io/gpu-memory", "512m"}},
       {R"(tessera.io/gpu-memory="512m": suffix "m" is a fraction of a byte)"}},
      {"memory beyond an EiB is refused", {{"tessera.io/gpu-memory", "2Ei"}},
       {R"(tessera.io/gpu-memory="2Ei": exceeds 1Ei)"}},
      {"a memory limit below the memory is refused",
       {{"tessera.io/gpu-memory", "2Gi"}, {"tessera.io/gpu-memory-limit", "1Gi"}},
       {R"(tessera.io/gpu-memory-limit="1Gi" is below tessera.io/gpu-memory="2Gi")"}},
      {"a memory limit without memory is refused", {{"tessera.io/gpu-memory-limit", "1Gi"}},
       {R"(tessera.io/gpu-memory-limit="1Gi" requires tessera.io/gpu-memory)"}},
      {"a malformed memory limit is refused",
       {{"tessera.io/gpu-memory", "1Gi"}, {"tessera.io/gpu-memory-limit", "1 Gi"}},
       {R"(tessera.io/gpu-memory-limit="1 Gi": must not contain whitespace)"}},
      {"an empty item in the model list is refused", {{"tessera.io/gpu-model", "A100,,H100"}},
       {R"(tessera.io/gpu-model="A100,,H100": model names must not be empty)"}},
      {"a trailing comma in the model list is refused", {{"tessera.io/gpu-model", "A100,"}},
       {R"(tessera.io/gpu-model="A100,": model names must not be empty)"}},
      {"an empty model list is refused", {{"tessera.io/gpu-model", ""}},
       {R"(tessera.io/gpu-model="": model names must not be empty)"}},
      {"a blank exclusion list is refused", {{"tessera.io/gpu-model-exclude", " , "}},
       {R"(tessera.io/gpu-model-exclude=" , ": model names must not be empty)"}},
      {"a model both accepted and excluded is refused",
       {{"tessera.io/gpu-model", "A100"}, {"tessera.io/gpu-model-exclude", "T4, A100"}},
       {R"(tessera.io/gpu-model-exclude="T4, A100": "A100" is also accepted by tessera.io/gpu-model="A100")"}},
      {"quotes in a value are escaped in the message", {{"tessera.io/gpu-fraction", "\"1\""}},
       {R"(tessera.io/gpu-fraction="\"1\"": must be a decimal)"}},
      {"a very long value is cut in the message", {{"tessera.io/gpu-count", std::string(1000, '9')}},
       {"tessera.io/gpu-count=\"" + std::string(128, '9') + "...\": must be an integer in 1..64"}},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::optional<PodGpuRequest>> got = ParsePodGpuRequest(c.annotations);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& m : c.messages) EXPECT_THAT(std::string(got.status().message()), HasSubstr(m));
  }
}

TEST(ParsePodGpuRequest, ReportsEveryErrorAtOnceInAnnotationOrder) {
  const Annotations annotations = {
      {"tessera.io/gpu-model-exclude", "A100"},
      {"tessera.io/gpu-memory", "x"},
      {"tessera.io/gpu-fraction", "2"},
      {"tessera.io/gpu-count", "0"},
      {"tessera.io/gpu-model", "A100"},
  };
  absl::StatusOr<std::optional<PodGpuRequest>> got = ParsePodGpuRequest(annotations);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            R"(tessera.io/gpu-count="0": must be an integer in 1..64; )"
            R"(tessera.io/gpu-fraction="2": must be in (0, 1] or (0%, 100%]; )"
            R"(tessera.io/gpu-memory="x": is not a Kubernetes quantity )"
            R"((expected a number with an optional suffix, e.g. 512Mi, 16Gi or 10G); )"
            R"(tessera.io/gpu-model-exclude="A100": "A100" is also accepted by tessera.io/gpu-model="A100")");
}

}  // namespace
}  // namespace tessera::k8s
