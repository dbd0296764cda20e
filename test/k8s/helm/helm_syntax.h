// The syntax of the Helm templates the chart uses: the lexer (actions,
// whitespace trimming, comments), pipelines of commands, and the block
// structure (if/with/range/define), parsed once per chart. helm_eval.h runs
// the trees; helm_template.h is the interface tests use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace tessera::deploy::helm {

struct Arg;
using Command = std::vector<Arg>;
using Pipeline = std::vector<Command>;

/// One operand of a command: a literal, a field chain, a function name, or a
/// parenthesised pipeline.
struct Arg {
  enum class Kind { kString, kNumber, kBool, kNil, kField, kIdent, kPipeline } kind = Kind::kNil;
  std::string text;               // literal value or function name
  bool from_root = false;         // $.a.b rather than .a.b
  std::vector<std::string> path;  // field chain; empty: . or $ itself
  std::shared_ptr<const Pipeline> sub;
};

struct TemplateNode;

/// A branch of if/with/range; `condition` is null for the else branch.
struct Branch {
  std::shared_ptr<const Pipeline> condition;
  std::vector<TemplateNode> body;
};

struct TemplateNode {
  enum class Kind { kText, kAction, kIf, kWith, kRange } kind = Kind::kText;
  std::string text;  // kText: the text; kAction: the pipeline's source
  std::shared_ptr<const Pipeline> pipeline;
  std::vector<Branch> branches;
  std::string where;  // "file:line"
};

using Defines = std::map<std::string, std::vector<TemplateNode>>;

/// Every template of a chart, parsed, and the named templates they define.
struct ParsedTemplates {
  std::map<std::string, std::vector<TemplateNode>> trees;  // by template path
  Defines defines;
};

/// Parses `source` as the template `path` into `out` (its tree and defines);
/// a syntax error names the file and line.
absl::Status ParseTemplate(const std::string& path, const std::string& source, ParsedTemplates& out);

/// `status` with "<where>: " before its message.
absl::Status At(std::string_view where, const absl::Status& status);

}  // namespace tessera::deploy::helm
