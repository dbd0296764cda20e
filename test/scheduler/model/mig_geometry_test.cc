#include "scheduler/model/mig_geometry.h"

#include "scheduler/model/gpu.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// Slices as a picture, slice 0 first: "xx......" is slices 0 and 1 taken.
SliceMask Taken(std::string_view picture) {
  SliceMask m = 0;
  for (size_t s = 0; s < picture.size(); ++s) {
    if (picture[s] == 'x') m |= static_cast<SliceMask>(1u << s);
  }
  return m;
}

std::vector<int32_t> Starts(SliceMask starts) {
  std::vector<int32_t> out;
  for (int32_t s = 0; s < kMigSlices; ++s) {
    if ((starts >> s & 1u) != 0) out.push_back(s);
  }
  return out;
}

const MigProfile& Profile(std::string_view product, std::string_view name) {
  const MigGeometry* geometry = FindMigGeometry(product);
  EXPECT_NE(geometry, nullptr) << product;
  static const MigProfile kNone{};
  if (geometry == nullptr) return kNone;
  const MigProfile* p = geometry->Find(name);
  EXPECT_NE(p, nullptr) << product << " " << name;
  return p != nullptr ? *p : kNone;
}

TEST(FindMigGeometry, KnowsEachModelAsEverySourceSpellsIt) {
  const struct {
    const char* product;
    const char* model;  // nullptr: no table
  } cases[] = {
      {"NVIDIA-A100-SXM4-40GB", "A100-40GB"},
      {"NVIDIA A100-PCIE-40GB", "A100-40GB"},
      {"NVIDIA-A100-SXM4-80GB", "A100-80GB"},
      {"NVIDIA A100 80GB PCIe", "A100-80GB"},
      {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
      {"NVIDIA H100 PCIe", "H100-80GB"},
      {"NVIDIA-H200", "H200-141GB"},
      {"NVIDIA H100 NVL", nullptr},  // 94 GB: other profiles, no table yet
      {"Tesla-V100-SXM2-16GB", nullptr},
      {"NVIDIA-A30", nullptr},  // 4 slices
      {"", nullptr},
  };
  for (const auto& c : cases) {
    const MigGeometry* g = FindMigGeometry(c.product);
    if (c.model == nullptr) {
      EXPECT_EQ(g, nullptr) << c.product;
    } else {
      ASSERT_NE(g, nullptr) << c.product;
      EXPECT_EQ(g->model, c.model) << c.product;
    }
  }
}

TEST(MigProfiles, EveryTableStartsEachProfileAlignedToItsSizeAndWithinTheGpu) {
  for (const char* product : {"A100-40GB", "A100-80GB", "H100-80GB", "H200"}) {
    const MigGeometry* g = FindMigGeometry(product);
    ASSERT_NE(g, nullptr) << product;
    EXPECT_EQ(g->profiles.size(), 6u) << product;
    for (const MigProfile& p : g->profiles) {
      EXPECT_GT(p.memory.value(), 0) << product << " " << p.name;
      for (int32_t s : Starts(p.starts)) {
        EXPECT_EQ(s % p.memory_slices, 0) << product << " " << p.name << " starts at " << s;
        EXPECT_LE(s + p.memory_slices, kMigSlices) << product << " " << p.name << " starts at " << s;
      }
    }
  }
  EXPECT_EQ(Profile("A100-80GB", "3g.40gb").memory, MemoryMiB(40 * 1024));
  EXPECT_EQ(Profile("A100-40GB", "1g.5gb").memory, MemoryMiB(5 * 1024));
  EXPECT_EQ(FindMigGeometry("A100-80GB")->Find("1g.5gb"), nullptr) << "a 40 GB profile on the 80 GB card";
}

TEST(MigPlacement, ValidStartsFollowNvidiaSmisPlacementsAndNeverOverlap) {
  const struct {
    const char* case_name;
    const char* profile;
    const char* taken;
    std::vector<int32_t> free_starts;
    int32_t more;  // instances that still fit
  } cases[] = {
      {"an empty GPU takes a 1g anywhere but the last slice", "1g.10gb", "........", {0, 1, 2, 3, 4, 5, 6}, 7},
      {"a 1g.20gb starts on even slices", "1g.20gb", "........", {0, 2, 4, 6}, 4},
      {"a 2g.20gb starts at 0, 2 or 4 only", "2g.20gb", "........", {0, 2, 4}, 3},
      {"a 3g.40gb starts at 0 or 4", "3g.40gb", "........", {0, 4}, 2},
      {"a 4g.40gb starts at 0 only", "4g.40gb", "........", {0}, 1},
      {"a 7g.80gb takes the whole GPU", "7g.80gb", "........", {0}, 1},
      {"two scattered 1g leave room for no 3g though six slices are free", "3g.40gb", ".x...x..", {}, 0},
      {"the same two 1g packed leave room for one 3g", "3g.40gb", "xx......", {4}, 1},
      {"a taken slice 0 shuts out the 4g and the 7g", "4g.40gb", "x.......", {}, 0},
      {"slice 7 free alone takes no 1g", "1g.10gb", "xxxxxxx.", {}, 0},
      {"a 2g beside a 3g", "2g.20gb", "xxxx....", {4}, 1},
      {"a full GPU takes nothing", "1g.10gb", "xxxxxxxx", {}, 0},
  };
  for (const auto& c : cases) {
    const MigProfile& p = Profile("NVIDIA-A100-SXM4-80GB", c.profile);
    const SliceMask taken = Taken(c.taken);
    EXPECT_EQ(Starts(FreeMigStarts(p, taken)), c.free_starts) << c.case_name;
    EXPECT_EQ(MaxMoreMigInstances(p, taken), c.more) << c.case_name;
    for (int32_t s : c.free_starts) {
      EXPECT_TRUE(CheckMigPlacement(p, s, taken).ok()) << c.case_name << " at " << s;
      EXPECT_EQ(p.SlicesAt(s) & taken, 0) << c.case_name << " overlaps at " << s;
    }
  }
}

TEST(MigPlacement, AnInvalidOrOverlappingStartIsRefusedWithTheReason) {
  const MigProfile& three = Profile("NVIDIA-H100-80GB-HBM3", "3g.40gb");
  EXPECT_THAT(CheckMigPlacement(three, 2, 0).message(), HasSubstr("3g.40gb instance cannot start at slice 2"));
  EXPECT_THAT(CheckMigPlacement(three, 8, 0).message(), HasSubstr("cannot start at slice 8"));
  EXPECT_THAT(CheckMigPlacement(three, -1, 0).message(), HasSubstr("cannot start at slice -1"));
  EXPECT_THAT(CheckMigPlacement(three, 4, Taken(".....x..")).message(), HasSubstr("would overlap another instance"));
  EXPECT_TRUE(CheckMigPlacement(three, 4, Taken("xxxx....")).ok());
}

TEST(GpuStateMigSummary, APublishedGpuSaysWhichOfItsModelsProfilesHaveAFreeInstance) {
  GpuDevice gpu{.index = 3, .uuid = "GPU-3", .model = "NVIDIA-A100-SXM4-80GB", .memory = MemoryMiB(81920), .numa = 0};
  gpu.mig_mode = true;
  gpu.mig = {{"3g.40gb", 0, ""}, {"2g.20gb", 4, ""}, {"1g.10gb", 6, ""}};
  GpuUsage usage;
  usage.mig_held_starts = 0b0000'0001;  // the 3g.40gb is held
  std::vector<GpuUsage> by_index(4);
  by_index[3] = usage;
  const GpuDevice devices[] = {gpu};
  const std::vector<GpuState> states = JoinGpuStates(devices, by_index);
  ASSERT_EQ(states.size(), 1u);
  const MigGeometry* a100 = FindMigGeometry(gpu.model);
  EXPECT_TRUE(states[0].mig_mode());
  EXPECT_FALSE(states[0].takes_shares());
  EXPECT_EQ(MigGeometryOfId(states[0].mig_geometry()), a100);
  // The A100-80GB table: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb.
  EXPECT_EQ(states[0].mig_free_slots(), 0b0000'0101) << "1g.10gb and 2g.20gb free, the 3g.40gb held";

  GpuDevice t4{.index = 0, .uuid = "", .model = "NVIDIA-T4", .memory = MemoryMiB(15360), .numa = 0};
  t4.mig_mode = true;
  const GpuDevice no_table[] = {t4};
  EXPECT_EQ(JoinGpuStates(no_table, {})[0].mig_geometry(), kNoMigGeometry);
  EXPECT_TRUE(JoinGpuStates(no_table, {})[0].mig_mode());
}

}  // namespace
}  // namespace tessera
