// The webhook's mutation: each case is a pod as a user writes it, and what
// the pod looks like once the patch is applied (nlohmann's RFC 6902 patch,
// as the API server applies it); applying the webhook again changes nothing.
#include "k8s/admission/pod_mutation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::k8s {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

// A pod with these annotations and containers (each container: its resources, "" for none).
json PodWith(json annotations, std::vector<json> container_resources = {json()}, std::string scheduler = "") {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ns"}}},
              {"spec", {{"containers", json::array()}}}};
  if (!annotations.is_null()) pod["metadata"]["annotations"] = annotations;
  if (!scheduler.empty()) pod["spec"]["schedulerName"] = scheduler;
  int i = 0;
  for (const json& r : container_resources) {
    // Appended, not "c" + to_string(): gcc 12 -O2 warns (-Werror=restrict) on that.
    std::string name = "c";
    name += std::to_string(i++);
    json c = {{"name", name}, {"image", "cuda"}};
    if (!r.is_null()) c["resources"] = r;
    pod["spec"]["containers"].push_back(c);
  }
  return pod;
}

json Resources(const std::string& milli, const std::string& mib = "") {
  json amounts = {{"tessera.io/gpu-milli", milli}};
  if (!mib.empty()) amounts["tessera.io/gpu-memory-mib"] = mib;
  return {{"requests", amounts}, {"limits", amounts}};
}

// A container's resources asking for `count` nvidia.com/mig-<profile>.
json MigResource(const std::string& profile, const std::string& count) {
  const json amounts = {{"nvidia.com/mig-" + profile, count}};
  return {{"requests", amounts}, {"limits", amounts}};
}

json Applied(const json& pod, const PodMutationOptions& options = {}) {
  absl::StatusOr<std::vector<JsonPatchOp>> ops = MutateGpuPod(pod, options);
  EXPECT_TRUE(ops.ok()) << ops.status();
  if (!ops.ok()) return pod;
  const json mutated = pod.patch(json::parse(FormatJsonPatch(*ops)));
  absl::StatusOr<std::vector<JsonPatchOp>> again = MutateGpuPod(mutated, options);
  EXPECT_TRUE(again.ok() && again->empty()) << "not idempotent: " << (again.ok() ? FormatJsonPatch(*again) : "error");
  return mutated;
}

std::string Env(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : e["valueFrom"].dump();
  }
  return "<unset>";
}

constexpr char kVisibleDevicesRef[] =
    R"({"fieldRef":{"fieldPath":"metadata.annotations['tessera.io/visible-devices']"}})";

TEST(PodMutationTest, AHalfGpuPodByAnnotationGetsResourcesTheSchedulerAndItsDevices) {
  const json pod = Applied(PodWith({{"tessera.io/gpu-fraction", "0.5"}, {"tessera.io/gpu-memory", "10Gi"}}));
  EXPECT_EQ(pod["spec"]["schedulerName"], "tessera-scheduler");
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["resources"], Resources("500", "10240"));
  EXPECT_EQ(Env(c, "NVIDIA_VISIBLE_DEVICES"), kVisibleDevicesRef);
  EXPECT_EQ(Env(c, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "<unset>") << "no enforcement layer was chosen";
}

TEST(PodMutationTest, TwoWholeGpusCountTwoThousandMilliAndTheirMemoryTwice) {
  const json pod = Applied(PodWith({{"tessera.io/gpu-count", "2"}, {"tessera.io/gpu-memory", "40Gi"}}));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"], Resources("2000", "81920"));
}

TEST(PodMutationTest, ResourcesAreAddedBesideTheContainersOwnCpuAndMemory) {
  const json own = {{"requests", {{"cpu", "2"}}}, {"limits", {{"memory", "4Gi"}}}};
  const json pod = Applied(PodWith({{"tessera.io/gpu-fraction", "0.25"}}, {own}));
  const json& r = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(r["requests"], (json{{"cpu", "2"}, {"tessera.io/gpu-milli", "250"}}));
  EXPECT_EQ(r["limits"], (json{{"memory", "4Gi"}, {"tessera.io/gpu-milli", "250"}}));
}

