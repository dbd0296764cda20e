#include "k8s/node_inventory.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/model/absl_compat.h"
#include "test/testing/builders.h"
#include "test/testing/topologies.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

GpuDevice Gpu(int32_t index, std::string model = "", int64_t memory = 0, std::string uuid = "", int32_t numa = -1) {
  GpuDevice g;
  g.index = index;
  g.model = std::move(model);
  g.memory = MemoryMiB(memory);
  g.uuid = std::move(uuid);
  g.numa = numa;
  return g;
}

GpuDevice Unhealthy(GpuDevice g) {
  g.healthy = false;
  return g;
}

// `count` GPUs 0..count-1 of one model and memory.
std::vector<GpuDevice> Gpus(int32_t count, const std::string& model = "", int64_t memory = 0) {
  std::vector<GpuDevice> gpus;
  for (int32_t i = 0; i < count; ++i) gpus.push_back(Gpu(i, model, memory));
  return gpus;
}

// A JSON list of `n` minimal, valid inventory items.
std::string ManyItems(int n) {
  std::string json = "[";
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&json, i > 0 ? "," : "", R"({"index":)", i, R"(,"model":"m","memoryMiB":1})");
  }
  return json + "]";
}

// A JSON list of `n` copies of `item`.
std::string ListOf(int n, std::string_view item) {
  std::string json = "[";
  for (int i = 0; i < n; ++i) absl::StrAppend(&json, i > 0 ? "," : "", Absl(item));
  return json + "]";
}

constexpr char kTwoA100s[] =
    R"([{"index":1,"uuid":"GPU-b","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"numa":1,"extra":{"x":[1]}},)"
    R"( {"index":0,"uuid":"GPU-a","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"numa":0}])";

// NodeInventoryFields holds views; a case table needs the strings it points to.
struct OwnedFields {
  std::optional<std::string> inventory_annotation{};
  std::optional<std::string> gfd_count{};
  std::optional<std::string> gfd_product{};
  std::optional<std::string> gfd_memory{};
  std::optional<std::string> allocatable_gpus{};
  std::optional<std::string> gfd_mig_strategy{};
  /// Other labels of the node, as key and value: those GFD writes per MIG
  /// profile are collected as the decoders collect them.
  std::vector<std::pair<std::string, std::string>> labels{};

  [[nodiscard]] NodeInventoryFields View() const {
    auto view = [](const std::optional<std::string>& s) -> std::optional<std::string_view> {
      if (!s) return std::nullopt;
      return std::string_view(*s);
    };
    collected.clear();
    for (const auto& [key, value] : labels) AddGfdMigCountLabel(key, value, collected);
    return {view(inventory_annotation), view(gfd_count),        view(gfd_product),
            view(gfd_memory),           view(allocatable_gpus), std::nullopt,
            view(gfd_mig_strategy),     collected};
  }

  /// What View() collected of `labels`, which its answer views.
  mutable std::vector<GfdMigCount> collected{};
};

// GPU Feature Discovery's count label of a MIG profile.
std::pair<std::string, std::string> MigCount(const std::string& profile, const std::string& count) {
  return {"nvidia.com/mig-" + profile + ".count", count};
}

// A GPU in MIG mode with instances laid out from labels (no uuid).
GpuDevice MigGpu(int32_t index, std::string model, int64_t memory,
                 std::vector<std::pair<std::string, int32_t>> instances) {
  GpuDevice g = Gpu(index, std::move(model), memory);
  g.mig_mode = true;
  for (auto& [profile, start] : instances) g.mig.push_back(MigInstance{std::move(profile), start, ""});
  return g;
}

GpuDevice MigUnlisted(GpuDevice g) {
  g.mig_mode = true;
  g.mig_unlisted = true;
  return g;
}

// `n` GPUs like `gpu`, numbered 0..n-1.
std::vector<GpuDevice> Copies(int32_t n, const GpuDevice& gpu) {
  std::vector<GpuDevice> gpus(static_cast<size_t>(n), gpu);
  for (int32_t i = 0; i < n; ++i) gpus[static_cast<size_t>(i)].index = i;
  return gpus;
}

// Seven 1g instances at slices 0..6.
std::vector<std::pair<std::string, int32_t>> Sevenths(const std::string& profile) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (int32_t s = 0; s < 7; ++s) out.emplace_back(profile, s);
  return out;
}

struct Accepted {
  std::string name;
  OwnedFields fields;
  NodeInventory want;
};

