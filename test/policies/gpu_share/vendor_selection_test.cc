// A mixed fleet in one profile: a pod that selects a vendor gets that
// vendor's GPUs, one that selects none gets any, and a node without the
// vendor is refused saying which vendors the pod accepts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

constexpr const char* kMi300x = "AMD-Instinct-MI300X";

std::shared_ptr<const Profile> ShareProfile() {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  return *Profile::Create(std::move(plugins));
}

struct Case {
  std::string name;
  Pod pod;
  std::optional<std::vector<int32_t>> gpus;  // nullopt: refused
};

TEST(VendorSelection, APodGetsTheGpusOfTheVendorsItAccepts) {
  // GPUs 0-1 NVIDIA A100, 2-3 AMD MI300X, GPU 0 half taken.
  const Node node = Node("mixed").Gpus(2).Gpus(2, kMi300x, 196608).Vendor(GpuVendor::kAmd, 2).Hold(0, 500);
  const std::vector<Case> cases = {
      {"no vendor named: any GPU, the fullest first", Pod().Fraction(250), std::vector<int32_t>{0}},
      {"AMD only", Pod().Fraction(250).Vendors({GpuVendor::kAmd}), std::vector<int32_t>{2}},
      {"two whole AMD GPUs", Pod().Count(2).Vendors({GpuVendor::kAmd}), std::vector<int32_t>{2, 3}},
      {"NVIDIA only, whole", Pod().Vendors({GpuVendor::kNvidia}), std::vector<int32_t>{1}},
      {"three whole AMD GPUs do not exist here", Pod().Count(3).Vendors({GpuVendor::kAmd}), std::nullopt},
  };
  const std::shared_ptr<const Profile> profile = ShareProfile();
  const NodeView view = node.View();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<GpuChoice> choice = profile->ChooseGpus(CycleState(c.pod), view);
    ASSERT_EQ(choice.has_value(), c.gpus.has_value());
    if (!choice.has_value()) continue;
    EXPECT_EQ(std::vector<int32_t>(choice->gpu_indices.begin(), choice->gpu_indices.end()), *c.gpus);
  }
}

TEST(VendorSelection, ANodeWithoutTheVendorIsRefusedNamingTheVendorsAccepted) {
  const FilterVerdict v =
      ShareProfile()->Filter(CycleState(Pod().Fraction(250).Vendors({GpuVendor::kAscend})), Node("n").Gpus(8).View());
  EXPECT_EQ(v.code, FilterCode::kUnschedulableUnresolvable);
  EXPECT_EQ(v.reason_code, "gpu_model_mismatch");
  EXPECT_THAT(v.message, HasSubstr("vendors: ascend"));
}

}  // namespace
}  // namespace tessera
