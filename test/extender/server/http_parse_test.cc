#include "extender/server/http_parse.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

HttpServerOptions SmallLimits() {
  HttpServerOptions options;
  options.body_limit = 16;
  options.header_limit = 256;
  return options;
}

struct ParseCase {
  std::string name;
  std::string bytes;
  unsigned want_status;  // 0: read as a request; 1: closed silently; else the refusal's status
  std::string want;      // a part of the body read, or of the refusal's reason
};

TEST(ParseHttpRequestTest, ReadsOrRefusesAsAConnectionDoes) {
  const std::vector<ParseCase> cases = {
      {"a whole request is read", "POST /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 0, "{}"},
      {"a chunked body is read", "POST /filter HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 0,
       "{}"},
      {"a body over the limit is refused with 413",
       "POST /filter HTTP/1.1\r\nContent-Length: 17\r\n\r\n" + std::string(17, 'x'), 413,
       "request body exceeds the 16-byte limit"},
      {"a header over the limit is refused with 431",
       "GET /healthz HTTP/1.1\r\nX-Pad: " + std::string(300, 'x') + "\r\n\r\n", 431,
       "request header exceeds the 256-byte limit"},
      {"a malformed request line is refused with 400", "POST /filter HTTP/9\r\n\r\n", 400, "malformed HTTP request"},
      {"a header cut short is closed silently", "POST /filter HTTP/1.1\r\nContent-Le", 1, ""},
      {"a body cut short is closed silently", "POST /filter HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}", 1, ""},
      {"nothing at all is closed silently", "", 1, ""},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ParsedRequest parsed = ParseHttpRequest(c.bytes, SmallLimits());
    if (c.want_status == 0) {
      ASSERT_TRUE(parsed.request.has_value());
      EXPECT_FALSE(parsed.rejection.has_value());
      EXPECT_EQ(parsed.request->body(), c.want);
      EXPECT_EQ(parsed.consumed, c.bytes.size());
    } else if (c.want_status == 1) {
      EXPECT_FALSE(parsed.request.has_value());
      EXPECT_FALSE(parsed.rejection.has_value());
    } else {
      EXPECT_FALSE(parsed.request.has_value());
      ASSERT_TRUE(parsed.rejection.has_value());
      EXPECT_EQ(parsed.rejection->result_int(), c.want_status);
      EXPECT_THAT(parsed.rejection->body(), HasSubstr(c.want));
    }
  }
}

TEST(ParseHttpRequestTest, PipelinedRequestsAreReadOneAtATime) {
  const std::string first = "POST /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
  const std::string second = "GET /healthz HTTP/1.1\r\n\r\n";
  const std::string both = first + second;
  const ParsedRequest parsed = ParseHttpRequest(both, SmallLimits());
  ASSERT_TRUE(parsed.request.has_value());
  EXPECT_EQ(parsed.request->target(), "/filter");
  EXPECT_EQ(parsed.consumed, first.size());
  const ParsedRequest next = ParseHttpRequest(std::string_view(both).substr(parsed.consumed), SmallLimits());
  ASSERT_TRUE(next.request.has_value());
  EXPECT_EQ(next.request->target(), "/healthz");
}

}  // namespace
}  // namespace tessera
