#include "config/policy_loader.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/deadline.h"
#include "test/testing/fake_plugins.h"

namespace tessera {
namespace {

using config_test::FakeRegistry;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Lines 1-3 of every policy below; plugin entries start on line 4.
constexpr std::string_view kHeader =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n";

std::string Policy(std::string_view plugins) { return std::string(kHeader) + std::string(plugins); }

// A profile needs exactly one chooser; most cases add theirs as line 4.
constexpr std::string_view kChooser = "  - name: fake-chooser\n";

absl::Status Load(std::string_view yaml) {
  const PluginRegistry registry = FakeRegistry();
  return LoadPolicyText(yaml, "policy.yaml", registry).status();
}

struct ErrorCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> want;  // the error lines, in order
};

std::vector<ErrorCase> ErrorCases() {
  const std::string chooser(kChooser);
  return {
      {"A YAML syntax error is reported at the parser's position",
       Policy(chooser + "  - name: [fake-score\n"),
       {"policy.yaml:6:1: invalid YAML: end of sequence flow not found"}},
      {"An empty file is reported as empty", "", {"policy.yaml: the file is empty; expected apiVersion, kind and plugins"}},
      {"A file with only comments is reported as empty", "# nothing yet\n",
       {"policy.yaml: the file is empty; expected apiVersion, kind and plugins"}},
      {"A top level that is a list is rejected", "- a\n- b\n",
       {"policy.yaml:1:1: must be a map with apiVersion, kind and plugins; got a list"}},
      {"A second YAML document is rejected",
       Policy(chooser) + "---\napiVersion: x\n",
       {"policy.yaml:6:1: only one YAML document is allowed"}},
      {"A wrong apiVersion is rejected with the expected value",
       "apiVersion: tessera.io/v1\nkind: SchedulingPolicy\nplugins:\n" + chooser,
       {"policy.yaml:1:13: apiVersion: must be \"tessera.io/v1alpha1\"; got \"tessera.io/v1\""}},
      {"A wrong kind is rejected with the expected value",
       "apiVersion: tessera.io/v1alpha1\nkind: Policy\nplugins:\n" + chooser,
       {"policy.yaml:2:7: kind: must be \"SchedulingPolicy\"; got \"Policy\""}},
      {"A missing apiVersion and kind are reported at the top of the file",
       "plugins:\n" + chooser,
       {"policy.yaml:1:1: apiVersion: required; must be \"tessera.io/v1alpha1\"",
        "policy.yaml:1:1: kind: required; must be \"SchedulingPolicy\""}},
      {"A missing plugins list is reported at the top of the file",
       "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\n",
       {"policy.yaml:1:1: plugins: required; list at least one plugin"}},
      {"An empty plugins list is rejected",
       "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins: []\n",
       {"policy.yaml:3:10: plugins: must list at least one plugin"}},
      {"A null plugins list is rejected",
       "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n",
       {"policy.yaml:3:1: plugins: must list at least one plugin"}},
      {"A plugins field that is a map is rejected",
       Policy("  name: fake-chooser\n"),
       {"policy.yaml:4:3: plugins: must be a list of plugins; got a map"}},
      {"A plugin entry that is not a map is rejected",
       Policy(chooser + "  - fake-score\n"),
       {"policy.yaml:5:5: plugins[1]: must be a map with name, weight and args; got \"fake-score\""}},
      {"A plugin entry without a name is reported at the entry",
       Policy(chooser + "  - weight: 2\n"),
       {"policy.yaml:5:5: plugins[1].name: required"}},
      {"A plugin name that is not a string is rejected",
       Policy(chooser + "  - name: {a: b}\n"),
       {"policy.yaml:5:11: plugins[1].name: must be a plugin name; got a map"}},
      {"An unknown plugin name lists the known names, sorted",
       Policy(chooser + "  - name: fake-scor\n"),
       {"policy.yaml:5:11: plugins[1].name: unknown plugin \"fake-scor\"; known: fake-broken, "
        "fake-chooser, fake-lazy, fake-score, fake-score-b"}},
      {"A plugin listed twice is reported at its second entry",
       Policy(chooser + "  - name: fake-score\n  - name: fake-chooser\n"),
       {"policy.yaml:6:11: plugins[2].name: duplicate plugin \"fake-chooser\" (first listed as plugins[0])"}},
      {"A weight that is not an integer is rejected",
       Policy(chooser + "    weight: 1.5\n"),
       {"policy.yaml:5:13: plugins[0].weight: must be an integer in 1..100; got \"1.5\""}},
      {"A weight of zero is out of range",
       Policy(chooser + "    weight: 0\n"),
       {"policy.yaml:5:13: plugins[0].weight: must be an integer in 1..100; got 0"}},
      {"A weight above 100 is out of range",
       Policy(chooser + "    weight: 101\n"),
       {"policy.yaml:5:13: plugins[0].weight: must be an integer in 1..100; got 101"}},
      {"An unknown top-level field is rejected",
       Policy(chooser) + "profiles: []\n",
       {"policy.yaml:5:1: profiles: unknown field"}},
      {"An unknown field in a plugin entry is rejected",
       Policy(chooser + "    wieght: 2\n"),
       {"policy.yaml:5:5: plugins[0].wieght: unknown field"}},
      {"A field given twice is rejected at its second occurrence",
       Policy(chooser + "    weight: 2\n    weight: 3\n"),
       {"policy.yaml:6:5: plugins[0].weight: duplicate field"}},
      {"Args that are not a map are rejected",
       Policy(chooser + "    args: [gpus]\n"),
       {"policy.yaml:5:11: plugins[0].args: must be a map; got a list"}},
      {"An enum arg outside its values lists the values",
       Policy(chooser + "    args:\n      order: middle\n"),
       {"policy.yaml:6:14: plugins[0].args.order: must be one of first, last; got \"middle\""}},
      {"An integer arg that is not an integer is rejected",
       Policy(chooser + "    args:\n      gpus: abc\n"),
       {"policy.yaml:6:13: plugins[0].args.gpus: must be an integer in 1..8; got \"abc\""}},
      {"An integer arg out of range states the range",
       Policy(chooser + "    args:\n      gpus: 9\n"),
       {"policy.yaml:6:13: plugins[0].args.gpus: must be an integer in 1..8; got 9"}},
      {"A bool arg must be true or false",
       Policy(chooser + "  - name: fake-score\n    args:\n      strict: yes\n"),
       {"policy.yaml:7:15: plugins[1].args.strict: must be true or false; got \"yes\""}},
      {"A string-list arg that is a single string is rejected",
       Policy(chooser + "  - name: fake-score\n    args:\n      models: A100\n"),
       {"policy.yaml:7:15: plugins[1].args.models: must be a list of strings; got \"A100\""}},
      {"A string-list element that is not a string is reported at its index",
       Policy(chooser + "  - name: fake-score\n    args:\n      models: [A100, {x: 1}]\n"),
       {"policy.yaml:7:22: plugins[1].args.models[1]: must be a string; got a map"}},
      {"A factory's cross-field error is reported at the field it names",
       Policy(chooser + "  - name: fake-score\n    args:\n      strict: true\n      models: []\n"),
       {"policy.yaml:8:15: plugins[1].args.models: must list at least one model when strict is true"}},
      {"A factory's error about an absent field points at the args",
       Policy(chooser + "  - name: fake-score\n    args:\n      strict: true\n"),
       {"policy.yaml:7:7: plugins[1].args.models: must list at least one model when strict is true"}},
      {"An unknown arg is rejected as an unknown field",
       Policy(chooser + "    args:\n      gpus: 2\n      gpuz: 3\n"),
       {"policy.yaml:7:7: plugins[0].args.gpuz: unknown field"}},
      {"An unknown arg is found even when the factory never calls Finish",
       Policy(chooser + "  - name: fake-lazy\n    args:\n      anything: 1\n"),
       {"policy.yaml:7:7: plugins[1].args.anything: unknown field"}},
      {"A factory that fails without an arg error has its message reported at the entry",
       Policy(chooser + "  - name: fake-broken\n"),
       {"policy.yaml:5:11: plugins[1]: cannot start: no GPU driver"}},
      {"A profile without a GPU chooser is rejected with Profile::Create's reason",
       Policy("  - name: fake-score\n"),
       {"policy.yaml:4:3: plugins: a profile needs exactly one plugin that chooses GPUs (such as "
        "gpu-share); found 0"}},
      {"The chooser check waits until every plugin was built",
       Policy("  - name: fake-score\n    args:\n      score: 101\n"),
       {"policy.yaml:6:14: plugins[0].args.score: must be an integer in 0..100; got 101"}},
      {"A bad weight does not hide the chooser check",
       Policy("  - name: fake-score\n    weight: 0\n"),
       {"policy.yaml:4:3: plugins: a profile needs exactly one plugin that chooses GPUs (such as "
        "gpu-share); found 0",
        "policy.yaml:5:13: plugins[0].weight: must be an integer in 1..100; got 0"}},
      {"Several errors in one file are all reported, in line order",
       "apiVersion: tessera.io/v2\n"        // 1
       "kind: SchedulingPolicy\n"           // 2
       "plugins:\n"                         // 3
       "  - name: fake-chooser\n"           // 4
       "    weight: many\n"                 // 5
       "    args:\n"                        // 6
       "      order: middle\n"              // 7
       "      gpus: 0\n"                    // 8
       "  - name: fake-score\n"             // 9
       "    args:\n"                        // 10
       "      strict: true\n"               // 11
       "      colour: blue\n"               // 12
       "  - name: gpu-shar\n"               // 13
       "  - name: fake-chooser\n"           // 14
       "extra: 1\n",                        // 15
       {"policy.yaml:1:13: apiVersion: must be \"tessera.io/v1alpha1\"; got \"tessera.io/v2\"",
        "policy.yaml:5:13: plugins[0].weight: must be an integer in 1..100; got \"many\"",
        "policy.yaml:7:14: plugins[0].args.order: must be one of first, last; got \"middle\"",
        "policy.yaml:8:13: plugins[0].args.gpus: must be an integer in 1..8; got 0",
        "policy.yaml:11:7: plugins[1].args.models: must list at least one model when strict is true",
        "policy.yaml:12:7: plugins[1].args.colour: unknown field",
        "policy.yaml:13:11: plugins[2].name: unknown plugin \"gpu-shar\"; known: fake-broken, "
        "fake-chooser, fake-lazy, fake-score, fake-score-b",
        "policy.yaml:14:11: plugins[3].name: duplicate plugin \"fake-chooser\" (first listed as plugins[0])",
        "policy.yaml:15:1: extra: unknown field"}},
  };
}

TEST(PolicyLoaderTest, EachErrorIsReportedWithFileLineColumnAndPath) {
  for (const ErrorCase& c : ErrorCases()) {
    SCOPED_TRACE(c.name);
    const absl::Status status = Load(c.yaml);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(status.message()), absl::StrJoin(c.want, "\n"));
  }
}

