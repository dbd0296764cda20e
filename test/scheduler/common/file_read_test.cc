// ReadRegularFile: what may be read (a regular file, through a symlink, up to
// the limit) and what is refused at once, naming the path.
#include "scheduler/common/file_read.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

class ReadRegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tessera-file-read-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(ReadRegularFileTest, AFileUpToTheLimitIsReadWholeAlsoThroughASymlink) {
  const std::string path = Write("policy.yaml", "kind: SchedulingPolicy\n");
  absl::StatusOr<std::string> text = ReadRegularFile(path, 23);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "kind: SchedulingPolicy\n");
  const std::string link = dir_ + "/link.yaml";
  std::filesystem::create_symlink(path, link);  // as a ConfigMap mount has it
  EXPECT_EQ(*ReadRegularFile(link, 1024), "kind: SchedulingPolicy\n");
}

TEST_F(ReadRegularFileTest, WhatCannotBeReadIsRefusedNamingThePathAndWhy) {
  const std::string large = Write("large.yaml", std::string(100, 'x'));
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string name, path, says;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {"a file past the limit", large, "larger than 99 bytes", absl::StatusCode::kInvalidArgument},
      {"a FIFO, refused without blocking", fifo, "not a regular file", absl::StatusCode::kInvalidArgument},
      {"a directory", dir_, "not a regular file", absl::StatusCode::kInvalidArgument},
      {"a path that is not there", dir_ + "/missing.yaml", "No such file", absl::StatusCode::kNotFound},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::string> text = ReadRegularFile(c.path, 99);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.status().code(), c.code) << text.status();
    EXPECT_THAT(std::string(text.status().message()), HasSubstr(c.path));
    EXPECT_THAT(std::string(text.status().message()), HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace tessera
