#include "scheduler/cache/node_name_index.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(NodeNameIndex, FindsEveryNameAtItsIndexAndNothingElse) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{5000}}) {
    std::vector<std::string> owned;
    for (size_t i = 0; i < n; ++i) owned.push_back(absl::StrCat("ip-10-0-", i / 256, "-", i % 256, ".ec2.internal"));
    const std::vector<std::string_view> names(owned.begin(), owned.end());
    const NodeNameIndex index(names);
    EXPECT_EQ(index.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(index.Find(names[i]), std::optional<uint32_t>(static_cast<uint32_t>(i))) << names[i];
      EXPECT_EQ(index.Find(names[i], NodeNameIndex::Hash(names[i])), static_cast<uint32_t>(i));
    }
    EXPECT_EQ(index.Find("ip-10-0-0-0.ec2.internal."), std::nullopt) << "a name one byte longer";
    EXPECT_EQ(index.Find("ip-10-0-0-0.ec2.interna"), std::nullopt) << "a name one byte shorter";
    EXPECT_EQ(index.Find(""), std::nullopt);
    EXPECT_EQ(index.Find("gpu-node-1"), std::nullopt);
  }
}

TEST(NodeNameIndex, AnEmptyIndexFindsNothingAndPrefetchIsHarmless) {
  const NodeNameIndex index;
  index.Prefetch(NodeNameIndex::Hash("n"));
  EXPECT_EQ(index.Find("n"), std::nullopt);
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace tessera
