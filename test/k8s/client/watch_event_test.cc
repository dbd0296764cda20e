#include "k8s/client/watch_event.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string name;
  std::string line;
  std::optional<WatchEventType> type;  // nullopt: refused
  std::string resource_version_or_error;
};

class ParseWatchEventTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParseWatchEventTest, ReadsTheTypeAndTheObjectOrSaysWhatIsWrong) {
  const Case& c = GetParam();
  simdjson::dom::parser parser;
  absl::StatusOr<WatchEvent> event = ParseWatchEvent(parser, c.line);
  if (!c.type.has_value()) {
    EXPECT_THAT(event.status().message(), HasSubstr(c.resource_version_or_error));
    return;
  }
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, *c.type);
  EXPECT_EQ(event->resource_version, c.resource_version_or_error);
}

INSTANTIATE_TEST_SUITE_P(
    Lines, ParseWatchEventTest,
    ::testing::Values(
        Case{"Added", R"({"type":"ADDED","object":{"metadata":{"name":"p","resourceVersion":"12"}}})",
             WatchEventType::kAdded, "12"},
        Case{"ObjectBeforeType", R"({"object":{"metadata":{"resourceVersion":"13"}},"type":"MODIFIED"})",
             WatchEventType::kModified, "13"},
        Case{"Deleted", R"({"type":"DELETED","object":{"metadata":{"resourceVersion":"14"}}})",
             WatchEventType::kDeleted, "14"},
        Case{"Bookmark", R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"99"}}})",
             WatchEventType::kBookmark, "99"},
        Case{"ErrorStatusHasNoVersion", R"({"type":"ERROR","object":{"kind":"Status","code":410}})",
             WatchEventType::kError, ""},
        Case{"TruncatedJson", R"({"type":"MODIFIED","object":{"kind":)", std::nullopt, "not a JSON object"},
        Case{"NoObject", R"({"type":"MODIFIED"})", std::nullopt, "event MODIFIED has no object"},
        Case{"NoType", R"({"object":{}})", std::nullopt, "event has no type"},
        Case{"UnknownType", R"({"type":"EXPLODED","object":{}})", std::nullopt, "unknown event type \"EXPLODED\""}),
    [](const auto& info) { return info.param.name; });


struct StatusCase {
  std::string name;
  std::string body;
  int64_t http_status;
  int64_t code;
  bool gone;
  absl::Duration retry_after;
};

class ParseWatchStatusTest : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ParseWatchStatusTest, SaysWhetherToRelistOrWhenToWatchAgain) {
  const StatusCase& c = GetParam();
  simdjson::dom::parser parser;
  const WatchStatus status = ParseWatchStatus(parser, c.body, c.http_status);
  EXPECT_EQ(status.code, c.code);
  EXPECT_EQ(status.gone(), c.gone);
  EXPECT_EQ(status.retry_after, c.retry_after);
}

INSTANTIATE_TEST_SUITE_P(
    Statuses, ParseWatchStatusTest,
    ::testing::Values(
        StatusCase{"TooLargeResourceVersionWaitsWhatTheServerSays",
                   R"({"kind":"Status","code":504,"reason":"Timeout","message":"Timeout: Too large resource version: 255, current: 253",)"
                   R"("details":{"causes":[{"reason":"ResourceVersionTooLarge"}],"retryAfterSeconds":1}})",
                   200, 504, false, absl::Seconds(1)},
        StatusCase{"ExpiredIsGone", R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})", 200, 410,
                   true, absl::ZeroDuration()},
        StatusCase{"AReasonOfGoneWithoutACodeIsGone", R"({"kind":"Status","reason":"Gone"})", 200, 200, true,
                   absl::ZeroDuration()},
        StatusCase{"TooManyRequestsIsCappedAtAMinute",
                   R"({"kind":"Status","code":429,"reason":"TooManyRequests","details":{"retryAfterSeconds":3600}})",
                   429, 429, false, absl::Seconds(60)},
        StatusCase{"ANegativeRetryAfterIsNone", R"({"code":500,"details":{"retryAfterSeconds":-5}})", 500, 500, false,
                   absl::ZeroDuration()},
        StatusCase{"ABodyThatIsNoJsonKeepsTheHttpStatus", "upstream connect error", 503, 503, false,
                   absl::ZeroDuration()}),
    [](const ::testing::TestParamInfo<StatusCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::k8s
