// The scanner that lets the extender decode a body an object at a time: it
// must find each value's exact text, and accept exactly the JSON that
// simdjson (which used to parse the whole body) accepts.
#include "k8s/internal/json_scan.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

namespace tessera::k8s::internal {
namespace {

using ::testing::HasSubstr;

TEST(JsonScannerTest, ValuesComeOutAsTheirExactText) {
  const std::string text = R"( {"Pod" : {"a":[1,2,{"b":"}]\"{"}]} , "n":-1.5e+3,"t":true,"x":null} )";
  JsonScanner s(text);
  ASSERT_TRUE(s.Expect('{', "'{'"));
  EXPECT_EQ(s.String(), "Pod");
  ASSERT_TRUE(s.Expect(':', "':'"));
  EXPECT_EQ(s.Value(), R"({"a":[1,2,{"b":"}]\"{"}]})");
  ASSERT_TRUE(s.Consume(','));
  EXPECT_EQ(s.String(), "n");
  ASSERT_TRUE(s.Consume(':'));
  EXPECT_EQ(s.Value(), "-1.5e+3");
  ASSERT_TRUE(s.Consume(','));
  EXPECT_EQ(s.String(), "t");
  ASSERT_TRUE(s.Consume(':'));
  EXPECT_EQ(s.Value(), "true");
  ASSERT_TRUE(s.Consume(','));
  EXPECT_EQ(s.Value(), R"("x")");
  ASSERT_TRUE(s.Consume(':'));
  EXPECT_EQ(s.Value(), "null");
  ASSERT_TRUE(s.Consume('}'));
  EXPECT_TRUE(s.ExpectEnd());
}

// Whole texts as one value: the scanner's verdict and simdjson's agree.
TEST(JsonScannerTest, AcceptsExactlyWhatSimdjsonAccepts) {
  struct Case {
    std::string name;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"an object", R"({"a":{"b":[1,-0,0.5,1e2,1E-2,true,false,null,"x\n\u00e9\ud83d\ude00"]}})"},
      {"the largest unsigned integer", "18446744073709551615"},
      {"the most negative integer", "-9223372036854775808"},
      {"an underflowing double (zero)", "1e-400"},
      {"an integer past uint64", "18446744073709551616"},
      {"an integer past int64", "-9223372036854775809"},
      {"a double past the largest", "1.8e308"},
      {"a leading zero", "01"},
      {"a bare minus", "-"},
      {"a fraction without digits", "1."},
      {"an exponent without digits", "1e"},
      {"a trailing comma", "[1,]"},
      {"a missing colon", R"({"a" 1})"},
      {"a member name that is not a string", "{a:1}"},
      {"a truncated literal", "tru"},
      {"text after the value", "{} x"},
      {"a tab in a string", "\"a\tb\""},
      {"an unknown escape", R"("\x")"},
      {"a short unicode escape", R"("\u00")"},
      {"a lone high surrogate", R"("\ud800")"},
      {"a lone low surrogate", R"("\udc00")"},
      {"a high surrogate before a letter", R"("\ud800x")"},
      {"an unterminated string", R"("abc)"},
      {"an unclosed array", "[1,2"},
      {"1024 nested arrays", std::string(1024, '[') + std::string(1024, ']')},
      {"1025 nested arrays", std::string(1025, '[') + std::string(1025, ']')},
      {"nothing", ""},
      {"only spaces", "  \n"},
  };
  simdjson::dom::parser parser;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const bool simdjson_ok = parser.parse(c.text).error() == simdjson::SUCCESS;
    JsonScanner s(c.text);
    const bool scanner_ok = s.Value().has_value() && s.ExpectEnd();
    EXPECT_EQ(scanner_ok, simdjson_ok) << s.error();
    if (!scanner_ok) {
      EXPECT_THAT(s.error(), HasSubstr(" at "));
    }
  }
}

TEST(JsonScannerTest, ContainerFindsTheEndOfAnObjectByItsStringsAndBrackets) {
  const std::string text = R"( {"a":"}\"{","b":[1,{"c":"\\"}]} ,"rest")";
  JsonScanner s(text);
  EXPECT_EQ(s.Container(0), R"({"a":"}\"{","b":[1,{"c":"\\"}]})");
  EXPECT_TRUE(s.Consume(','));

  JsonScanner deep("[[[1]]]");
  EXPECT_EQ(deep.Container(JsonScanner::kMaxDepth - 3), "[[[1]]]");
  JsonScanner too_deep("[[[1]]]");
  EXPECT_FALSE(too_deep.Container(JsonScanner::kMaxDepth - 2).has_value());
  EXPECT_THAT(too_deep.error(), HasSubstr("nesting deeper than 1024 levels"));

  for (const char* broken : {R"({"a":"x)", R"({"a":[1,2)", "1"}) {
    SCOPED_TRACE(broken);
    JsonScanner b(broken);
    EXPECT_FALSE(b.Container(0).has_value());
    EXPECT_FALSE(b.error().empty());
  }
}

TEST(JsonScannerTest, AnErrorSaysWhatWasExpectedAndWhere) {
  JsonScanner s(R"({"a":1 "b":2})");
  EXPECT_FALSE(s.Value().has_value());
  EXPECT_EQ(s.error(), "expected ',' or '}' at byte 7");
}

TEST(UnescapeJsonStringTest, DecodesEscapesAndLeavesPlainTextInPlace) {
  std::string storage;
  const std::string_view plain = "gpu-node-1";
  const std::optional<std::string_view> same = UnescapeJsonString(plain, storage);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->data(), plain.data()) << "no escape: no copy";

  struct Case {
    std::string raw;
    std::optional<std::string> want;
  };
  const std::vector<Case> cases = {
      {R"(a\"b\\c\/d\b\f\n\r\t)", std::string("a\"b\\c/d\b\f\n\r\t")},
      {R"(\u0041\u00e9\u20ac)", std::string("A\xc3\xa9\xe2\x82\xac")},
      {R"(\ud83d\ude00)", std::string("\xf0\x9f\x98\x80")},
      {R"(\ud83d)", std::nullopt},
      {R"(\ude00)", std::nullopt},
      {R"(\q)", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.raw);
    const std::optional<std::string_view> got = UnescapeJsonString(c.raw, storage);
    ASSERT_EQ(got.has_value(), c.want.has_value());
    if (got) {
      EXPECT_EQ(*got, *c.want);
    }
  }
}

}  // namespace
}  // namespace tessera::k8s::internal
