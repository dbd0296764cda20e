// Parsing YAML that Tessera did not write (policy file, cluster file,
// kubeconfig) in bounded time and memory.
//
// yaml-cpp 0.7 (Debian 12) trusts its input in ways a long-running program
// cannot:
//
//  - YAML::LoadAll loops forever, adding a null document on every turn, when
//    a token no rule consumes sits at the top level: a file that is just `,`
//    (or `---\n,`) grows memory by gigabytes a minute (yaml-cpp issue #1040,
//    fixed upstream in 0.9.0). The parser hands out the same document at the
//    same position again and again; LoadYamlDocuments stops at the second
//    time and names the token.
//  - An alias is a pointer to the anchored node, so a few lines of anchors and
//    aliases ("billion laughs") make a tree whose walk never ends, and an alias
//    inside its own anchored node (`&a [*a]`) makes a cycle. Each alias here
//    counts as the whole node it names, against the node budget, and an alias
//    to a node still open is refused.
//  - Nodes cost yaml-cpp a few hundred bytes each: the node budget, with the
//    size cap, bounds memory; the depth cap keeps recursive walkers off deep
//    stacks (yaml-cpp's own guard stops at 500 levels with "bad file").
//
// The text is first read event by event (no tree is built, so nothing grows
// while the limits are checked), and only a text that passes is given to
// yaml-cpp's tree builder: the same parser on the same bytes, so its stream of
// documents is the one just checked to end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "yaml-cpp/yaml.h"

namespace tessera::yaml_internal {

/// What a text may cost. The defaults suit a hand-written configuration file
/// (a policy file is a few hundred bytes and some dozens of nodes).
struct YamlLimits {
  size_t max_bytes = size_t{1} << 20;
  /// Nodes across all documents, an alias counting as every node it names.
  int64_t max_nodes = 100'000;
  /// Nesting of maps and lists; the top-level collection is depth 1.
  int max_depth = 64;
  /// Documents in the stream (`---` separated); callers that take one still
  /// want to see the second to say "only one document is allowed".
  int max_documents = 16;
};

/// Where and why a text was refused; the message reads like yaml-cpp's own,
/// e.g. "unexpected ','" or "more than 100000 nodes (aliases count as the node they name)".
struct YamlLoadError {
  YAML::Mark mark = YAML::Mark::null_mark();
  std::string message;
};

/// The documents of `text` (none for an empty stream or one of only
/// comments), or the first reason to refuse it: a syntax error, as yaml-cpp
/// words it, or a limit. Never throws, and takes time and memory linear in
/// the limits.
struct YamlDocuments {
  std::vector<YAML::Node> documents;
  std::optional<YamlLoadError> error;
};
YamlDocuments LoadYamlDocuments(std::string_view text, const YamlLimits& limits = {});

}  // namespace tessera::yaml_internal
