#include "k8s/gpu_topology.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "k8s/node_inventory.h"
#include "test/testing/topologies.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

// The link as nvidia-smi would print it.
std::string Link(const GpuTopology& t, int32_t a, int32_t b) { return GpuLinkName(t.link(a, b)); }

absl::StatusOr<std::shared_ptr<const GpuTopology>> Parse(std::string_view text) {
  return ParseGpuTopology(text, LinkBandwidths{});
}

TEST(ParseGpuTopology, ReadsEveryReferenceTopology) {
  struct Want {
    std::string name;
    int32_t gpus;
    std::vector<std::pair<std::pair<int32_t, int32_t>, std::string>> links;
  };
  const std::vector<Want> wants = {
      {"DGX-1 V100 hybrid cube-mesh", 8, {{{0, 3}, "NV2"}, {{0, 1}, "NV1"}, {{0, 6}, "SYS"}, {{7, 3}, "NV1"}}},
      {"DGX A100 NVSwitch", 8, {{{0, 7}, "NV12"}, {{3, 4}, "NV12"}}},
      {"DGX H100 NVSwitch", 8, {{{0, 1}, "NV18"}, {{6, 7}, "NV18"}}},
      {"8 PCIe cards on two sockets", 8, {{{0, 1}, "PIX"}, {{0, 2}, "NODE"}, {{3, 4}, "SYS"}}},
      {"HGX A100 4-GPU board", 4, {{{0, 3}, "NV4"}}},
      {"4 PCIe cards with NVLink bridges", 4, {{{0, 1}, "NV4"}, {{1, 2}, "SYS"}}},
      {"DGX-2 16-GPU NVSwitch", 16, {{{0, 15}, "NV6"}}},
      {"16 PCIe cards on four switches", 16, {{{0, 3}, "PIX"}, {{0, 4}, "NODE"}, {{0, 8}, "SYS"}}},
      {"16 GPUs in two cube-meshes", 16, {{{8, 11}, "NV2"}, {{7, 8}, "SYS"}}},
  };
  const std::vector<testing::ReferenceTopology> refs = testing::ReferenceTopologies();
  ASSERT_EQ(refs.size(), wants.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    SCOPED_TRACE(refs[i].name);
    ASSERT_EQ(refs[i].name, wants[i].name);
    absl::StatusOr<std::shared_ptr<const GpuTopology>> t = Parse(refs[i].text);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->gpu_count(), wants[i].gpus);
    for (const auto& [pair, name] : wants[i].links) {
      EXPECT_EQ(Link(**t, pair.first, pair.second), name);
      EXPECT_EQ(Link(**t, pair.second, pair.first), name);
    }
    EXPECT_EQ((*t)->source(), refs[i].text) << "kept for reuse";
  }
}

TEST(ParseGpuTopology, TurnsLinksIntoBandwidth) {
  absl::StatusOr<std::shared_ptr<const GpuTopology>> dgx1 = Parse(testing::kDgx1V100);
  ASSERT_TRUE(dgx1.ok()) << dgx1.status();
  EXPECT_EQ((*dgx1)->bandwidth_mbps(0, 3), 50000u) << "NV2 = 2 x 25 GB/s (NVLink 2.0)";
  EXPECT_EQ((*dgx1)->bandwidth_mbps(0, 1), 25000u);
  EXPECT_EQ((*dgx1)->bandwidth_mbps(0, 6), 8000u) << "SYS: half of PCIe 3.0 x16";
  EXPECT_TRUE((*dgx1)->has_nvlink());

  absl::StatusOr<std::shared_ptr<const GpuTopology>> pcie = Parse(testing::kPcie8TwoSockets);
  ASSERT_TRUE(pcie.ok()) << pcie.status();
  EXPECT_EQ((*pcie)->bandwidth_mbps(0, 1), 16000u);
  EXPECT_EQ((*pcie)->bandwidth_mbps(0, 2), 10000u);
  EXPECT_FALSE((*pcie)->has_nvlink());
}

