#include "scheduler/framework/plugin_args.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

PluginArgs Args(std::string_view yaml) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText(yaml);
  EXPECT_TRUE(args.ok()) << args.status();
  return *std::move(args);
}

TEST(PluginArgsTest, AbsentAndNullKeysTakeTheDefaults) {
  for (std::string_view yaml : {"", "~", "{}", "mode: ~\nn: ~\nflag: ~\nmem: ~\nlist: ~\n"}) {
    SCOPED_TRACE(yaml);
    PluginArgs args = Args(yaml);
    EXPECT_EQ(args.Enum("mode", {"a", "b"}, "b", "doc"), "b");
    EXPECT_EQ(args.Int("n", 1, 10, 7, "doc"), 7);
    EXPECT_TRUE(args.Bool("flag", true, "doc"));
    EXPECT_EQ(args.Memory("mem", MemoryMiB(42), "doc"), MemoryMiB(42));
    EXPECT_THAT(args.StringList("list", "doc"), IsEmpty());
    EXPECT_TRUE(args.Finish().ok());
  }
}

TEST(PluginArgsTest, EveryGetterDescribesItsArgOnceWithTypeRangeDefaultAndDoc) {
  PluginArgs args = Args("");
  (void)args.Enum("mode", {"a", "b"}, "b", "Which mode.");
  (void)args.Int("n", 1, 10, 7, "How many.");
  (void)args.Int("n", 1, 10, 7, "Asked twice, described once.");
  (void)args.Bool("flag", true, "Whether.");
  (void)args.Memory("mem", MemoryMiB(42), "How much.");
  (void)args.StringList("list", "Which ones.");
  (void)args.IntMap("mix", 0, 9, "How each.");
  const std::vector<ArgDescription>& d = args.described();
  ASSERT_EQ(d.size(), 6u);
  auto row = [](const ArgDescription& a) { return a.key + "|" + a.type + "|" + a.allowed + "|" + a.default_value + "|" + a.doc; };
  EXPECT_EQ(row(d[0]), "mode|one of|a, b|b|Which mode.");
  EXPECT_EQ(row(d[1]), "n|integer|1..10|7|How many.");
  EXPECT_EQ(row(d[2]), "flag|boolean||true|Whether.");
  EXPECT_EQ(row(d[3]), "mem|memory|quantity (512Mi, 1Gi) or whole MiB|42Mi|How much.");
  EXPECT_EQ(row(d[4]), "list|list of strings|||Which ones.");
  EXPECT_EQ(row(d[5]), "mix|map of names to integers|0..9||How each.");
}

TEST(PluginArgsTest, ValidValuesAreReturned) {
  PluginArgs args = Args(
      "mode: a\n"
      "low: 1\n"
      "high: 10\n"
      "negative: -3\n"
      "yes: true\n"
      "no: FALSE\n"
      "mi: 512Mi\n"
      "gi: 1Gi\n"
      "plain: 256\n"
      "list: [x, \"y z\", '']\n");
  EXPECT_EQ(args.Enum("mode", {"a", "b"}, "b", "doc"), "a");
  EXPECT_EQ(args.Int("low", 1, 10, 5, "doc"), 1);
  EXPECT_EQ(args.Int("high", 1, 10, 5, "doc"), 10);
  EXPECT_EQ(args.Int("negative", -5, 5, 0, "doc"), -3);
  EXPECT_TRUE(args.Bool("yes", false, "doc"));
  EXPECT_FALSE(args.Bool("no", true, "doc"));
  EXPECT_EQ(args.Memory("mi", MemoryMiB(0), "doc"), MemoryMiB(512));
  EXPECT_EQ(args.Memory("gi", MemoryMiB(0), "doc"), MemoryMiB(1024));
  EXPECT_EQ(args.Memory("plain", MemoryMiB(0), "doc"), MemoryMiB(256));  // MiB, not bytes
  EXPECT_THAT(args.StringList("list", "doc"), ElementsAre("x", "y z", ""));
  EXPECT_TRUE(args.Finish().ok());
  EXPECT_FALSE(args.has_errors());
}

