#include "config/policy_reference.h"

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "scheduler/framework/plugin_args.h"

namespace tessera {
namespace {

TEST(PolicyReferenceTest, EveryBuiltinPluginHasASummaryAndEveryArgItReadsHasADoc) {
  const PluginRegistry registry = NewBuiltinRegistry();
  for (const std::string& name : registry.Names()) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(registry.Summary(name).empty());
    absl::StatusOr<PluginArgs> args = PluginArgs::FromText("");
    ASSERT_TRUE(args.ok());
    (void)(*registry.Find(name))(*args);
    for (const ArgDescription& arg : args->described()) {
      EXPECT_FALSE(arg.doc.empty()) << arg.key << " has no doc";
      EXPECT_FALSE(arg.type.empty()) << arg.key;
    }
  }
}

TEST(PolicyReferenceTest, ThePageListsEachPluginWithItsArgsDefaultsAndRanges) {
  const std::string page = PolicyFileReferenceMarkdown(NewBuiltinRegistry());
  for (const std::string& name : NewBuiltinRegistry().Names()) {
    EXPECT_NE(page.find("\n## " + name + "\n"), std::string::npos) << name;
  }
  // gpu-share's burst cap, and fgd repeating gpu-share's args as it reads them.
  EXPECT_NE(page.find("| `maxLimitPercent` | integer | 100..1000 | `200` |"), std::string::npos) << page;
  const size_t fgd = page.find("\n## fgd\n");
  ASSERT_NE(fgd, std::string::npos);
  EXPECT_NE(page.find("| `workload` | list of strings |", fgd), std::string::npos);
  EXPECT_NE(page.find("| `maxLimitPercent` |", fgd), std::string::npos);
  // A plugin that takes no args says so.
  const size_t best_fit = page.find("\n## best-fit\n");
  ASSERT_NE(best_fit, std::string::npos);
  EXPECT_NE(page.find("Takes no args.", best_fit), std::string::npos);
}

}  // namespace
}  // namespace tessera