TEST(ParseNodeInventory, TakesTheStrongestSourcePresent) {
  const std::string a100 = "NVIDIA-A100-SXM4-80GB";
  const std::vector<Accepted> cases = {
      {"a node with no source has no GPUs", {}, {InventorySource::kNone, {}}},
      {"the annotation gives full detail, sorted by index, unknown keys ignored",
       {.inventory_annotation = kTwoA100s},
       {InventorySource::kAnnotation, {Gpu(0, a100, 81920, "GPU-a", 0), Gpu(1, a100, 81920, "GPU-b", 1)}}},
      {"uuid and numa are optional in the annotation",
       {.inventory_annotation = R"([{"index":3,"model":"T4","memoryMiB":15360}])"},
       {InventorySource::kAnnotation, {Gpu(3, "T4", 15360)}}},
      {"numa may say unknown explicitly",
       {.inventory_annotation = R"([{"index":0,"model":"T4","memoryMiB":1,"numa":-1,"uuid":""}])"},
       {InventorySource::kAnnotation, {Gpu(0, "T4", 1)}}},
      {"a GPU the node agent found broken says healthy false",
       {.inventory_annotation = R"([{"index":0,"model":"T4","memoryMiB":1,"healthy":false},)"
                                R"({"index":1,"model":"T4","memoryMiB":1,"healthy":true,"unhealthyReason":"x"}])"},
       {InventorySource::kAnnotation, {Unhealthy(Gpu(0, "T4", 1)), Gpu(1, "T4", 1)}}},
      {"index 255 is the largest",
       {.inventory_annotation = R"([{"index":255,"model":"T4","memoryMiB":1}])"},
       {InventorySource::kAnnotation, {Gpu(255, "T4", 1)}}},
      {"an empty annotation list is a node without GPUs", {.inventory_annotation = "[]"},
       {InventorySource::kAnnotation, {}}},
      {"sixty-four annotated GPUs are accepted", {.inventory_annotation = ManyItems(64)},
       {InventorySource::kAnnotation, Gpus(64, "m", 1)}},
      {"the annotation beats labels and allocatable",
       {.inventory_annotation = R"([{"index":0,"model":"H100","memoryMiB":81559}])",
        .gfd_count = "8",
        .gfd_product = "A100",
        .gfd_memory = "40960",
        .allocatable_gpus = "8"},
       {InventorySource::kAnnotation, {Gpu(0, "H100", 81559)}}},
      {"feature discovery labels give count, model and memory",
       {.gfd_count = "2", .gfd_product = a100, .gfd_memory = "81920"},
       {InventorySource::kFeatureDiscovery, Gpus(2, a100, 81920)}},
      {"the feature discovery count alone gives GPUs of unknown model", {.gfd_count = "4"},
       {InventorySource::kFeatureDiscovery, Gpus(4)}},
      {"an empty product label means an unknown model", {.gfd_count = "1", .gfd_product = ""},
       {InventorySource::kFeatureDiscovery, Gpus(1)}},
      {"labels beat allocatable", {.gfd_count = "2", .gfd_product = "T4", .allocatable_gpus = "8"},
       {InventorySource::kFeatureDiscovery, Gpus(2, "T4")}},
      {"a feature discovery count of zero is a node without GPUs",
       {.gfd_count = "0", .allocatable_gpus = "8"}, {InventorySource::kFeatureDiscovery, {}}},
      {"allocatable gives a count of GPUs of unknown model and memory", {.allocatable_gpus = "4"},
       {InventorySource::kAllocatable, Gpus(4)}},
      {"an allocatable count of zero is a node without GPUs", {.allocatable_gpus = "0"},
       {InventorySource::kAllocatable, {}}},
      {"sixty-four allocatable GPUs are accepted", {.allocatable_gpus = "64"},
       {InventorySource::kAllocatable, Gpus(64)}},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeInventory> got = ParseNodeInventory(c.fields.View());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->source, c.want.source);
    ASSERT_EQ(got->gpus.size(), c.want.gpus.size());
    for (size_t i = 0; i < c.want.gpus.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("gpu ", i));
      EXPECT_EQ(got->gpus[i].index, c.want.gpus[i].index);
      EXPECT_EQ(got->gpus[i].uuid, c.want.gpus[i].uuid);
      EXPECT_EQ(got->gpus[i].model, c.want.gpus[i].model);
      EXPECT_EQ(got->gpus[i].memory.value(), c.want.gpus[i].memory.value());
      EXPECT_EQ(got->gpus[i].numa, c.want.gpus[i].numa);
      EXPECT_EQ(got->gpus[i].healthy, c.want.gpus[i].healthy);
    }
  }
}

TEST(ParseNodeInventory, AGpuInMigModeKeepsItsInstancesAsListed) {
  absl::StatusOr<NodeInventory> got = ParseNodeInventory({.inventory_annotation = std::string_view(
      R"([{"index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"mig":[)"
      R"({"profile":"3g.40gb","start":4,"uuid":"MIG-a"},{"profile":"1g.10gb","start":0},{"profile":"2g.20gb","start":2}]},)"
      R"({"index":1,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"mig":[]},)"
      R"({"index":2,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920}])")});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->gpus.size(), 3u);
  EXPECT_TRUE(got->gpus[0].mig_mode);
  EXPECT_EQ(got->gpus[0].mig, (std::vector<MigInstance>{{"3g.40gb", 4, "MIG-a"}, {"1g.10gb", 0, ""}, {"2g.20gb", 2, ""}}));
  EXPECT_TRUE(got->gpus[1].mig_mode) << "an empty list is MIG mode with no instance made yet";
  EXPECT_TRUE(got->gpus[1].mig.empty());
  EXPECT_FALSE(got->gpus[2].mig_mode);
}

