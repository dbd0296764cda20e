// test/testing/data_files.h, through which every test reads the repository's
// data/ (the trace, the recorded requests). It lives beside the trace tests
// because test/testing/ is a library, not a test area. A file that is not
// there fails the test that needs it, by name; it never crashes it.
#include "test/testing/data_files.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/trace.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DataFilesTest, AFileThatCannotBeReadIsAnErrorStartingWithItsPath) {
  struct Case {
    std::string name;
    std::string path;
    absl::StatusCode code;
    std::string message_part;
  };
  const std::string folder = ::testing::TempDir();
  const std::vector<Case> cases = {
      {"a missing file is not found", "/nonexistent/openb/openb_pod_list_default.csv", absl::StatusCode::kNotFound,
       "cannot open: No such file or directory"},
      {"a folder is not a file", folder, absl::StatusCode::kFailedPrecondition, "is a folder, not a file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::string> text = ReadDataFile(c.path);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.status().code(), c.code);
    EXPECT_THAT(std::string(text.status().message()), StartsWith(c.path + ": "));
    EXPECT_THAT(text.status().message(), HasSubstr(c.message_part));
  }
}

TEST(DataFilesTest, ReadingAMissingFileForATestThatGoesOnIsAFailureNamingIt) {
  std::string text = "untouched";
  EXPECT_NONFATAL_FAILURE(text = ReadFile("/nonexistent/filter-request-fullnodes.json"),
                          "/nonexistent/filter-request-fullnodes.json: cannot open");
  EXPECT_EQ(text, "") << "the test goes on with nothing rather than with garbage";
}

TEST(DataFilesTest, TheShippedDataIsInTheRepositoryAndReadable) {
  // One file of each folder under data/, as the tests name them.
  for (const std::string& path : {FixturePath("filter-request-fullnodes.json"), OpenbPath("openb_node_list_gpu_node.csv")}) {
    SCOPED_TRACE(path);
    EXPECT_THAT(path, StartsWith(std::string(TESSERA_DATA_DIR) + "/")) << "read from the repository, nowhere else";
    absl::StatusOr<std::string> text = ReadDataFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_FALSE(text->empty());
  }
}

TEST(DataFilesTest, TheEnvironmentMayNameAnotherDataFolder) {
  const ScopedEnv env("TESSERA_DATA_DIR", "/elsewhere");
  EXPECT_EQ(OpenbPath("openb_pod_list_default.csv"), "/elsewhere/openb/openb_pod_list_default.csv");
  EXPECT_EQ(FixturePath("bind-request.json"), "/elsewhere/kube-scheduler-v1.26/bind-request.json");
}

TEST(DataFilesTest, AMissingTraceFailsTheTraceLoaderByName) {
  const ScopedEnv env("TESSERA_DATA_DIR", "/nonexistent-data");
  absl::StatusOr<std::vector<sim::TracePod>> pods = sim::LoadPodList(OpenbPath("openb_pod_list_default.csv"));
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(pods.status().message()),
              StartsWith("/nonexistent-data/openb/openb_pod_list_default.csv: cannot open"));
}

}  // namespace
}  // namespace tessera::testing
