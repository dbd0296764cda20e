// The hand-written JSON of prioritize's answer and of every string Tessera
// writes: what a JSON parser reads back must be what was written.
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/extender_results.h"
#include "scheduler/common/json_text.h"

namespace tessera {
namespace {

TEST(JsonStringTest, EscapesWhatJsonRequiresAndCopiesTheRest) {
  struct Case {
    std::string name;
    std::string text;
    std::string literal;
  };
  const std::vector<Case> cases = {
      {"a node name is copied as it is", "gpu-node-00042.zone-a", "\"gpu-node-00042.zone-a\""},
      {"an empty string", "", "\"\""},
      {"a quote", "say \"hi\"", "\"say \\\"hi\\\"\""},
      {"a backslash", "C:\\gpu", "\"C:\\\\gpu\""},
      {"newline, return and tab by name", "a\nb\rc\td", "\"a\\nb\\rc\\td\""},
      {"other control characters in hex", std::string("x\x01y\x1f", 4), "\"x\\u0001y\\u001f\""},
      {"UTF-8 passes through", "GPU 0 bei 95\xC2\xB0", "\"GPU 0 bei 95\xC2\xB0\""},
      {"a long name with one escape at the end", std::string(100, 'n') + "\"",
       "\"" + std::string(100, 'n') + "\\\"\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string out = "prefix:";
    AppendJsonString(out, c.text);
    EXPECT_EQ(out, "prefix:" + c.literal);
    EXPECT_EQ(nlohmann::json::parse(c.literal).get<std::string>(), c.text);
  }
}

TEST(HostPriorityListTest, EveryHostAndScoreReadsBackInOrder) {
  const std::vector<std::string> names = {"gpu-node-00000", "a\"quoted\"node", "gpu-node-4999", "n"};
  const std::vector<std::string_view> hosts(names.begin(), names.end());
  const std::vector<int64_t> scores = {0, 9, 10, 1};
  const nlohmann::json answer = nlohmann::json::parse(k8s::EncodeHostPriorityList(hosts, scores));
  ASSERT_TRUE(answer.is_array());
  ASSERT_EQ(answer.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(answer[i]["Host"], names[i]);
    EXPECT_EQ(answer[i]["Score"], scores[i]);
  }
  EXPECT_EQ(k8s::EncodeHostPriorityList({}, {}), "[]");
  EXPECT_EQ(k8s::EncodeHostPriorityList({"n"}, {100}), "[{\"Host\":\"n\",\"Score\":100}]")
      << "outside the wire's 0..10 the number is still written whole";
}

}  // namespace
}  // namespace tessera