TEST(ParseNodeInventory, TheNodeAgentsMigEnabledPutsTheGpuInMigModeWithItsInstancesUnlisted) {
  absl::StatusOr<NodeInventory> got = ParseNodeInventory({.inventory_annotation = std::string_view(
      R"([{"index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"migEnabled":true},)"
      R"({"index":1,"model":"NVIDIA-A30","memoryMiB":24576,"mig":[]},)"
      R"({"index":2,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"migEnabled":true,"mig":[{"profile":"7g.80gb","start":0}]},)"
      R"({"index":3,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"migEnabled":false}])")});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->gpus[0].mig_mode) << "no shares on it";
  EXPECT_TRUE(got->gpus[0].mig_unlisted) << "and no MIG pod either: its instances are unknown";
  EXPECT_TRUE(got->gpus[1].mig_mode) << "MIG mode on a model without a table is respected, not an error";
  EXPECT_FALSE(got->gpus[1].mig_unlisted);
  EXPECT_TRUE(got->gpus[2].mig_mode);
  EXPECT_FALSE(got->gpus[2].mig_unlisted) << "the list, when given, is what counts";
  EXPECT_FALSE(got->gpus[3].mig_mode);
}

TEST(ParseNodeInventory, EachGpuCarriesItsVendorNvidiaWhenUnsaid) {
  absl::StatusOr<NodeInventory> got = ParseNodeInventory({.inventory_annotation = std::string_view(
      R"([{"index":0,"model":"AMD-Instinct-MI300X","memoryMiB":196608,"vendor":"amd"},)"
      R"({"index":1,"model":"Ascend-910B","memoryMiB":65536,"vendor":"ascend"},)"
      R"({"index":2,"model":"NVIDIA-H100-80GB-HBM3","memoryMiB":81920}])")});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->gpus.size(), 3u);
  EXPECT_EQ(got->gpus[0].vendor, GpuVendor::kAmd);
  EXPECT_EQ(got->gpus[1].vendor, GpuVendor::kAscend);
  EXPECT_EQ(got->gpus[2].vendor, GpuVendor::kNvidia);
}

struct Refused {
  std::string name;
  OwnedFields fields;
  std::vector<std::string> messages;  // each a substring of the status message
};

std::string Item(const std::string& fields) { return absl::StrCat("[{", fields, "}]"); }

