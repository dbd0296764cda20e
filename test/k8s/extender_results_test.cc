#include "k8s/extender_results.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Wire(std::string_view text) {
  std::string out;
  AppendWireReason(out, text);
  return nlohmann::json::parse(out).get<std::string>();
}

struct WireCase {
  std::string name;
  std::string text;
  std::string want;
};

TEST(AppendWireReasonTest, NoPercentSignReachesKubeScheduler) {
  const std::vector<WireCase> cases = {
      {"a reason without a percent sign is written as it is", "node has no GPUs", "node has no GPUs"},
      {"a percentage after a number reads as words",
       "GPU 0 at 95% utilisation (5m avg) above the 90% threshold",
       "GPU 0 at 95 percent utilisation (5m avg) above the 90 percent threshold"},
      {"a range of percentages reads as words", "must be in (0, 1] or (0%, 100%]",
       "must be in (0, 1] or (0 percent, 100 percent]"},
      {"what Go would take for verbs is disarmed", "tessera.io/gpu-fraction=\"%s%d%v\"",
       "tessera.io/gpu-fraction=\"percentspercentdpercentv\""},
      {"a lone percent sign is a word too", "%", "percent"},
  };
  for (const WireCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Wire(c.text), c.want);
  }
}

TEST(AppendWireReasonTest, ALongReasonIsCutAtACharacterBoundary) {
  EXPECT_EQ(Wire(std::string(kMaxWireReasonBytes, 'a')), std::string(kMaxWireReasonBytes, 'a'));
  const std::string cut = Wire(std::string(kMaxWireReasonBytes + 1, 'a'));
  EXPECT_EQ(cut.size(), kMaxWireReasonBytes);
  EXPECT_TRUE(cut.ends_with("aaa..."));
  // "é" is two bytes; after two 'a's the cut would fall inside one.
  std::string accents = "aa";
  while (accents.size() < 2 * kMaxWireReasonBytes) accents += "é";
  const std::string cut_accents = Wire(accents);
  EXPECT_LE(cut_accents.size(), kMaxWireReasonBytes);
  EXPECT_TRUE(cut_accents.ends_with("é..."));
  // Percent signs grow the text before the cut; the cap still holds.
  EXPECT_LE(Wire(std::string(4 * kMaxWireReasonBytes, '%')).size(), kMaxWireReasonBytes);
}

TEST(EncodeFilterResultTest, ReasonsAndTheErrorCarryNoPercentSign) {
  const std::vector<std::string_view> names = {"n1", "n2", "n3"};
  ExtenderArgs args;
  args.node_names = names;
  FilterResult result;
  result.passed = {0};
  result.failed.Add("n2", "GPU 0 at 95% utilisation (5m avg) above the 90% threshold");
  result.unresolvable.Add("n3", "burst limits would reach 1800/1000 milli (cap 100%)");
  result.error = "tessera.io/gpu-fraction=\"150%\": must be in (0, 1] or (0%, 100%]";
  const std::string answer = EncodeFilterResult(args, result);
  EXPECT_THAT(answer, Not(HasSubstr("%")));
  const nlohmann::json got = nlohmann::json::parse(answer);
  EXPECT_EQ(got["FailedNodes"]["n2"], "GPU 0 at 95 percent utilisation (5m avg) above the 90 percent threshold");
  EXPECT_EQ(got["FailedAndUnresolvableNodes"]["n3"], "burst limits would reach 1800/1000 milli (cap 100 percent)");
  EXPECT_EQ(got["Error"],
            "tessera.io/gpu-fraction=\"150 percent\": must be in (0, 1] or (0 percent, 100 percent]");
  EXPECT_EQ(got["NodeNames"], nlohmann::json::array({"n1"}));
}

TEST(EncodeFilterResultTest, PassedNamesReadBackInPassedOrderWhetherOrNotOneNeedsEscaping) {
  const struct {
    const char* case_name;
    std::vector<std::string_view> names;
  } cases[] = {
      {"plain DNS names", {"gpu-node-0", "gpu-node-1", "n", "gpu-node-3"}},
      {"one name with a quote and a control character", {"gpu-node-0", "a\"b\x01", "n", "gpu-node-3"}},
  };
  for (const auto& c : cases) {
    ExtenderArgs args;
    args.node_names = c.names;
    FilterResult result;
    result.passed = {3, 1, 0};
    const nlohmann::json got = nlohmann::json::parse(EncodeFilterResult(args, result));
    EXPECT_EQ(got["NodeNames"], nlohmann::json::array({c.names[3], c.names[1], c.names[0]})) << c.case_name;
    EXPECT_TRUE(got["FailedNodes"].empty()) << c.case_name;
  }
}

TEST(HostPriorityListTest, EveryHostAndScoreReadsBackInOrder) {
  const std::vector<std::string> names = {"gpu-node-00000", "a\"quoted\"node", "gpu-node-4999", "n"};
  const std::vector<std::string_view> hosts(names.begin(), names.end());
  const std::vector<int64_t> scores = {0, 9, 10, 1};
  const nlohmann::json answer = nlohmann::json::parse(EncodeHostPriorityList(hosts, scores));
  ASSERT_TRUE(answer.is_array());
  ASSERT_EQ(answer.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(answer[i]["Host"], names[i]);
    EXPECT_EQ(answer[i]["Score"], scores[i]);
  }
  EXPECT_EQ(EncodeHostPriorityList({}, {}), "[]");
  // Names that need no escaping are written into room made in advance:
  // every score, however wide, still fits and reads back.
  const std::vector<std::string_view> plain = {"a", "gpu-node-00001", "b", "c", "d"};
  const std::vector<int64_t> wide = {10, 0, -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  const nlohmann::json read_back = nlohmann::json::parse(EncodeHostPriorityList(plain, wide));
  ASSERT_EQ(read_back.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(read_back[i]["Host"], plain[i]);
    EXPECT_EQ(read_back[i]["Score"], wide[i]);
  }
  EXPECT_EQ(EncodeHostPriorityList({"n"}, {100}), "[{\"Host\":\"n\",\"Score\":100}]")
      << "outside the wire's 0..10 the number is still written whole";
}

}  // namespace
}  // namespace tessera::k8s
