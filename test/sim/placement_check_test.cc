// What every placement must keep (sim/placement_check.h): each rule broken
// once, and placements that keep them all.
#include "sim/placement_check.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cluster.h"
#include "sim/fleet.h"

namespace tessera::sim {
namespace {

using ::testing::HasSubstr;

PodGpuRequest Share(int64_t milli) {
  PodGpuRequest r;
  r.whole_gpu = false;
  r.guaranteed = r.limit = MilliGpu(milli);
  return r;
}

PodGpuRequest Mig(const std::string& profile) {
  PodGpuRequest r;
  r.mig_profile = profile;
  r.guaranteed = r.limit = MigComputeOfName(profile);
  return r;
}

PodGpuRequest Whole(int32_t count, std::vector<GpuVendor> vendors = {}) {
  PodGpuRequest r;
  r.count = count;
  r.vendors = std::move(vendors);
  return r;
}

GpuShare On(int32_t index, int64_t milli = 1000) {
  return GpuShare{.index = index, .uuid = {}, .guaranteed = MilliGpu(milli), .limit = MilliGpu(milli),
                  .memory = MemoryMiB(0), .memory_limit = MemoryMiB(0)};
}

GpuShare Instance(int32_t index, const std::string& profile, int32_t start) {
  GpuShare s = On(index, MigComputeOfName(profile).value());
  s.mig = MigInstance{.profile = profile, .start = start, .uuid = {}};
  return s;
}

// Node 0: 2 NVIDIA GPUs; node 1: 2 MIG GPUs (all-balanced), the 1g at slice 2 of GPU 0 held; node 2: 2 AMD GPUs.
Cluster Fleet() {
  TraceNode nvidia{"nvidia", 64000, 262144, 2, "G2"}, mig = nvidia, amd = nvidia;
  mig.name = "mig";
  mig.model = std::string(kMigModel);
  mig.mig = MixedFleetMigLayout();
  amd.name = "amd";
  amd.vendor = GpuVendor::kAmd;
  Cluster cluster({nvidia, mig, amd});
  cluster.Place(1, Mig("1g.10gb"), {Instance(0, "1g.10gb", 2)});
  return cluster;
}

TEST(PlacementCheckTest, EachRuleBrokenIsNamedAndKeptPlacementsPass) {
  struct Case {
    std::string name;
    PodGpuRequest request;
    size_t node;
    std::vector<GpuShare> shares;
    std::string why;  // empty: the placement keeps every rule
  };
  const std::vector<Case> cases = {
      {"a share on an NVIDIA GPU", Share(500), 0, {On(1, 500)}, ""},
      {"a free MIG instance of the profile", Mig("1g.10gb"), 1, {Instance(0, "1g.10gb", 3)}, ""},
      {"the same instance on the other GPU", Mig("1g.10gb"), 1, {Instance(1, "1g.10gb", 2)}, ""},
      {"amd pods on AMD GPUs", Whole(2, {GpuVendor::kAmd}), 2, {On(0), On(1)}, ""},
      {"a pod asking for no GPU holds none", Whole(0), 0, {}, ""},
      {"a share on a MIG GPU", Share(300), 1, {On(0, 300)}, "in MIG mode"},
      {"a MIG pod on a GPU not in MIG mode", Mig("1g.10gb"), 0, {Instance(0, "1g.10gb", 2)}, "not in MIG mode"},
      {"a MIG pod without an instance", Mig("1g.10gb"), 1, {On(0, 142)}, "without an instance"},
      {"an instance held already", Mig("1g.10gb"), 1, {Instance(0, "1g.10gb", 2)}, "held already"},
      {"an instance of another profile", Mig("1g.10gb"), 1, {Instance(0, "2g.20gb", 0)}, "got a 2g.20gb"},
      {"an instance the GPU does not list", Mig("1g.10gb"), 1, {Instance(0, "1g.10gb", 5)}, "lists no 1g.10gb"},
      {"an instance given to a share pod", Share(300), 0, {Instance(0, "1g.10gb", 2)}, "got one on GPU 0"},
      {"an nvidia pod on AMD", Whole(1, {GpuVendor::kNvidia}), 2, {On(0)}, "amd, a vendor the pod does not select"},
      {"an amd pod on NVIDIA", Whole(1, {GpuVendor::kAmd}), 0, {On(0)}, "nvidia, a vendor"},
      {"fewer GPUs than asked", Whole(2), 0, {On(0)}, "asks for 2 GPUs and got 1"},
      {"one GPU twice", Whole(2), 0, {On(0), On(0)}, "GPU 0 twice"},
      {"a GPU the node lacks", Whole(1), 0, {On(7)}, "no GPU 7"},
  };
  const Cluster cluster = Fleet();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<std::string> why = PlacementViolation(c.request, cluster.View(c.node), c.shares);
    if (c.why.empty()) {
      EXPECT_EQ(why, std::nullopt);
    } else {
      ASSERT_TRUE(why.has_value());
      EXPECT_THAT(*why, HasSubstr(c.why));
    }
  }
}

TEST(PlacementCheckTest, ViolationsCountAndKeepTheFirst) {
  const Cluster cluster = Fleet();
  PlacementViolations v;
  v.Record(4, cluster.View(1), "first");
  v.Record(9, cluster.View(0), "second");
  EXPECT_EQ(v.count, 2);
  EXPECT_EQ(v.first, "pod 4 on mig: first");
}

}  // namespace
}  // namespace tessera::sim