TEST(ParseNodeInventory, RefusesAMalformedSourceWithoutFallingThrough) {
  const std::string kAnn = "annotation tessera.io/gpu-inventory: ";
  // Built in place: gcc 12's -Wrestrict misfires on "[" + std::string(...).
  std::string huge(256 * 1024 + 2, ' ');
  huge.front() = '[';
  huge.back() = ']';
  const std::vector<Refused> cases = {
      {"a malformed annotation is an error even when labels and allocatable are valid",
       {.inventory_annotation = "[{", .gfd_count = "8", .allocatable_gpus = "8"},
       {kAnn + "not valid JSON"}},
      {"an empty annotation is not JSON", {.inventory_annotation = ""}, {kAnn + "not valid JSON"}},
      {"an unknown vendor", {.inventory_annotation = Item(R"("index":0,"model":"X","memoryMiB":1,"vendor":"acme")")},
       {kAnn + R"(item 0: "vendor" must be one of nvidia, amd, intel, ascend, cambricon, hygon)"}},
      {"MIG mode on another vendor's GPU",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":1,"vendor":"amd","mig":[])")},
       {kAnn + "item 0: MIG mode on a GPU whose vendor is amd: MIG is NVIDIA's"}},
      {"an annotation that is an object, not a list", {.inventory_annotation = R"({"index":0})"},
       {kAnn + "must be a JSON list of GPUs"}},
      {"an item that is not an object", {.inventory_annotation = "[0]"}, {kAnn + "item 0: must be a JSON object"}},
      {"an item without memory", {.inventory_annotation = Item(R"("index":0,"model":"T4")")},
       {kAnn + R"(item 0: "memoryMiB" is required)"}},
      {"an item with zero memory",
       {.inventory_annotation = ManyItems(2).insert(1, R"({"index":7,"model":"T4","memoryMiB":0},)")},
       {kAnn + R"(item 0: "memoryMiB" must be a positive integer)"}},
      {"the third item with negative memory is named item 2",
       {.inventory_annotation = R"([{"index":0,"model":"T4","memoryMiB":1},{"index":1,"model":"T4","memoryMiB":1},)"
                                R"({"index":2,"model":"T4","memoryMiB":-1}])"},
       {kAnn + R"(item 2: "memoryMiB" must be a positive integer)"}},
      {"memory written as a decimal", {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1.5)")},
       {kAnn + R"(item 0: "memoryMiB" must be a positive integer)"}},
      {"memory written as a string",
       {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":"16Gi")")},
       {kAnn + R"(item 0: "memoryMiB" must be a positive integer)"}},
      {"memory beyond int64", {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":18446744073709551615)")},
       {kAnn + R"(item 0: "memoryMiB" must be a positive integer)"}},
      {"an item without an index", {.inventory_annotation = Item(R"("model":"T4","memoryMiB":1)")},
       {kAnn + R"(item 0: "index" is required)"}},
      {"a negative index", {.inventory_annotation = Item(R"("index":-1,"model":"T4","memoryMiB":1)")},
       {kAnn + R"(item 0: "index" must be an integer in 0..255)"}},
      {"an index above 255", {.inventory_annotation = Item(R"("index":256,"model":"T4","memoryMiB":1)")},
       {kAnn + R"(item 0: "index" must be an integer in 0..255)"}},
      {"an index written as a string", {.inventory_annotation = Item(R"("index":"0","model":"T4","memoryMiB":1)")},
       {kAnn + R"(item 0: "index" must be an integer in 0..255)"}},
      {"a repeated index",
       {.inventory_annotation = R"([{"index":0,"model":"T4","memoryMiB":1},{"index":0,"model":"T4","memoryMiB":1}])"},
       {kAnn + R"(item 1: "index" 0 repeats item 0)"}},
      {"an item without a model", {.inventory_annotation = Item(R"("index":0,"memoryMiB":1)")},
       {kAnn + R"(item 0: "model" is required)"}},
      {"an empty model", {.inventory_annotation = Item(R"("index":0,"model":"","memoryMiB":1)")},
       {kAnn + R"(item 0: "model" must be a non-empty string)"}},
      {"a model that is not a string", {.inventory_annotation = Item(R"("index":0,"model":7,"memoryMiB":1)")},
       {kAnn + R"(item 0: "model" must be a non-empty string)"}},
      {"a uuid that is not a string", {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1,"uuid":5)")},
       {kAnn + R"(item 0: "uuid" must be a string)"}},
      {"a numa node below -1", {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1,"numa":-2)")},
       {kAnn + R"(item 0: "numa" must be an integer >= -1)"}},
      {"a numa node that is not an integer",
       {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1,"numa":null)")},
       {kAnn + R"(item 0: "numa" must be an integer >= -1)"}},
      {"MIG instances on a model with no MIG table",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-A30","memoryMiB":24576,)"
                                     R"("mig":[{"profile":"1g.6gb","start":0}])")},
       {kAnn + R"(item 0: MIG instances on a NVIDIA-A30, a model Tessera has no MIG table for)"}},
      {"migEnabled that is not a boolean",
       {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1,"migEnabled":"yes")")},
       {kAnn + R"(item 0: "migEnabled" must be true or false)"}},
      {"a MIG profile the model does not offer",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,)"
                                     R"("mig":[{"profile":"1g.5gb","start":0}])")},
       {kAnn + R"(item 0: "mig"[0]: the A100-80GB has no MIG profile "1g.5gb")"}},
      {"a MIG instance at a start its profile cannot take",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,)"
                                     R"("mig":[{"profile":"3g.40gb","start":2}])")},
       {kAnn + R"(item 0: "mig"[0]: a 3g.40gb instance cannot start at slice 2)"}},
      {"two MIG instances that overlap",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-H100-80GB-HBM3","memoryMiB":81559,)"
                                     R"("mig":[{"profile":"1g.10gb","start":5},{"profile":"3g.40gb","start":4}])")},
       {kAnn + R"(item 0: "mig"[1]: a 3g.40gb instance at slice 4 would overlap another instance)"}},
      {"a MIG instance without a start and one past the last slice",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-H200","memoryMiB":143771,)"
                                     R"("mig":[{"profile":"1g.18gb"},{"profile":"1g.18gb","start":8},7])")},
       {kAnn + R"(item 0: "mig"[0]: "start" is required)",
        kAnn + R"(item 0: "mig"[1]: "start" must be a memory slice, 0..7)",
        kAnn + R"(item 0: "mig"[2]: must be a JSON object)"}},
      {"MIG instances that are not a list",
       {.inventory_annotation = Item(R"("index":0,"model":"NVIDIA-H200","memoryMiB":143771,"mig":{})")},
       {kAnn + R"(item 0: "mig" must be a list of MIG instances)"}},
      {"health that is not a boolean",
       {.inventory_annotation = Item(R"("index":0,"model":"T4","memoryMiB":1,"healthy":"no")")},
       {kAnn + R"(item 0: "healthy" must be true or false)"}},
      {"every problem of every item is reported",
       {.inventory_annotation = R"([{"index":0},{"index":1,"model":"T4","memoryMiB":0},"x"])"},
       {kAnn + R"(item 0: "model" is required; )" + kAnn + R"(item 0: "memoryMiB" is required; )" + kAnn +
            R"(item 1: "memoryMiB" must be a positive integer; )" + kAnn + "item 2: must be a JSON object"}},
      {"past sixteen problems the rest are only counted",
       {.inventory_annotation = ListOf(20, "0")},
       {kAnn + "item 15: must be a JSON object; and 4 more"}},
      {"more than sixty-four annotated GPUs", {.inventory_annotation = ManyItems(65)},
       {kAnn + "lists 65 GPUs, more than 64 per node"}},
      {"an annotation longer than Kubernetes allows", {.inventory_annotation = huge},
       {kAnn + "longer than 262144 bytes"}},
      {"a product label without a count label is an error even with allocatable",
       {.gfd_product = "NVIDIA-A100", .allocatable_gpus = "8"},
       {R"(label nvidia.com/gpu.product="NVIDIA-A100" is set but label nvidia.com/gpu.count is missing)"}},
      {"a memory label without a count label", {.gfd_memory = "81920"},
       {R"(label nvidia.com/gpu.memory="81920" is set but label nvidia.com/gpu.count is missing)"}},
      {"a count label that is not a number", {.gfd_count = "eight", .allocatable_gpus = "8"},
       {R"(label nvidia.com/gpu.count="eight": is not a Kubernetes quantity)"}},
      {"a fractional count label", {.gfd_count = "1.5"},
       {R"(label nvidia.com/gpu.count="1.5": must be a whole number)"}},
      {"a count label above sixty-four", {.gfd_count = "65"},
       {R"(label nvidia.com/gpu.count="65": more than 64 GPUs per node)"}},
      {"a memory label that is not a number", {.gfd_count = "8", .gfd_memory = "80GB"},
       {R"(label nvidia.com/gpu.memory="80GB": must be a positive integer (MiB))"}},
      {"a memory label of zero", {.gfd_count = "8", .gfd_memory = "0"},
       {R"(label nvidia.com/gpu.memory="0": must be a positive integer (MiB))"}},
      {"bad count and memory labels are both reported", {.gfd_count = "-1", .gfd_memory = "x"},
       {R"(label nvidia.com/gpu.count="-1": must not be negative; )"
        R"(label nvidia.com/gpu.memory="x": must be a positive integer (MiB))"}},
      {"a negative allocatable count", {.allocatable_gpus = "-1"},
       {R"(allocatable nvidia.com/gpu="-1": must not be negative)"}},
      {"a fractional allocatable count", {.allocatable_gpus = "500m"},
       {R"(allocatable nvidia.com/gpu="500m": must be a whole number)"}},
      {"an allocatable count above sixty-four", {.allocatable_gpus = "1k"},
       {R"(allocatable nvidia.com/gpu="1k": more than 64 GPUs per node)"}},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeInventory> got = ParseNodeInventory(c.fields.View());
    ASSERT_FALSE(got.ok()) << "parsed " << got->gpus.size() << " GPUs";
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& m : c.messages) EXPECT_THAT(std::string(got.status().message()), HasSubstr(m));
  }
}

