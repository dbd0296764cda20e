#include "scheduler/common/yaml_load.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/deadline.h"

namespace tessera::yaml_internal {
namespace {

using ::testing::HasSubstr;

// Generous for a Debug ASan build on a busy machine; the loads below take
// milliseconds, and yaml-cpp's own loops never end.
constexpr std::chrono::milliseconds kDeadline{10000};
constexpr int64_t kMaxPeakRssMib = 1024;

// "Billion laughs": each level is a list of nine aliases of the level below,
// so level 9 names 9^9 (387 million) scalars in a few hundred bytes.
std::string AliasBomb(int levels) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    absl::StrAppend(&text, "a", i, ": &a", i, " [");
    for (int k = 0; k < 9; ++k) absl::StrAppend(&text, k > 0 ? ", " : "", "*a", i - 1);
    absl::StrAppend(&text, "]\n");
  }
  return text;
}

struct RefusedCase {
  std::string name;
  std::string text;
  std::string want;  // a part of the error message
  int line = 0;      // 1-based; 0: no position
};

std::vector<RefusedCase> RefusedCases() {
  return {
      // yaml-cpp 0.7's LoadAll loops forever on these, a null document a turn.
      {"a text that is just a comma is refused at once", ",", "unexpected ','", 1},
      {"a comma after a document start is refused at once", "---\n,", "unexpected ','", 2},
      {"two commas are refused at once", ",,\n", "unexpected ','", 1},
      {"a comma after a valid document is refused at once", "a: 1\n---\n,\n", "unexpected ','", 3},
      {"a flow list never closed is a syntax error", "[", "end of sequence flow not found", 1},
      {"a flow map never closed is a syntax error", "{", "end of map flow not found", 1},
      {"a flow end with no start is a syntax error", "]", "illegal flow end", 1},
      {"an alias to an unknown anchor is a syntax error", "a: *nope\n", "the referenced anchor is not defined", 1},
      {"an alias inside the node it names (a cycle) is refused", "a: &x [*x]\n",
       "an alias may not refer to a node that contains it", 1},
      {"an alias bomb is refused by its expanded size", AliasBomb(9),
       "more than 100000 nodes (an alias counts as the nodes it names)", 0},
      {"a list deeper than the depth cap is refused", std::string(65, '['), "nested deeper than 64 levels", 1},
      {"a block list deeper than the depth cap is refused",
       [] {
         std::string text;
         for (int i = 0; i < 100; ++i) text += std::string(static_cast<size_t>(2 * i), ' ') + "-\n";
         return text;
       }(),
       "nested deeper than 64 levels", 0},
      {"nesting that overflows yaml-cpp's own guard is refused", std::string(100000, '{'), "", 1},
      {"more documents than the cap are refused", [] {
         std::string text;
         for (int i = 0; i < 20; ++i) text += "--- a\n";
         return text;
       }(), "more than 16 YAML documents", 17},
      {"a text larger than the cap is refused before parsing", std::string((1 << 20) + 1, 'a'),
       "larger than 1048576 bytes", 0},
      {"more scalars than the node cap are refused", [] {
         std::string text = "[";
         for (int i = 0; i < 100001; ++i) text += "a,";
         return text + "a]";
       }(), "more than 100000 nodes", 0},
  };
}

TEST(LoadYamlDocumentsTest, HostileTextIsRefusedInBoundedTimeAndMemory) {
  for (const RefusedCase& c : RefusedCases()) {
    SCOPED_TRACE(c.name);
    // In a child first: on today's yaml-cpp some of these never return.
    const testing::BoundedRun run = testing::RunWithDeadline(
        [&] { return LoadYamlDocuments(c.text).error.has_value() ? 0 : 1; }, kDeadline);
    ASSERT_TRUE(run.finished) << run.what;
    EXPECT_EQ(run.exit_code, 0) << "not refused";
    EXPECT_LT(run.peak_rss_mib, kMaxPeakRssMib);

    const YamlDocuments parsed = LoadYamlDocuments(c.text);
    ASSERT_TRUE(parsed.error.has_value());
    EXPECT_TRUE(parsed.documents.empty());
    EXPECT_THAT(parsed.error->message, HasSubstr(c.want));
    if (c.line > 0) {
      EXPECT_EQ(parsed.error->mark.line + 1, c.line) << parsed.error->message;
    }
  }
}

TEST(LoadYamlDocumentsTest, ValidTextGivesEveryDocument) {
  const YamlDocuments one = LoadYamlDocuments("a: 1\nb: [x, y]\n");
  ASSERT_FALSE(one.error.has_value()) << one.error->message;
  ASSERT_EQ(one.documents.size(), 1u);
  EXPECT_EQ(one.documents[0]["b"][1].Scalar(), "y");

  const YamlDocuments two = LoadYamlDocuments("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(two.error.has_value()) << two.error->message;
  ASSERT_EQ(two.documents.size(), 2u);
  EXPECT_EQ(two.documents[1].Mark().line, 2);

  for (std::string_view empty : {"", "# only a comment\n", "\n\n"}) {
    SCOPED_TRACE(empty);
    const YamlDocuments none = LoadYamlDocuments(empty);
    EXPECT_FALSE(none.error.has_value());
    EXPECT_TRUE(none.documents.empty());
  }
}

TEST(LoadYamlDocumentsTest, AliasesWithinTheBudgetAreKept) {
  // A cluster file may name a node's annotations once and reuse them.
  const YamlDocuments parsed = LoadYamlDocuments(
      "base: &gpu {model: A100, memoryMiB: 81920}\n"
      "nodes: [{name: n1, gpu: *gpu}, {name: n2, gpu: *gpu}]\n");
  ASSERT_FALSE(parsed.error.has_value()) << parsed.error->message;
  EXPECT_EQ(parsed.documents[0]["nodes"][1]["gpu"]["model"].Scalar(), "A100");
  // A bomb's first levels are within the budget too.
  EXPECT_FALSE(LoadYamlDocuments(AliasBomb(4)).error.has_value());
}

TEST(LoadYamlDocumentsTest, TheLimitsAreTheCallersToChoose) {
  const YamlLimits tight{.max_bytes = 64, .max_nodes = 3, .max_depth = 1, .max_documents = 1};
  EXPECT_FALSE(LoadYamlDocuments("[a, b]", tight).error.has_value());
  EXPECT_THAT(LoadYamlDocuments("[a, b, c]", tight).error->message, HasSubstr("more than 3 nodes"));
  EXPECT_THAT(LoadYamlDocuments("[[a]]", tight).error->message, HasSubstr("nested deeper than 1 levels"));
  EXPECT_THAT(LoadYamlDocuments("a\n---\nb\n", tight).error->message, HasSubstr("more than 1 YAML documents"));
  EXPECT_THAT(LoadYamlDocuments(std::string(65, ' '), tight).error->message, HasSubstr("larger than 64 bytes"));
}

}  // namespace
}  // namespace tessera::yaml_internal