TEST(ParseGpuTopology, OtherVendorsFabricLinksCountAsNvlinkDoes) {
  // Four MI300X on xGMI (one link each way) and two Ascend 910B on HCCS, in
  // the matrix form and in JSON.
  absl::StatusOr<std::shared_ptr<const GpuTopology>> amd = Parse(
      "\tGPU0\tGPU1\tGPU2\tGPU3\n"
      "GPU0\t X \tXGMI\tXGMI\tXGMI\n"
      "GPU1\tXGMI\t X \tXGMI\tXGMI\n"
      "GPU2\tXGMI\tXGMI\t X \tXGMI2\n"
      "GPU3\tXGMI\tXGMI\tXGMI2\t X \n");
  ASSERT_TRUE(amd.ok()) << amd.status();
  EXPECT_EQ((*amd)->bandwidth_mbps(0, 1), 64000u) << "one xGMI link";
  EXPECT_EQ((*amd)->bandwidth_mbps(2, 3), 128000u) << "two bonded";
  EXPECT_TRUE((*amd)->has_nvlink()) << "requireNvlink is met by xGMI";
  EXPECT_EQ(GpuLinkName((*amd)->link(2, 3)), "XGMI2");

  absl::StatusOr<std::shared_ptr<const GpuTopology>> ascend =
      Parse(R"({"links":[[null,"HCCS"],["HCCS",null]],"bandwidthMBps":{"HCCS":30000}})");
  ASSERT_TRUE(ascend.ok()) << ascend.status();
  EXPECT_EQ((*ascend)->bandwidth_mbps(0, 1), 30000u) << "the annotation's own figure per link";
  EXPECT_TRUE((*ascend)->link(0, 1).is_fabric());
  EXPECT_FALSE((*ascend)->link(0, 1).is_nvlink());
}

TEST(ParseGpuTopology, TheTwoFormsAgree) {
  const std::string json = R"({"links": [
      ["X", 1, 1, 2, 2, "SYS", "SYS", "SYS"],
      [1, null, 2, 1, "SYS", 2, "SYS", "SYS"],
      [1, 2, "X", 2, "SYS", "SYS", 1, "SYS"],
      ["NV2", 1, 2, "X", "SYS", "SYS", "SYS", 1],
      [2, "SYS", "SYS", "SYS", "X", 1, 1, 2],
      ["SYS", 2, "SYS", "SYS", 1, "X", 2, 1],
      ["SYS", "SYS", 1, "SYS", 1, 2, "X", 2],
      ["SYS", "SYS", "SYS", 1, 2, 1, 2, "X"]]})";
  absl::StatusOr<std::shared_ptr<const GpuTopology>> from_json = Parse(json);
  absl::StatusOr<std::shared_ptr<const GpuTopology>> from_text = Parse(testing::kDgx1V100);
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  for (int32_t a = 0; a < 8; ++a) {
    for (int32_t b = 0; b < 8; ++b) {
      if (a != b) {
        EXPECT_EQ((*from_json)->link(a, b), (*from_text)->link(a, b)) << a << "-" << b;
      }
    }
  }
  // A bare list of rows is the same matrix.
  absl::StatusOr<std::shared_ptr<const GpuTopology>> bare = Parse(R"([["X", "PIX"], ["PIX", "X"]])");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(Link(**bare, 0, 1), "PIX");
}