struct FromMigLabels {
  std::string name;
  OwnedFields fields;
  std::vector<GpuDevice> want;
  std::string mig_error = "";  // a substring; empty: OK
};

TEST(ParseNodeInventory, LaysOutTheMigInstancesGpuFeatureDiscoveryCounts) {
  const std::string a100 = "NVIDIA-A100-SXM4-80GB", a100_40 = "NVIDIA-A100-SXM4-40GB";
  const std::vector<FromMigLabels> cases = {
      {"mixed: an A100-80GB split into seven 1g.10gb",
       {.gfd_count = "1", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.10gb", "7"), {"nvidia.com/mig-1g.10gb.memory", "9728"},
                   {"nvidia.com/mig-1g.10gb.product", a100 + "-MIG-1g.10gb"}, {"nvidia.com/mig.capable", "true"}}},
       {MigGpu(0, a100, 81920, Sevenths("1g.10gb"))}},
      {"mixed: two GPUs of 3g.40gb + 4g.40gb come out alike, the 4g at slice 0",
       {.gfd_count = "2", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("3g.40gb", "2"), MigCount("4g.40gb", "2")}},
       {MigGpu(0, a100, 81920, {{"4g.40gb", 0}, {"3g.40gb", 4}}),
        MigGpu(1, a100, 81920, {{"4g.40gb", 0}, {"3g.40gb", 4}})}},
      {"mixed: eight A100-40GB all-balanced, each 3g.20gb + 2g.10gb + two 1g.5gb",
       {.gfd_count = "8", .gfd_product = a100_40, .gfd_memory = "40960", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.5gb", "16"), MigCount("2g.10gb", "8"), MigCount("3g.20gb", "8")}},
       Copies(8, MigGpu(0, a100_40, 40960, {{"1g.5gb", 0}, {"1g.5gb", 1}, {"2g.10gb", 2}, {"3g.20gb", 4}}))},
      {"mixed: without allocatable the instances take the fewest GPUs, the others take shares",
       {.gfd_count = "3", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.10gb", "7")}},
       {MigGpu(0, a100, 81920, Sevenths("1g.10gb")), Gpu(1, a100, 81920), Gpu(2, a100, 81920)}},
      {"mixed: allocatable nvidia.com/gpu counts the GPUs not in MIG mode",
       {.gfd_count = "3", .gfd_product = a100, .gfd_memory = "81920", .allocatable_gpus = "1",
        .gfd_mig_strategy = "mixed", .labels = {MigCount("3g.40gb", "2")}},
       {MigGpu(0, a100, 81920, {{"3g.40gb", 4}}), MigGpu(1, a100, 81920, {{"3g.40gb", 4}}), Gpu(2, a100, 81920)}},
      {"mixed: allocatable that leaves too few GPUs for the instances is overruled by the counts",
       {.gfd_count = "2", .gfd_product = a100, .gfd_memory = "81920", .allocatable_gpus = "2",
        .gfd_mig_strategy = "mixed", .labels = {MigCount("7g.80gb", "1")}},
       {MigGpu(0, a100, 81920, {{"7g.80gb", 0}}), Gpu(1, a100, 81920)}},
      {"mixed: an H100 with one 7g.80gb",
       {.gfd_count = "1", .gfd_product = "NVIDIA-H100-80GB-HBM3", .gfd_memory = "81559", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("7g.80gb", "1")}},
       {MigGpu(0, "NVIDIA-H100-80GB-HBM3", 81559, {{"7g.80gb", 0}})}},
      {"mixed: no MIG count label, no GPU in MIG mode",
       {.gfd_count = "2", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "mixed"},
       Gpus(2, a100, 81920)},
      {"mixed: count labels of zero, no GPU in MIG mode",
       {.gfd_count = "1", .gfd_product = a100, .gfd_mig_strategy = "mixed", .labels = {MigCount("1g.10gb", "0")}},
       {Gpu(0, a100)}},
      {"single: the product names the profile and the count counts instances, on the fewest GPUs",
       {.gfd_count = "14", .gfd_product = a100_40 + "-MIG-1g.5gb", .gfd_memory = "4864", .gfd_mig_strategy = "single",
        .labels = {{"nvidia.com/gpu.slices.gi", "1"}}},
       Copies(2, MigGpu(0, a100_40, 0, Sevenths("1g.5gb")))},
      {"single: three 3g.40gb take two GPUs, spread",
       {.gfd_count = "3", .gfd_product = a100 + "-MIG-3g.40gb", .gfd_memory = "40192", .gfd_mig_strategy = "single"},
       {MigGpu(0, a100, 0, {{"3g.40gb", 0}, {"3g.40gb", 4}}), MigGpu(1, a100, 0, {{"3g.40gb", 4}})}},
      {"single: sixteen GPUs of seven 1g.10gb are 112 instances, more than a node's GPUs",
       {.gfd_count = "112", .gfd_product = a100 + "-MIG-1g.10gb", .gfd_mig_strategy = "single"},
       Copies(16, MigGpu(0, a100, 0, Sevenths("1g.10gb")))},
      {"single without a GPU in MIG mode: plain GPUs (GFD's labels then are the usual ones)",
       {.gfd_count = "8", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "single"},
       Gpus(8, a100, 81920)},
      {"none: count labels are not read",
       {.gfd_count = "1", .gfd_product = a100, .gfd_mig_strategy = "none", .labels = {MigCount("1g.10gb", "7")}},
       {Gpu(0, a100)}},
      {"no strategy label: count labels are not read",
       {.gfd_count = "1", .gfd_product = a100, .labels = {MigCount("1g.10gb", "7")}}, {Gpu(0, a100)}},
      {"the inventory annotation beats the labels, MIG ones too",
       {.inventory_annotation = R"([{"index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920}])",
        .gfd_count = "1", .gfd_product = a100, .gfd_mig_strategy = "mixed", .labels = {MigCount("1g.10gb", "7")}},
       {Gpu(0, a100, 81920)}},
      {"mixed on a model without a MIG table: its GPUs in MIG mode, instances unlisted, and why",
       {.gfd_count = "2", .gfd_product = "NVIDIA-A30", .gfd_memory = "24576", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.6gb", "4")}},
       Copies(2, MigUnlisted(Gpu(0, "NVIDIA-A30", 24576))),
       R"(label nvidia.com/mig-1g.6gb.count="4": NVIDIA-A30 is a model Tessera has no MIG table for; )"
       "GPUs 0..1 are in MIG mode with their instances unlisted"},
      {"mixed on a model without a table: allocatable still says which GPUs are not in MIG mode",
       {.gfd_count = "2", .gfd_product = "NVIDIA-A30", .allocatable_gpus = "1", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.6gb", "4")}},
       {MigUnlisted(Gpu(0, "NVIDIA-A30")), Gpu(1, "NVIDIA-A30")}, "GPU 0 is in MIG mode"},
      {"mixed with a profile the table lacks: unlisted too",
       {.gfd_count = "1", .gfd_product = a100, .gfd_mig_strategy = "mixed",
        .labels = {MigCount("1g.10gb.me", "1"), MigCount("1g.10gb", "6")}},
       {MigUnlisted(Gpu(0, a100))},
       R"(label nvidia.com/mig-1g.10gb.me.count="1": the A100-80GB has no such profile in Tessera's MIG table; )"
       "GPU 0 is in MIG mode with its instances unlisted"},
      {"single on a model without a MIG table",
       {.gfd_count = "4", .gfd_product = "NVIDIA-A30-MIG-1g.6gb", .gfd_mig_strategy = "single"},
       {MigUnlisted(Gpu(0, "NVIDIA-A30"))},
       R"(label nvidia.com/gpu.product="NVIDIA-A30-MIG-1g.6gb": NVIDIA-A30 is a model Tessera has no MIG table for)"},
  };
  for (const FromMigLabels& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeInventory> got = ParseNodeInventory(c.fields.View());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->gpus, c.want);
    if (c.mig_error.empty()) {
      EXPECT_TRUE(got->mig_error.ok()) << got->mig_error;
    } else {
      EXPECT_THAT(std::string(got->mig_error.message()), HasSubstr(c.mig_error));
    }
  }
}

