// Which GPUs of Tessera's inventory DRA claims hold (MatchDraClaims): by the
// slice's node and the device's UUID; what cannot be matched is said.
#include "k8s/sync/dra_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/testing/builders.h"

namespace tessera::k8s {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Inventory;

// A slice of `node`'s devices "gpu-<i>" with the given uuids ("" for none).
DraSlice Slice(const std::string& node, std::vector<std::string> uuids, const std::string& driver = "gpu.example.com") {
  DraSlice s{.name = node + "-slice", .driver = driver, .pool = node, .node = node, .devices = {}};
  for (size_t i = 0; i < uuids.size(); ++i) {
    s.devices.push_back({.name = "gpu-" + std::to_string(i), .uuid = uuids[i], .pci_bus_id = ""});
  }
  return s;
}

DraClaim Claim(const std::string& name, const std::string& pool, std::vector<std::string> devices,
               const std::string& driver = "gpu.example.com") {
  DraClaim c{.uid = "uid-" + name, .namespace_name = "ml", .name = name, .allocated = {}};
  for (const std::string& d : devices) c.allocated.push_back({.driver = driver, .pool = pool, .device = d});
  return c;
}

class MatchDraClaimsTest : public ::testing::Test {
 protected:
  MatchDraClaimsTest() {
    model_.UpsertNode("n1", Inventory(2), absl::OkStatus());  // GPU-0, GPU-1
    NodeInventory mig = Inventory(1);
    mig.gpus[0].uuid = "GPU-mig";
    mig.gpus[0].mig_mode = true;
    model_.UpsertNode("n2", mig, absl::OkStatus());
    model_.UpsertNode("cpu-only", NodeInventory{}, absl::OkStatus());
    model_.Publish();
  }
  DraMatch Match() { return MatchDraClaims(slices_, claims_, *model_.Current()); }
  void Add(DraSlice s) { slices_[s.name] = std::move(s); }
  void Add(DraClaim c) { claims_[c.uid] = std::move(c); }

  ClusterModel model_;
  absl::btree_map<std::string, DraSlice> slices_;
  absl::btree_map<std::string, DraClaim> claims_;
};

TEST_F(MatchDraClaimsTest, AnAllocatedDeviceHoldsTheGpuOfItsUuidWholeAndAboveEveryPriority) {
  Add(Slice("n1", {"GPU-0", "GPU-1"}));
  Add(Claim("train", "n1", {"gpu-1"}));
  const DraMatch m = Match();
  ASSERT_EQ(m.holdings.size(), 1u);
  const PodHolding& h = m.holdings.begin()->second;
  EXPECT_EQ(h.uid, "dra:uid-train:gpu-1");
  EXPECT_EQ(h.pod_key, "ml/train");
  EXPECT_EQ(h.priority, std::numeric_limits<int32_t>::max()) << "no preemption may take a claim's GPU";
  ASSERT_EQ(h.assignment.gpus.size(), 1u);
  EXPECT_EQ(h.assignment.node, "n1");
  EXPECT_EQ(h.assignment.gpus[0].index, 1);
  EXPECT_EQ(h.assignment.gpus[0].guaranteed, MilliGpu(1000));
  EXPECT_EQ(h.assignment.gpus[0].memory, MemoryMiB(testing::kA100Mib));
  EXPECT_THAT(m.report.held, ElementsAre("ml/train: n1 GPU 1 (gpu.example.com/n1/gpu-1)"));
  EXPECT_THAT(m.report.shared_nodes, ElementsAre("n1"));
  EXPECT_THAT(m.report.unmatched, IsEmpty());
}

TEST_F(MatchDraClaimsTest, ASliceOnANodeTesseraHasNoGpusOfIsNotShared) {
  Add(Slice("cpu-only", {"GPU-x"}));
  Add(Slice("elsewhere", {"GPU-y"}));
  Add(Claim("c", "elsewhere", {"gpu-0"}));
  const DraMatch m = Match();
  EXPECT_THAT(m.report.shared_nodes, IsEmpty());
  EXPECT_TRUE(m.holdings.empty()) << "a node Tessera does not place on is none of its business";
  EXPECT_THAT(m.report.unmatched, IsEmpty());
}

TEST_F(MatchDraClaimsTest, ADeviceWithoutAKnownUuidOrOnAMigGpuIsUnmatchedAndSaysWhy) {
  DraSlice n1 = Slice("n1", {"", "GPU-unknown"});
  n1.devices[0].pci_bus_id = "0000:3b:00.0";
  Add(n1);
  Add(Slice("n2", {"GPU-mig"}));
  Add(Claim("a", "n1", {"gpu-0", "gpu-1"}));
  Add(Claim("b", "n2", {"gpu-0"}));
  const DraMatch m = Match();
  EXPECT_TRUE(m.holdings.empty());
  ASSERT_EQ(m.report.unmatched.size(), 3u);
  EXPECT_THAT(m.report.unmatched[0], HasSubstr("gpu-0 on node n1 has only a PCI bus id (0000:3b:00.0)"));
  EXPECT_THAT(m.report.unmatched[1], HasSubstr("has uuid GPU-unknown, which no GPU of the node's inventory has"));
  EXPECT_THAT(m.report.unmatched[2], HasSubstr("is a GPU in MIG mode"));
}

TEST_F(MatchDraClaimsTest, AClaimWhoseDeviceNoSliceListsYetHoldsNothingYet) {
  Add(Claim("early", "n1", {"gpu-0"}));
  EXPECT_TRUE(Match().holdings.empty());
  Add(Slice("n1", {"GPU-0"}));
  EXPECT_EQ(Match().holdings.size(), 1u);
}

TEST_F(MatchDraClaimsTest, ADeviceOfAnotherDriverWithTheSameNameAndNoIdentityIsNoneOfTesserasBusiness) {
  Add(Slice("n1", {"GPU-0", "GPU-1"}, "gpu.example.com"));
  DraSlice nics = Slice("n1", {"", ""}, "nic.example.com");
  nics.name = "n1-nics";
  Add(nics);
  Add(Claim("nic", "n1", {"gpu-0"}, "nic.example.com"));
  const DraMatch m = Match();
  EXPECT_TRUE(m.holdings.empty()) << "the NIC named gpu-0 is not GPU 0";
  EXPECT_THAT(m.report.unmatched, IsEmpty());
}

}  // namespace
}  // namespace tessera::k8s