TEST(ParseGpuTopology, BandwidthFollowsTheGenerationsNamed) {
  struct Case {
    std::string name;
    std::string annotation;
    uint32_t nv1, pix, sys;
  };
  const std::string matrix = R"([["X", 1, "PIX"], [1, "X", "SYS"], ["PIX", "SYS", "X"]])";
  const std::string text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV1\tPIX\nGPU1\tNV1\t X \tSYS\nGPU2\tPIX\tSYS\t X \n";
  const std::vector<Case> cases = {
      {"defaults: NVLink 2.0, PCIe 3.0", matrix, 25000, 16000, 8000},
      {"NVLink 1.0 and PCIe 4.0", absl::StrCat(R"({"nvlink": "1.0", "pcie": 4, "links": )", matrix, "}"), 20000,
       32000, 16000},
      {"NVLink 5.0 and PCIe 5.0", absl::StrCat(R"({"nvlink": "5", "pcie": "5.0", "links": )", matrix, "}"), 50000,
       64000, 32000},
      {"explicit MB/s win over the generation",
       absl::StrCat(R"({"pcie": "4.0", "bandwidthMBps": {"NVLINK": 30000, "SYS": 5000}, "links": )", matrix, "}"),
       30000, 32000, 5000},
      {"the text form names generations on their own lines", "nvlink: 1.0\nPCIe:4.0\n" + text, 20000, 32000, 16000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::shared_ptr<const GpuTopology>> t = Parse(c.annotation);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->bandwidth_mbps(0, 1), c.nv1);
    EXPECT_EQ((*t)->bandwidth_mbps(0, 2), c.pix);
    EXPECT_EQ((*t)->bandwidth_mbps(1, 2), c.sys);
  }
}

TEST(DefaultLinkBandwidths, FollowTheGpuGeneration) {
  auto of = [](std::string model) {
    GpuDevice gpu;
    gpu.model = std::move(model);
    return DefaultLinkBandwidths({gpu});
  };
  EXPECT_EQ(of("Tesla-V100-SXM2-16GB").pix.value(), 16000);
  EXPECT_EQ(of("NVIDIA-A100-SXM4-80GB").pix.value(), 32000);
  EXPECT_EQ(of("NVIDIA-H100-80GB-HBM3").pix.value(), 64000);
  EXPECT_EQ(of("NVIDIA-B200").nvlink_per_link.value(), 50000);
  EXPECT_EQ(of("Tesla-P100-SXM2-16GB").nvlink_per_link.value(), 20000);
  EXPECT_EQ(of("Some-Future-GPU"), LinkBandwidths{});
  EXPECT_EQ(DefaultLinkBandwidths({}), LinkBandwidths{});
}

TEST(ParseGpuTopology, ReportsEveryMalformedMatrixPrecisely) {
  struct Case {
    std::string name;
    std::string annotation;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"asymmetric text", "  GPU0 GPU1\nGPU0 X NV2\nGPU1 SYS X\n", "asymmetric: GPU0-GPU1 is NV2 but GPU1-GPU0 is SYS"},
      {"asymmetric JSON", R"([["X", 2], [1, "X"]])", "asymmetric: GPU0-GPU1 is NV2 but GPU1-GPU0 is NV1"},
      {"not square", R"([["X", 2], [2]])", "links[1] must be a list of 2 cells"},
      {"an unknown cell", "  GPU0 GPU1\nGPU0 X NVX\nGPU1 NVX X\n", "row GPU0, column GPU1: \"NVX\" is not a link"},
      {"a missing row", "  GPU0 GPU1 GPU2\nGPU0 X PIX PIX\nGPU1 PIX X PIX\n", "no row for GPU2"},
      {"a row twice", "  GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\nGPU1 PIX X\n", "row GPU1 appears twice"},
      {"a row outside the header", "  GPU0 GPU1\nGPU0 X PIX\nGPU1 PIX X\nGPU2 PIX PIX X\n", "row GPU2 has no column"},
      {"columns out of order", "  GPU1 GPU0\nGPU0 X PIX\nGPU1 PIX X\n", "header: column GPU1 where GPU0 was expected"},
      {"a short row", "  GPU0 GPU1 GPU2\nGPU0 X PIX\nGPU1 PIX X PIX\nGPU2 PIX PIX X\n",
       "row GPU0 has 2 cells, fewer than the 3 GPU columns"},
      {"X off the diagonal", R"([["X", "X"], ["X", "X"]])", "GPU0-GPU1 is X, which only a GPU with itself may be"},
      {"a link on the diagonal", R"([[1, "PIX"], ["PIX", "X"]])", "GPU0-GPU0 must be X"},
      {"no matrix at all", "hello\nworld\n", "no GPU matrix"},
      {"an empty annotation", "", "no GPU matrix"},
      {"too many GPUs", absl::StrCat("  ", [] {
         std::string h;
         for (int i = 0; i < 17; ++i) absl::StrAppend(&h, "GPU", i, " ");
         return h;
       }()),
       "describes 17 GPUs, more than the 16 supported"},
      {"invalid JSON", R"([["X", 1], [1, "X"])", "not valid JSON"},
      {"JSON of the wrong type", R"("NV1")", "no GPU matrix"},
      {"an object without links", R"({"nvlink": "2.0"})", "\"links\" (the matrix) is required"},
      {"zero NVLinks", R"([["X", 0], [0, "X"]])", "an NVLink count must be 1..255, got 0"},
      {"an unknown NVLink generation", R"({"nvlink": "9.0", "links": [["X"]]})", "unknown NVLink generation \"9.0\""},
      {"an unknown PCIe generation", "pcie: 2.0\n  GPU0\nGPU0 X\n", "unknown PCIe generation \"2.0\""},
      {"a generation line without a value", "nvlink:\n  GPU0\nGPU0 X\n", "\"nvlink:\" needs exactly one generation"},
      {"an unknown bandwidth kind", R"({"bandwidthMBps": {"NVSWITCH": 1}, "links": [["X"]]})",
       "unknown link kind \"NVSWITCH\""},
      {"a bandwidth of zero", R"({"bandwidthMBps": {"PIX": 0}, "links": [["X"]]})",
       "bandwidthMBps.PIX must be an integer in 1..1000000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::shared_ptr<const GpuTopology>> t = Parse(c.annotation);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("annotation tessera.io/gpu-topology: "));
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.message_part));
  }
}

