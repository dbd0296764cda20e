#include "k8s/label_value.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

TEST(CheckLabelValueTest, AcceptsWhatTheApiServerAcceptsButTheEmptyValue) {
  for (const std::string& value : std::vector<std::string>{"training", "a", "fine-tuning", "gpu_pool.v2", "A100-80GB", std::string(63, 'x')}) {
    EXPECT_TRUE(CheckLabelValue(value).ok()) << value;
  }
  struct Case {
    std::string value;
    std::string why;
  };
  const std::vector<Case> refused = {
      {"", "must not be empty"},
      {std::string(64, 'x'), "must be at most 63 characters; has 64"},
      {"gpu pool", "may hold only letters, digits, '-', '_' and '.'"},
      {"training\n", "may hold only letters"},
      {"tr\xc3\xa4ining", "may hold only letters"},
      {"-training", "must begin and end with a letter or digit"},
      {"training.", "must begin and end with a letter or digit"},
  };
  for (const Case& c : refused) {
    const absl::Status status = CheckLabelValue(c.value);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.value;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.why)) << c.value;
  }
}

}  // namespace
}  // namespace tessera::k8s