TEST(ParseNodeInventory, RefusesMigLabelsThatCannotBeLaidOut) {
  const std::string a100 = "NVIDIA-A100-SXM4-80GB";
  std::vector<std::pair<std::string, std::string>> seventeen;
  for (int i = 1; i <= 17; ++i) seventeen.push_back(MigCount(absl::StrCat(i, "g.", i, "gb"), "1"));
  const std::vector<Refused> cases = {
      {"counts that do not fit on the node's GPUs name the labels",
       {.gfd_count = "1", .gfd_product = a100, .gfd_memory = "81920", .gfd_mig_strategy = "mixed",
        .labels = {MigCount("3g.40gb", "2"), MigCount("1g.10gb", "1")}},
       {R"(labels nvidia.com/mig-3g.40gb.count="2", nvidia.com/mig-1g.10gb.count="1": 3 MIG instances do not fit )"
        "on the node's 1 NVIDIA-A100-SXM4-80GB GPUs (label nvidia.com/gpu.count)"}},
      {"instances and no GPU", {.gfd_count = "0", .gfd_product = a100, .gfd_mig_strategy = "mixed",
                                .labels = {MigCount("1g.10gb", "1")}},
       {R"(label nvidia.com/mig-1g.10gb.count="1": 1 MIG instance does not fit on the node's 0 GPUs)"}},
      {"a count label that is not a number",
       {.gfd_count = "1", .gfd_product = a100, .gfd_mig_strategy = "mixed", .labels = {MigCount("1g.10gb", "seven")}},
       {R"(label nvidia.com/mig-1g.10gb.count="seven": must be a count of MIG instances, 0..448)"}},
      {"more count labels than a node has profiles", {.gfd_count = "1", .gfd_product = a100,
                                                      .gfd_mig_strategy = "mixed", .labels = seventeen},
       {"more than 16 labels nvidia.com/mig-<profile>.count"}},
      {"a strategy GFD does not write", {.gfd_count = "1", .gfd_mig_strategy = "Mixed"},
       {R"(label nvidia.com/mig.strategy="Mixed": must be none, single or mixed)"}},
      {"single, where GFD found the set-up invalid",
       {.gfd_count = "0", .gfd_product = a100 + "-MIG-INVALID", .gfd_memory = "0", .gfd_mig_strategy = "single"},
       {R"(label nvidia.com/gpu.product="NVIDIA-A100-SXM4-80GB-MIG-INVALID": GPU Feature Discovery found the )"
        "node's MIG set-up invalid"}},
      {"single, more instances than 64 GPUs hold",
       {.gfd_count = "65", .gfd_product = a100 + "-MIG-7g.80gb", .gfd_mig_strategy = "single"},
       {R"(label nvidia.com/gpu.count="65" of nvidia.com/gpu.product="NVIDIA-A100-SXM4-80GB-MIG-7g.80gb": )"
        "65 GPUs would hold them, more than 64 per node"}},
      {"single, an instance count that is not a number",
       {.gfd_count = "x", .gfd_product = a100 + "-MIG-7g.80gb", .gfd_mig_strategy = "single"},
       {R"(label nvidia.com/gpu.count="x": )"}},
      {"a MIG count label without the count label",
       {.gfd_mig_strategy = "mixed", .labels = {MigCount("1g.10gb", "7")}},
       {R"(label nvidia.com/mig-1g.10gb.count="7" is set but label nvidia.com/gpu.count is missing)"}},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeInventory> got = ParseNodeInventory(c.fields.View());
    ASSERT_FALSE(got.ok()) << "parsed " << got->gpus.size() << " GPUs";
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& m : c.messages) EXPECT_THAT(std::string(got.status().message()), HasSubstr(m));
  }
}

