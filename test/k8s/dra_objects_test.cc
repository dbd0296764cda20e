// ResourceSlices and ResourceClaims as a v1.36 API server sends them
// (resource.k8s.io/v1), and what is wrong with a broken one.
#include "k8s/dra_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<DraSlice> Slice(std::string_view json) {
  static simdjson::dom::parser parser;
  return DecodeResourceSlice(parser.parse(json.data(), json.size(), true).value());
}
absl::StatusOr<DraClaim> Claim(std::string_view json) {
  static simdjson::dom::parser parser;
  return DecodeResourceClaim(parser.parse(json.data(), json.size(), true).value());
}

TEST(DecodeResourceSliceTest, ReadsTheNodePoolAndEachDevicesUuidAndPciBusIdInAnyDomain) {
  absl::StatusOr<DraSlice> slice = Slice(R"({"metadata":{"name":"n1-gpu.nvidia.com-abcde"},
    "spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},
      "devices":[
        {"name":"gpu-0","attributes":{"uuid":{"string":"GPU-aaaa"},"pcieBusID":{"string":"0000:3b:00.0"},"index":{"int":0}}},
        {"name":"gpu-1","attributes":{"gpu.nvidia.com/uuid":{"string":"GPU-bbbb"},"example.com/pci-bus-id":{"string":"0000:86:00.0"}}},
        {"name":"gpu-2","capacity":{"memory":{"value":"80Gi"}}}]}})");
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->driver, "gpu.nvidia.com");
  EXPECT_EQ(slice->pool, "n1");
  EXPECT_EQ(slice->node, "n1");
  ASSERT_EQ(slice->devices.size(), 3u);
  EXPECT_EQ(slice->devices[0].uuid, "GPU-aaaa");
  EXPECT_EQ(slice->devices[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(slice->devices[1].uuid, "GPU-bbbb");
  EXPECT_EQ(slice->devices[1].pci_bus_id, "0000:86:00.0");
  EXPECT_EQ(slice->devices[2].name, "gpu-2");
  EXPECT_EQ(slice->devices[2].uuid, "");
}

TEST(DecodeResourceSliceTest, ASliceOfNoNodeOrNoDevicesIsRead) {
  absl::StatusOr<DraSlice> slice =
      Slice(R"({"metadata":{"name":"fabric"},"spec":{"driver":"d","allNodes":true,"pool":{"name":"p"}}})");
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->node, "");
  EXPECT_TRUE(slice->devices.empty());
}

struct Broken {
  std::string name;
  std::string json;
  std::string error;
};

class BrokenSliceTest : public ::testing::TestWithParam<Broken> {};
TEST_P(BrokenSliceTest, IsRefusedNamingTheField) {
  absl::StatusOr<DraSlice> slice = Slice(GetParam().json);
  ASSERT_FALSE(slice.ok());
  EXPECT_THAT(slice.status().message(), HasSubstr(GetParam().error));
}
INSTANTIATE_TEST_SUITE_P(
    Slices, BrokenSliceTest,
    ::testing::Values(Broken{"NoName", R"({"metadata":{},"spec":{"driver":"d","pool":{"name":"p"}}})", "metadata.name is missing"},
                      Broken{"NoDriver", R"({"metadata":{"name":"s"},"spec":{"pool":{"name":"p"}}})", "spec.driver is missing"},
                      Broken{"NoPool", R"({"metadata":{"name":"s"},"spec":{"driver":"d"}})", "spec.pool.name is missing"},
                      Broken{"DevicesNotAList", R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"},"devices":{}}})",
                             "devices must be a list"},
                      Broken{"ADeviceWithoutAName",
                             R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"},"devices":[{}]}})",
                             "devices[0].name is missing"},
                      Broken{"ANodeNameThatIsNoString",
                             R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"},"nodeName":7}})",
                             "nodeName must be a string"}),
    [](const auto& info) { return info.param.name; });

TEST(DecodeResourceClaimTest, ReadsEveryAllocatedDevice) {
  absl::StatusOr<DraClaim> claim = Claim(R"({"metadata":{"name":"train","namespace":"ml","uid":"u-1"},
    "spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}},
    "status":{"allocation":{"devices":{"results":[
      {"request":"gpus","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-0"},
      {"request":"gpus","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-3"}]},
      "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}},
     "reservedFor":[{"resource":"pods","name":"train-0","uid":"p-1"}]}})");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->uid, "u-1");
  EXPECT_EQ(claim->namespace_name, "ml");
  ASSERT_EQ(claim->allocated.size(), 2u);
  EXPECT_EQ(claim->allocated[1].device, "gpu-3");
  EXPECT_EQ(claim->allocated[1].pool, "n1");
}

TEST(DecodeResourceClaimTest, AClaimNotAllocatedHoldsNothing) {
  absl::StatusOr<DraClaim> claim = Claim(R"({"metadata":{"name":"c","namespace":"ml","uid":"u"},"status":{}})");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(claim->allocated.empty());
}

class BrokenClaimTest : public ::testing::TestWithParam<Broken> {};
TEST_P(BrokenClaimTest, IsRefusedNamingTheField) {
  absl::StatusOr<DraClaim> claim = Claim(GetParam().json);
  ASSERT_FALSE(claim.ok());
  EXPECT_THAT(claim.status().message(), HasSubstr(GetParam().error));
}
INSTANTIATE_TEST_SUITE_P(
    Claims, BrokenClaimTest,
    ::testing::Values(Broken{"NoUid", R"({"metadata":{"name":"c"}})", "metadata.uid is missing"},
                      Broken{"AResultWithoutADevice",
                             R"({"metadata":{"name":"c","namespace":"ml","uid":"u"},"status":{"allocation":{"devices":
                                 {"results":[{"driver":"d","pool":"p"}]}}}})",
                             "results[0].device is missing"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::k8s