TEST(ParseGpuTopology, ReportsAllProblemsAtOnce) {
  absl::StatusOr<std::shared_ptr<const GpuTopology>> t =
      Parse("  GPU0 GPU1 GPU2\nGPU0 X NV1 FOO\nGPU1 NV1 X PIX\nGPU2 BAR PIX X\n");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("\"FOO\""));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("\"BAR\""));
}

TEST(ParseGpuTopology, SurvivesEveryTruncationAndCorruption) {
  // Never a crash, never a topology that is not a valid one.
  for (const testing::ReferenceTopology& ref : testing::ReferenceTopologies()) {
    SCOPED_TRACE(ref.name);
    for (size_t cut = 0; cut < ref.text.size(); cut += 11) {
      absl::StatusOr<std::shared_ptr<const GpuTopology>> t = Parse(std::string_view(ref.text).substr(0, cut));
      if (t.ok()) {
        EXPECT_GE((*t)->gpu_count(), 1);
      }
      std::string corrupt = ref.text;
      corrupt[cut] = static_cast<char>(corrupt[cut] ^ 0x5a);
      (void)Parse(corrupt);
    }
  }
  const std::string json = R"({"links": [["X", 1, "PIX"], [1, "X", "SYS"], ["PIX", "SYS", "X"]], "pcie": "4.0"})";
  for (size_t cut = 0; cut < json.size(); ++cut) (void)Parse(std::string_view(json).substr(0, cut));
}

// --- through ParseNodeInventory ----------------------------------------------------------

constexpr std::string_view kInventory8 =
    R"([{"index":0,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},{"index":1,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},)"
    R"({"index":2,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},{"index":3,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},)"
    R"({"index":4,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},{"index":5,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},)"
    R"({"index":6,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384},{"index":7,"model":"Tesla-V100-SXM2-16GB","memoryMiB":16384}])";

