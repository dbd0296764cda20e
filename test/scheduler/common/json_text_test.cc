// Every JSON string Tessera writes by hand: what a JSON parser reads back
// must be what was written.
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

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
      // StrCat rather than operator+: g++ 12 -O3 warns (-Wrestrict) on the latter.
      {"a long name with one escape at the end", absl::StrCat(std::string(100, 'n'), "\""),
       absl::StrCat("\"", std::string(100, 'n'), "\\\"\"")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string out = "prefix:";
    AppendJsonString(out, c.text);
    EXPECT_EQ(out, "prefix:" + c.literal);
    EXPECT_EQ(nlohmann::json::parse(c.literal).get<std::string>(), c.text);
  }
}

// The scans read 16 bytes at a time (8 without SSE2), the last block
// overlapping: a byte that needs escaping must be found wherever it stands,
// in strings of every length.
TEST(JsonStringTest, FindsEveryCharacterThatNeedsEscapingAtEveryPositionAndLength) {
  for (size_t length = 1; length <= 40; ++length) {
    for (size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        std::string text(length, 'g');
        text[at] = static_cast<char>(byte);
        const bool escaped = byte < 0x20 || byte == '"' || byte == '\\';
        std::string out;
        AppendJsonString(out, text);
        ASSERT_EQ(out.size() > length + 2, escaped) << "length " << length << ", byte " << byte << " at " << at;
        ASSERT_EQ(out.substr(0, 1 + at), absl::StrCat("\"", text.substr(0, at)));
        ASSERT_EQ(IsPlainJsonString(text), !escaped) << "length " << length << ", byte " << byte << " at " << at;
        ASSERT_EQ(IsPlainJsonString(text, '%'), !escaped && byte != '%') << "length " << length << ", byte " << byte;
        ASSERT_EQ(PlainJsonStringPrefix(text), escaped ? at : length) << "length " << length << ", byte " << byte;
      }
    }
  }
  EXPECT_TRUE(IsPlainJsonString(""));
  EXPECT_EQ(PlainJsonStringPrefix(""), 0u);
  EXPECT_EQ(PlainJsonStringPrefix(absl::StrCat(std::string(33, 'a'), "\"", std::string(20, '\\'))), 33u)
      << "the first one counts";
}

}  // namespace
}  // namespace tessera