TEST(PolicyLoaderTest, AValidFileLoadsThePluginsInFileOrder) {
  const PluginRegistry registry = FakeRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      Policy("  - name: fake-score\n"
             "    weight: 3\n"
             "    args:\n"
             "      score: 100\n"
             "      reserve: 1Gi\n"
             "      models: [A100, H100]\n"
             "      strict: true\n"
             "  - name: fake-chooser\n"
             "    args:\n"
             "      gpus: 2\n"
             "      order: last\n"
             "  - name: fake-score-b\n"
             "    args: {score: 0}\n"),
      "policy.yaml", registry);
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_NE(*profile, nullptr);
  EXPECT_THAT((*profile)->PluginNames(), ElementsAre("fake-score", "fake-chooser", "fake-score-b"));
}

// Weights reach the profile's weighted sums: scores 100 (weight w1) and 0
// (weight w2) sum to 100*w1 out of 100*(w1+w2).
TEST(PolicyLoaderTest, WeightsReachTheProfileAndDefaultToOne) {
  const PluginRegistry registry = FakeRegistry();
  struct Case {
    std::string name;
    std::string weights;  // the two entries' weight lines
    int64_t want_sum;
    int64_t want_total_weight;
  };
  const std::vector<Case> cases = {
      {"Weights 3 and 1 give 300 of 400", "    weight: 3\n|    weight: 1\n", 300, 4},
      {"Weights 1 and 3 give 100 of 400", "    weight: 1\n|    weight: 3\n", 100, 4},
      {"Absent weights default to 1 and give 100 of 200", "|", 100, 2},
      {"A null weight takes the default", "    weight:\n|    weight: ~\n", 100, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t bar = c.weights.find('|');
    const std::string yaml = Policy("  - name: fake-chooser\n  - name: fake-score\n" + c.weights.substr(0, bar) +
                                    "    args: {score: 100}\n  - name: fake-score-b\n" +
                                    c.weights.substr(bar + 1) + "    args: {score: 0}\n");
    absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(yaml, "policy.yaml", registry);
    ASSERT_TRUE(profile.ok()) << profile.status();
    const NodeView node{.name = "n1", .gpus = {}, .inventory_error = nullptr, .usage = {}};
    const std::vector<const NodeView*> nodes = {&node};
    const RunResult run = (*profile)->Run(CycleState(PodGpuRequest{}), nodes, RunOptions{}, nullptr);
    ASSERT_EQ(run.totals.size(), 1u) << "fake-chooser finds GPUs anywhere";
    EXPECT_EQ(run.totals[0], c.want_sum);
    EXPECT_EQ((*profile)->total_weight(), c.want_total_weight);
  }
}

TEST(PolicyLoaderTest, APluginWithoutArgsTakesEveryDefault) {
  EXPECT_TRUE(Load(Policy(kChooser)).ok());
  EXPECT_TRUE(Load(Policy(std::string(kChooser) + "    args:\n")).ok());
  EXPECT_TRUE(Load(Policy(std::string(kChooser) + "    args: {}\n")).ok());
}

TEST(PolicyLoaderTest, AnUnreadableFileIsReportedWithItsPath) {
  const PluginRegistry registry = FakeRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyFile("/nonexistent/tessera/policy.yaml", registry);
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(profile.status().message(),
            "/nonexistent/tessera/policy.yaml: cannot read: No such file or directory");
}

TEST(PolicyLoaderTest, ADirectoryIsNotAPolicyFile) {
  const PluginRegistry registry = FakeRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyFile("/", registry);
  EXPECT_FALSE(profile.ok());
  EXPECT_THAT(std::string(profile.status().message()), StartsWith("/: cannot read: "));
}

TEST(PolicyLoaderTest, AnInvalidMemoryArgCarriesTheParsersReason) {
  const absl::Status status =
      Load(Policy(std::string(kChooser) + "  - name: fake-score\n    args:\n      reserve: 12Qi\n"));
  EXPECT_THAT(std::string(status.message()),
              StartsWith("policy.yaml:7:16: plugins[1].args.reserve: must be a memory quantity such as 512Mi "
                         "or 1Gi, or a whole number of MiB; got \"12Qi\": "));
}

TEST(PolicyLoaderTest, HostileInputIsAnErrorNotACrash) {
  const std::vector<std::string> inputs = {
      std::string(2000, '['),                 // deep nesting: yaml-cpp's depth guard throws
      "plugins: *undefined\n",                // an unknown alias
      "\t- tab\n",                            // a tab where indentation is expected
      std::string("apiVersion: \0x\n", 15),   // an embedded NUL
      "a: &x [*x]\n",
  };
  for (const std::string& input : inputs) {
    SCOPED_TRACE(input.substr(0, 40));
    EXPECT_FALSE(Load(input).ok());
  }
}

// Texts on which yaml-cpp 0.7 alone never returns, or returns a tree whose
// walk never ends; each is refused in bounded time with a positioned error.
TEST(PolicyLoaderTest, YamlThatWouldHangTheParserIsRefusedInBoundedTime) {
  const std::vector<ErrorCase> cases = {
      {"A file that is just a comma", ",", {"policy.yaml:1:1: invalid YAML: unexpected ','"}},
      {"A comma after a document start", "---\n,\n", {"policy.yaml:2:1: invalid YAML: unexpected ','"}},
      {"A comma after a valid policy", Policy(std::string(kChooser)) + ",\n",
       {"policy.yaml:5:1: invalid YAML: end of map not found"}},
      {"An alias inside its own anchor", "plugins: &p [*p]\n",
       {"policy.yaml:1:14: invalid YAML: an alias may not refer to a node that contains it"}},
      {"Lists nested past the depth cap",
       [] {
         std::string text;  // level i is the line "<2i spaces>-"
         for (int i = 0; i < 40; ++i) text += std::string(static_cast<size_t>(2 * i), ' ') + "-\n";
         return text;
       }(),
       {"policy.yaml:33:65: invalid YAML: nested deeper than 32 levels"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const testing::BoundedRun run =
        testing::RunWithDeadline([&] { return Load(c.yaml).ok() ? 1 : 0; }, std::chrono::seconds(10));
    ASSERT_TRUE(run.finished) << run.what;
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_EQ(std::string(Load(c.yaml).message()), absl::StrJoin(c.want, "\n"));
  }
}

}  // namespace
}  // namespace tessera
