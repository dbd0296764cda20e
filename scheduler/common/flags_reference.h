// A program's flags as the reference page docs/reference/*-flags.md prints
// them, read from abseil's flag registry: the page is generated from the
// same ABSL_FLAG lines the program parses, so it cannot drift from them
// (scripts/generate-reference.sh writes it; a ctest test fails on a stale page).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace tessera {

/// A markdown table of the flags defined in the source files whose path ends
/// with one of `defined_in` (the program's own, not abseil's --help and
/// --flagfile), sorted by name: the flag as operators type it (dashes), its
/// type, its default and its help text.
std::string FlagsReferenceMarkdown(std::initializer_list<std::string_view> defined_in);

}  // namespace tessera
