// Naming a GPU instance profile from its sizes, for drivers that do not name
// them: the name must be the one in Tessera's MIG tables
// (scheduler/model/mig_geometry.cc), for every profile of every model.
#include "agent/mig_probe.h"

#include <gtest/gtest.h>

namespace tessera::agent {
namespace {

struct NameCase {
  std::string model;
  int64_t gpu_mib;          // what nvmlDeviceGetMemoryInfo reports for the whole GPU
  unsigned int slices;
  uint64_t memory_mib;      // nvmlGpuInstanceProfileInfo_t::memorySizeMB
  std::string want;
};

TEST(MigProfileName, NamesEveryProfileOfEveryTableAsNvidiaDoes) {
  // A100 sizes as `nvidia-smi mig -lgip` shows them (GiB there, MiB here);
  // the H100 and H200 ones near their drivers' (the rule is what is tested).
  // Plain rounding of the MiB would fail: 40192 MiB is 39.25 GiB, named "40gb".
  const std::vector<NameCase> cases = {
      {"A100-40GB", 40960, 1, 4864, "1g.5gb"},     {"A100-40GB", 40960, 1, 9856, "1g.10gb"},
      {"A100-40GB", 40960, 2, 9856, "2g.10gb"},    {"A100-40GB", 40960, 3, 19968, "3g.20gb"},
      {"A100-40GB", 40960, 4, 19968, "4g.20gb"},   {"A100-40GB", 40960, 7, 40192, "7g.40gb"},
      {"A100-40GB PCIe", 40536, 1, 4864, "1g.5gb"}, {"A100-40GB PCIe", 40536, 7, 40192, "7g.40gb"},
      {"A100-80GB", 81920, 1, 9728, "1g.10gb"},    {"A100-80GB", 81920, 1, 19968, "1g.20gb"},
      {"A100-80GB", 81920, 2, 19968, "2g.20gb"},   {"A100-80GB", 81920, 3, 40192, "3g.40gb"},
      {"A100-80GB", 81920, 4, 40192, "4g.40gb"},   {"A100-80GB", 81920, 7, 80640, "7g.80gb"},
      {"H100-80GB", 81559, 1, 9984, "1g.10gb"},    {"H100-80GB", 81559, 1, 20096, "1g.20gb"},
      {"H100-80GB", 81559, 2, 20096, "2g.20gb"},   {"H100-80GB", 81559, 3, 40448, "3g.40gb"},
      {"H100-80GB", 81559, 4, 40448, "4g.40gb"},   {"H100-80GB", 81559, 7, 81152, "7g.80gb"},
      {"H200-141GB", 143771, 1, 16384, "1g.18gb"}, {"H200-141GB", 143771, 1, 33280, "1g.35gb"},
      {"H200-141GB", 143771, 2, 33280, "2g.35gb"}, {"H200-141GB", 143771, 3, 68096, "3g.71gb"},
      {"H200-141GB", 143771, 4, 68096, "4g.71gb"}, {"H200-141GB", 143771, 7, 133632, "7g.141gb"},
  };
  for (const NameCase& c : cases) {
    SCOPED_TRACE(c.model + " " + c.want);
    const std::string name = MigProfileName(c.slices, c.memory_mib, MemoryMiB(c.gpu_mib));
    EXPECT_EQ(name, c.want);
    // And it is a profile of the model's table, with the slices the name says.
    const MigGeometry* geometry = FindMigGeometry(c.model.substr(0, c.model.find(' ')));
    ASSERT_NE(geometry, nullptr);
    const MigProfile* profile = geometry->Find(name);
    ASSERT_NE(profile, nullptr) << name;
    EXPECT_EQ(profile->compute_slices, static_cast<int32_t>(c.slices));
  }
}

}  // namespace
}  // namespace tessera::agent