TEST(PluginArgsTest, EachBadValueRecordsAnErrorAndReturnsTheDefault) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string want;
  };
  // Every getter reads key "v"; the value starts at column 4.
  const std::vector<Case> cases = {
      {"An enum value outside the allowed ones", "v: c", "args.yaml:1:4: args.v: must be one of a, b; got \"c\""},
      {"An enum value with the wrong case", "v: A", "args.yaml:1:4: args.v: must be one of a, b; got \"A\""},
      {"An enum value that is a list", "v: [a]", "args.yaml:1:4: args.v: must be one of a, b; got a list"},
      {"An integer with a fraction", "v: 1.5", "args.yaml:1:4: args.v: must be an integer in 1..10; got \"1.5\""},
      {"An integer that is a word", "v: abc", "args.yaml:1:4: args.v: must be an integer in 1..10; got \"abc\""},
      {"An integer in hexadecimal", "v: 0x5", "args.yaml:1:4: args.v: must be an integer in 1..10; got \"0x5\""},
      {"An integer beyond int64", "v: 99999999999999999999",
       "args.yaml:1:4: args.v: must be an integer in 1..10; got \"99999999999999999999\""},
      {"An integer below the range", "v: 0", "args.yaml:1:4: args.v: must be an integer in 1..10; got 0"},
      {"An integer above the range", "v: 11", "args.yaml:1:4: args.v: must be an integer in 1..10; got 11"},
      {"A bool written as yes", "v: yes", "args.yaml:1:4: args.v: must be true or false; got \"yes\""},
      {"A bool written as 1", "v: 1", "args.yaml:1:4: args.v: must be true or false; got \"1\""},
      {"A memory value that is a map", "v: {a: 1}",
       "args.yaml:1:4: args.v: must be a memory quantity such as 512Mi or 1Gi, or a whole number of MiB; got a map"},
      {"A memory value beyond 2^40 MiB", "v: 1099511627777",
       "args.yaml:1:4: args.v: must be at most 1099511627776 MiB; got \"1099511627777\""},
      {"A string list that is a map", "v: {a: 1}", "args.yaml:1:4: args.v: must be a list of strings; got a map"},
      {"A string list with a nested list", "v: [a, [b]]", "args.yaml:1:8: args.v[1]: must be a string; got a list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PluginArgs args = Args(c.yaml);
    if (c.name.starts_with("An enum")) {
      EXPECT_EQ(args.Enum("v", {"a", "b"}, "b", "doc"), "b");
    } else if (c.name.starts_with("An integer")) {
      EXPECT_EQ(args.Int("v", 1, 10, 5, "doc"), 5);
    } else if (c.name.starts_with("A bool")) {
      EXPECT_TRUE(args.Bool("v", true, "doc"));
    } else if (c.name.starts_with("A memory")) {
      EXPECT_EQ(args.Memory("v", MemoryMiB(7), "doc"), MemoryMiB(7));
    } else if (c.name.ends_with("map")) {
      EXPECT_THAT(args.StringList("v", "doc"), IsEmpty());
    } else {
      EXPECT_THAT(args.StringList("v", "doc"), ElementsAre("a"));  // the bad element is left out
    }
    EXPECT_TRUE(args.has_errors());
    const absl::Status status = args.Finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.want);
  }
}

TEST(PluginArgsTest, FinishReportsEveryUnreadKeyOnce) {
  PluginArgs args = Args("known: 1\ntypo: 2\nother: 3\n");
  EXPECT_EQ(args.Int("known", 0, 9, 0, "doc"), 1);
  const absl::Status first = args.Finish();
  EXPECT_EQ(first.message(),
            "args.yaml:2:1: args.typo: unknown field\n"
            "args.yaml:3:1: args.other: unknown field");
  EXPECT_EQ(args.Finish(), first);  // a second call adds nothing
}

TEST(PluginArgsTest, HasDoesNotCountAsARead) {
  PluginArgs args = Args("set: 1\nunset: ~\n");
  EXPECT_TRUE(args.Has("set"));
  EXPECT_FALSE(args.Has("unset"));
  EXPECT_FALSE(args.Has("absent"));
  EXPECT_EQ(args.Finish().message(),
            "args.yaml:1:1: args.set: unknown field\nargs.yaml:2:1: args.unset: unknown field");
}

TEST(PluginArgsTest, ErrorPointsAtTheNamedKeyOrTheArgs) {
  PluginArgs args = Args("a: 1\nb: 2\n");
  (void)args.Int("a", 0, 9, 0, "doc");
  args.Error("b", "must be greater than a");   // present: at its value, and now counts as read
  args.Error("c", "is required when a is 1");  // absent: at the args map
  args.Error("", "a and b conflict");          // the args as a whole
  EXPECT_EQ(args.Finish().message(),
            "args.yaml:1:1: args.c: is required when a is 1\n"
            "args.yaml:1:1: args: a and b conflict\n"
            "args.yaml:2:4: args.b: must be greater than a");
}

TEST(PluginArgsTest, ArgsThatAreNotAMapAreAnError) {
  PluginArgs args = Args("[1, 2]");
  EXPECT_EQ(args.Int("a", 0, 9, 4, "doc"), 4);
  EXPECT_EQ(args.Finish().message(), "args.yaml:1:1: args: must be a map; got a list");
}

TEST(PluginArgsTest, FromTextRejectsInvalidYaml) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("a: [1, 2\n", "x.yaml");
  EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(args.status().message(), "x.yaml:2:1: invalid YAML: end of sequence flow not found");
}

TEST(PluginArgsTest, FinishOnlyReportsTheErrorsOfItsOwnArgs) {
  auto errors = std::make_shared<ConfigErrors>("p.yaml");
  errors->Add(YAML::Mark(), "elsewhere", "an earlier plugin's error");
  PluginArgs args(YAML::Load("a: 1"), YAML::Mark(), "plugins[1].args", errors);
  EXPECT_FALSE(args.has_errors());
  EXPECT_EQ(args.Int("a", 0, 9, 0, "doc"), 1);
  EXPECT_TRUE(args.Finish().ok());
  EXPECT_EQ(errors->size(), 1u);
}

}  // namespace
}  // namespace tessera