TEST(PodMutationTest, APodAskingForNoGpuIsLeftAlone) {
  absl::StatusOr<std::vector<JsonPatchOp>> ops = MutateGpuPod(PodWith({{"team", "a"}}), {});
  ASSERT_TRUE(ops.ok());
  EXPECT_TRUE(ops->empty());
}

TEST(PodMutationTest, HandWrittenResourcesBecomeTheAnnotationsTesseraPlacesBy) {
  struct Case {
    std::string name;
    json resources;
    json annotations;
  };
  const std::vector<Case> cases = {
      {"a quarter", Resources("250"), {{"tessera.io/gpu-fraction", "0.25"}}},
      {"a quarter with memory", Resources("250", "8192"),
       {{"tessera.io/gpu-fraction", "0.25"}, {"tessera.io/gpu-memory", "8192Mi"}}},
      {"two whole GPUs", Resources("2000", "20480"), {{"tessera.io/gpu-count", "2"}, {"tessera.io/gpu-memory", "10240Mi"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json pod = Applied(PodWith(nullptr, {c.resources}));
    EXPECT_EQ(pod["metadata"]["annotations"], c.annotations);
    EXPECT_EQ(pod["spec"]["containers"][0]["resources"], c.resources);
    EXPECT_EQ(Env(pod["spec"]["containers"][0], "NVIDIA_VISIBLE_DEVICES"), kVisibleDevicesRef);
  }
}

TEST(PodMutationTest, APodWithoutMetadataGetsItsAnnotationsInANewMetadataObject) {
  // Found by the admission_review fuzzer: an "add" into /metadata/annotations
  // does not apply where /metadata itself is missing.
  json pod = PodWith(nullptr, {Resources("250")});
  pod.erase("metadata");
  const json mutated = Applied(pod);
  EXPECT_EQ(mutated["metadata"]["annotations"], (json{{"tessera.io/gpu-fraction", "0.25"}}));
}

TEST(PodMutationTest, AMigInstanceByResourceGetsItsAnnotationButNoMilliGpuAndItsDeviceFromTheDevicePlugin) {
  const json pod = Applied(PodWith(nullptr, {json(), MigResource("3g.40gb", "1")}));
  EXPECT_EQ(pod["metadata"]["annotations"], (json{{"tessera.io/mig-profile", "3g.40gb"}}));
  EXPECT_EQ(pod["spec"]["schedulerName"], "tessera-scheduler");
  const json& c = pod["spec"]["containers"][1];
  EXPECT_EQ(c["resources"], MigResource("3g.40gb", "1")) << "counted by its own resource, not in milli-GPU";
  EXPECT_EQ(Env(c, "NVIDIA_VISIBLE_DEVICES"), "<unset>")
      << "the device plugin hands over the instance it allocates for the resource; Tessera's value would compete";
  EXPECT_EQ(Env(pod["spec"]["containers"][0], "NVIDIA_VISIBLE_DEVICES"), "<unset>");
}

TEST(PodMutationTest, AMigInstanceByAnnotationGetsNoShareLimitsWhateverTheEnforcement) {
  const json pod = Applied(PodWith({{"tessera.io/mig-profile", "1g.10gb"}}), {.enforcement = GpuEnforcement::kMps});
  const json& c = pod["spec"]["containers"][0];
  EXPECT_FALSE(c.contains("resources"));
  EXPECT_EQ(Env(c, "NVIDIA_VISIBLE_DEVICES"), kVisibleDevicesRef);
  EXPECT_EQ(Env(c, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "<unset>") << "the instance is isolated in hardware";
}

TEST(PodMutationTest, EachVendorsRuntimeGetsItsOwnVariablesForTheDevices) {
  const PodMutationOptions mixed{.vendors = {GpuVendor::kNvidia, GpuVendor::kAmd, GpuVendor::kHygon}};
  // A pod that selects no vendor may land on any: every variable, each once.
  const json any = Applied(PodWith({{"tessera.io/gpu-count", "1"}}), mixed)["spec"]["containers"][0];
  for (const char* v : {"NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}) {
    EXPECT_EQ(Env(any, v), kVisibleDevicesRef) << v;
  }
  EXPECT_EQ(any["env"].size(), 3u) << any["env"].dump();
  // One that selects AMD gets AMD's only, and no CUDA share limits.
  PodMutationOptions mps = mixed;
  mps.enforcement = GpuEnforcement::kMps;
  const json amd = Applied(PodWith({{"tessera.io/gpu-fraction", "0.5"}, {"tessera.io/gpu-vendor", "amd"}}), mps)
                       ["spec"]["containers"][0];
  EXPECT_EQ(Env(amd, "HIP_VISIBLE_DEVICES"), kVisibleDevicesRef);
  EXPECT_EQ(Env(amd, "NVIDIA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(Env(amd, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "<unset>");
}

TEST(PodMutationTest, VendorListsAreParsedStrictly) {
  EXPECT_EQ(*ParseGpuVendorList("nvidia, amd,nvidia"), (std::vector<GpuVendor>{GpuVendor::kNvidia, GpuVendor::kAmd}));
  EXPECT_FALSE(ParseGpuVendorList("nvidia,acme").ok());
  EXPECT_FALSE(ParseGpuVendorList("").ok());
}

TEST(PodMutationTest, OnlyTheContainersThatAskForGpusGetThem) {
  const json pod = Applied(PodWith(nullptr, {json(), Resources("500")}));
  EXPECT_EQ(Env(pod["spec"]["containers"][0], "NVIDIA_VISIBLE_DEVICES"), "<unset>") << "the sidecar sees no GPU";
  EXPECT_EQ(Env(pod["spec"]["containers"][1], "NVIDIA_VISIBLE_DEVICES"), kVisibleDevicesRef);
}

TEST(PodMutationTest, BadRequestsAreRefusedSayingWhy) {
  struct Case {
    std::string name;
    json pod;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"a malformed annotation", PodWith({{"tessera.io/gpu-fraction", "1.5"}}), "tessera.io/gpu-fraction=\"1.5\""},
      {"resources and annotations that disagree", PodWith({{"tessera.io/gpu-fraction", "0.5"}}, {Resources("250")}),
       "request tessera.io/gpu-milli=250 and tessera.io/gpu-memory-mib=0 but the annotations ask for 500 and 0"},
      {"one and a half GPUs by resources", PodWith(nullptr, {Resources("1500")}), "more than one GPU must be whole GPUs"},
      {"GPU memory without GPUs", PodWith(nullptr, {{{"requests", {{"tessera.io/gpu-memory-mib", "1024"}}}}}),
       "GPU memory needs GPUs"},
      {"requests unlike limits",
       PodWith(nullptr, {{{"requests", {{"tessera.io/gpu-milli", "250"}}}, {"limits", {{"tessera.io/gpu-milli", "500"}}}}}),
       "requests and limits of tessera.io/gpu-milli must be equal (250 and 500)"},
      {"a share finer than 1 percent", PodWith(nullptr, {Resources("255")}), "tessera.io/gpu-milli=255"},
      {"memory that does not split among the GPUs", PodWith(nullptr, {Resources("3000", "1000")}),
       "must divide evenly among the 3 GPUs"},
      {"no containers", json{{"metadata", {{"annotations", {{"tessera.io/gpu-count", "1"}}}}}, {"spec", json::object()}},
       "no spec.containers"},
      {"two MIG instances by resources", PodWith(nullptr, {MigResource("1g.10gb", "2")}),
       "nvidia.com/mig-1g.10gb (2 in all): Tessera places one MIG instance per pod"},
      {"MIG instances of two profiles", PodWith(nullptr, {MigResource("1g.10gb", "1"), MigResource("3g.40gb", "1")}),
       "Tessera places one MIG instance per pod"},
      {"a MIG instance and shares in one pod", PodWith(nullptr, {MigResource("1g.10gb", "1"), Resources("250")}),
       "a MIG instance and GPU shares (tessera.io/gpu-milli) in one pod"},
      {"a MIG resource that names no profile", PodWith(nullptr, {MigResource("large", "1")}),
       "must be a MIG profile such as 1g.10gb"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<JsonPatchOp>> ops = MutateGpuPod(c.pod, {});
    ASSERT_FALSE(ops.ok()) << FormatJsonPatch(*ops);
    EXPECT_EQ(ops.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(ops.status().message()), HasSubstr(c.reason));
  }
}

TEST(PodMutationTest, TheSchedulerNameIsSetOnlyWhereThePodLeftItToTheDefault) {
  EXPECT_EQ(Applied(PodWith({{"tessera.io/gpu-count", "1"}}, {json()}, "default-scheduler"))["spec"]["schedulerName"],
            "tessera-scheduler");
  EXPECT_EQ(Applied(PodWith({{"tessera.io/gpu-count", "1"}}, {json()}, "team-scheduler"))["spec"]["schedulerName"],
            "team-scheduler");
  EXPECT_FALSE(Applied(PodWith({{"tessera.io/gpu-count", "1"}}), {.scheduler_name = ""})["spec"].contains("schedulerName"));
}

TEST(PodMutationTest, TheEnforcementLayerGetsTheBurstLimitAndTheMemoryLimit) {
  const json annotations = {{"tessera.io/gpu-fraction", "0.25"},
                            {"tessera.io/gpu-fraction-limit", "0.8"},
                            {"tessera.io/gpu-memory", "8Gi"},
                            {"tessera.io/gpu-memory-limit", "10Gi"}};
  const json mps = Applied(PodWith(annotations), {.enforcement = GpuEnforcement::kMps})["spec"]["containers"][0];
  EXPECT_EQ(Env(mps, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "80");
  EXPECT_EQ(Env(mps, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M");
  const json hami = Applied(PodWith(annotations), {.enforcement = GpuEnforcement::kHamiCore})["spec"]["containers"][0];
  EXPECT_EQ(Env(hami, "CUDA_DEVICE_SM_LIMIT"), "80");
  EXPECT_EQ(Env(hami, "CUDA_DEVICE_MEMORY_LIMIT"), "10240m");
  const json whole = Applied(PodWith({{"tessera.io/gpu-count", "2"}}), {.enforcement = GpuEnforcement::kMps});
  EXPECT_EQ(Env(whole["spec"]["containers"][0], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "<unset>")
      << "whole GPUs need no share enforced";
}

TEST(PodMutationTest, AVariableTheContainerSetsItselfIsKept) {
  json pod = PodWith({{"tessera.io/gpu-fraction", "0.5"}});
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}});
  const json c = Applied(pod, {.enforcement = GpuEnforcement::kHamiCore})["spec"]["containers"][0];
  EXPECT_EQ(Env(c, "NVIDIA_VISIBLE_DEVICES"), "all");
  EXPECT_EQ(Env(c, "CUDA_DEVICE_SM_LIMIT"), "50");
  EXPECT_EQ(c["env"].size(), 2u);
}

TEST(PodMutationTest, EnforcementNamesAreParsedStrictly) {
  EXPECT_EQ(*ParseGpuEnforcement("mps"), GpuEnforcement::kMps);
  EXPECT_EQ(*ParseGpuEnforcement("hami-core"), GpuEnforcement::kHamiCore);
  EXPECT_EQ(*ParseGpuEnforcement("none"), GpuEnforcement::kNone);
  EXPECT_FALSE(ParseGpuEnforcement("MPS").ok());
}

}  // namespace
}  // namespace tessera::k8s