TEST(ParseNodeInventory, AttachesTheTopology) {
  absl::StatusOr<NodeInventory> inv =
      ParseNodeInventory({.inventory_annotation = kInventory8, .topology_annotation = testing::kDgx1V100});
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_NE(inv->topology, nullptr);
  EXPECT_TRUE(inv->topology_error.ok());
  EXPECT_EQ(inv->topology->gpu_count(), 8);
  EXPECT_EQ(inv->topology->bandwidths().pix.value(), 16000) << "V100: PCIe 3.0";

  absl::StatusOr<NodeInventory> a100 = ParseNodeInventory(
      {.gfd_count = "8", .gfd_product = "NVIDIA-A100-SXM4-80GB", .topology_annotation = testing::kDgxA100});
  ASSERT_TRUE(a100.ok()) << a100.status();
  ASSERT_NE(a100->topology, nullptr);
  EXPECT_EQ(a100->topology->bandwidths().pix.value(), 32000) << "A100: PCIe 4.0";
}

TEST(ParseNodeInventory, ABadTopologyLeavesTheGpusWithoutOne) {
  struct Case {
    std::string name;
    NodeInventoryFields fields;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"a malformed matrix", {.inventory_annotation = kInventory8, .topology_annotation = "  GPU0 GPU1\nGPU0 X NV1\n"},
       "no row for GPU1"},
      {"a GPU past the matrix",
       {.inventory_annotation = kInventory8, .topology_annotation = testing::kHgx4Gpu},
       "describes GPUs 0..3 but the inventory lists GPU 4"},
      {"a label count that differs",
       {.gfd_count = "7", .topology_annotation = testing::kDgx1V100},
       "describes 8 GPUs but the node has 7 (GPU Feature Discovery labels); which GPU is missing is unknown"},
      {"an allocatable count that differs",
       {.allocatable_gpus = "4", .topology_annotation = testing::kDgx1V100},
       "describes 8 GPUs but the node has 4 (allocatable)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NodeInventory> inv = ParseNodeInventory(c.fields);
    ASSERT_TRUE(inv.ok()) << "the GPUs stay usable: " << inv.status();
    EXPECT_FALSE(inv->gpus.empty());
    EXPECT_EQ(inv->topology, nullptr) << "never a wrong topology";
    EXPECT_THAT(std::string(inv->topology_error.message()), HasSubstr(c.message_part));
  }
  // A broken inventory is still an error, topology or not.
  EXPECT_FALSE(ParseNodeInventory({.inventory_annotation = "[", .topology_annotation = testing::kDgx1V100}).ok());
}

TEST(ParseNodeInventory, SharesThePreviousTopologyWhenTheAnnotationIsUnchanged) {
  const NodeInventoryFields fields{.inventory_annotation = kInventory8, .topology_annotation = testing::kDgx1V100};
  absl::StatusOr<NodeInventory> first = ParseNodeInventory(fields);
  ASSERT_TRUE(first.ok() && first->topology != nullptr);

  absl::StatusOr<NodeInventory> again = ParseNodeInventory(fields, &*first);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->topology.get(), first->topology.get()) << "one object, not a copy";

  const std::string edited = std::string(testing::kDgx1V100) + "\n";
  absl::StatusOr<NodeInventory> changed =
      ParseNodeInventory({.inventory_annotation = kInventory8, .topology_annotation = edited}, &*first);
  ASSERT_TRUE(changed.ok() && changed->topology != nullptr);
  EXPECT_NE(changed->topology.get(), first->topology.get()) << "new text, new parse";

  // Same text, GPUs of another generation: other default bandwidths.
  absl::StatusOr<NodeInventory> other_gpus = ParseNodeInventory(
      {.gfd_count = "8", .gfd_product = "NVIDIA-H100-80GB-HBM3", .topology_annotation = testing::kDgx1V100},
      &*first);
  ASSERT_TRUE(other_gpus.ok() && other_gpus->topology != nullptr);
  EXPECT_NE(other_gpus->topology.get(), first->topology.get());
  EXPECT_EQ(other_gpus->topology->bandwidths().pix.value(), 64000);

  // A shared topology is still checked against the new inventory.
  absl::StatusOr<NodeInventory> fewer =
      ParseNodeInventory({.allocatable_gpus = "4", .topology_annotation = testing::kDgx1V100}, &*first);
  ASSERT_TRUE(fewer.ok());
  EXPECT_EQ(fewer->topology, nullptr);
}

}  // namespace
}  // namespace tessera::k8s
