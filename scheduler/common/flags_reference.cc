#include "scheduler/common/flags_reference.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/time/time.h"
#include "scheduler/common/markdown_text.h"

namespace tessera {
namespace {

std::string Dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string TypeOf(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "bool";
  if (flag.IsOfType<int>() || flag.IsOfType<int64_t>()) return "integer";
  if (flag.IsOfType<absl::Duration>()) return "duration";
  if (flag.IsOfType<std::string>()) return "string";
  return "value";
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string FlagsReferenceMarkdown(std::initializer_list<std::string_view> defined_in) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string file = flag->Filename();
    if (std::any_of(defined_in.begin(), defined_in.end(), [&](std::string_view s) { return EndsWith(file, s); })) {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(), [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out = "| flag | type | default | what it sets |\n|---|---|---|---|\n";
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string default_value = flag->DefaultValue();
    out += "| `--" + Dashed(std::string(flag->Name())) + "` | " + TypeOf(*flag) + " | " +
           (default_value.empty() ? std::string("(empty)") : "`" + MarkdownCell(default_value) + "`") + " | " +
           MarkdownCell(flag->Help()) + " |\n";
  }
  return out;
}

}  // namespace tessera