TEST(AddGfdMigCountLabel, TakesOnlyCountLabelsAndKeepsOneMoreThanTheCap) {
  std::vector<GfdMigCount> counts;
  EXPECT_FALSE(AddGfdMigCountLabel("nvidia.com/mig.strategy", "mixed", counts));
  EXPECT_FALSE(AddGfdMigCountLabel("nvidia.com/mig-1g.10gb.memory", "9728", counts));
  EXPECT_FALSE(AddGfdMigCountLabel("nvidia.com/mig-.count", "1", counts)) << "no profile named";
  EXPECT_FALSE(AddGfdMigCountLabel("nvidia.com/gpu.count", "8", counts));
  EXPECT_TRUE(AddGfdMigCountLabel("nvidia.com/mig-1g.10gb.count", "7", counts));
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].profile, "1g.10gb");
  EXPECT_EQ(counts[0].count, "7");
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(AddGfdMigCountLabel("nvidia.com/mig-2g.20gb.count", "1", counts));
  EXPECT_EQ(counts.size(), kMaxGfdMigProfiles + 1) << "bounded, and still refused by the parse";
}

// Every prefix of a valid annotation, and every single-byte corruption of
// it, is either parsed or refused: never a crash (run under the sanitizers).
TEST(ParseNodeInventory, SurvivesTruncatedAndCorruptedAnnotations) {
  const std::string json = kTwoA100s;
  for (size_t n = 0; n <= json.size(); ++n) {
    NodeInventoryFields fields{.inventory_annotation = std::string_view(json).substr(0, n)};
    absl::StatusOr<NodeInventory> got = ParseNodeInventory(fields);
    EXPECT_EQ(got.ok(), n == json.size()) << n;
  }
  for (size_t i = 0; i < json.size(); ++i) {
    for (char c : std::string("\0\"{}[],:-.9x\\\xff", 14)) {
      std::string corrupt = json;
      corrupt[i] = c;
      NodeInventoryFields fields{.inventory_annotation = corrupt};
      absl::StatusOr<NodeInventory> got = ParseNodeInventory(fields);
      if (!got.ok()) {
        EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
}

// The snapshot hands plugins the very topology object the inventory holds,
// and reports an unusable annotation as a node problem.
TEST(NodeInventorySnapshot, ViewsShareTheNodesParsedTopologyAndAnUnusableOneIsANodeProblem) {
  absl::StatusOr<NodeInventory> good =
      k8s::ParseNodeInventory({.gfd_count = "8", .gfd_product = "Tesla-V100-SXM2-16GB", .topology_annotation = testing::kDgx1V100});
  absl::StatusOr<NodeInventory> bad =
      k8s::ParseNodeInventory({.gfd_count = "8", .gfd_product = "Tesla-V100-SXM2-16GB", .topology_annotation = "GPU0 GPU1\n"});
  ASSERT_TRUE(good.ok() && bad.ok());
  const GpuTopology* topology = good->topology.get();
  ASSERT_NE(topology, nullptr);
  ClusterModel model;
  model.UpsertNode("good", *std::move(good), absl::OkStatus());
  model.UpsertNode("bad", *std::move(bad), absl::OkStatus());
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  const NodeView& good_view = snapshot->View(*snapshot->FindNode("good"));
  const NodeView& bad_view = snapshot->View(*snapshot->FindNode("bad"));
  EXPECT_EQ(good_view.topology, topology);
  EXPECT_EQ(good_view.topology_error, nullptr);
  EXPECT_EQ(bad_view.topology, nullptr);
  ASSERT_NE(bad_view.topology_error, nullptr);
  EXPECT_THAT(std::string(bad_view.topology_error->message()), HasSubstr("no row for GPU0"));
  EXPECT_THAT(snapshot->node(*snapshot->FindNode("bad")).problems, ::testing::ElementsAre(HasSubstr("no row for GPU0")));
  // Another node of the same kind shares the object.
  absl::StatusOr<NodeInventory> twin =
      k8s::ParseNodeInventory({.gfd_count = "8", .gfd_product = "Tesla-V100-SXM2-16GB", .topology_annotation = testing::kDgx1V100});
  ASSERT_TRUE(twin.ok());
  ASSERT_NE(twin->topology.get(), topology) << "parsed on its own";
  model.UpsertNode("twin", *std::move(twin), absl::OkStatus());
  const std::shared_ptr<const ClusterSnapshot> with_twin = model.Publish();
  EXPECT_EQ(with_twin->View(*with_twin->FindNode("twin")).topology, topology) << "interned";
  // A later publish that rebuilds the node keeps the same object.
  model.UpsertPod(testing::Holding("p", "good", 0, 0));
  const std::shared_ptr<const ClusterSnapshot> next = model.Publish();
  EXPECT_EQ(next->View(*next->FindNode("good")).topology, topology);
}

}  // namespace
}  // namespace tessera::k8s
