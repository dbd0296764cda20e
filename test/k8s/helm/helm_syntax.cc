#include "test/k8s/helm/helm_syntax.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::deploy::helm {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// ---------------------------------------------------------------- lexing

struct Token {
  bool action = false;
  std::string text;  // text, or the action's content without delimiters
  std::string where;
};

absl::StatusOr<std::vector<Token>> Lex(std::string_view src, const std::string& file) {
  std::vector<Token> out;
  auto where = [&](size_t at) {
    return absl::StrCat(file, ":", 1 + std::count(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  };
  size_t pos = 0;
  bool trim_next = false;
  while (true) {
    const size_t open = src.find("{{", pos);
    std::string text(src.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (trim_next) text.erase(0, std::find_if_not(text.begin(), text.end(), IsSpace) - text.begin());
    if (open == std::string_view::npos) {
      if (!text.empty()) out.push_back({false, std::move(text), where(pos)});
      return out;
    }
    size_t inner = open + 2;
    if (inner + 1 < src.size() && src[inner] == '-' && IsSpace(src[inner + 1])) {
      text.erase(std::find_if_not(text.rbegin(), text.rend(), IsSpace).base(), text.end());
      inner += 2;
    }
    if (!text.empty()) out.push_back({false, std::move(text), where(pos)});
    while (inner < src.size() && IsSpace(src[inner])) ++inner;

    // The closing braces, outside string literals and comments.
    size_t close = std::string_view::npos;
    bool comment = src.substr(inner, 2) == "/*";
    if (comment) {
      const size_t end = src.find("*/", inner + 2);
      if (end == std::string_view::npos) return absl::InvalidArgumentError(absl::StrCat(where(open), ": unclosed comment"));
      size_t p = end + 2;
      while (p < src.size() && (IsSpace(src[p]) || src[p] == '-')) ++p;
      if (src.substr(p, 2) == "}}") close = p;
    } else {
      bool in_string = false;
      for (size_t p = inner; p + 1 < src.size(); ++p) {
        if (in_string) {
          if (src[p] == '\\') ++p;
          else if (src[p] == '"') in_string = false;
        } else if (src[p] == '"') {
          in_string = true;
        } else if (src[p] == '}' && src[p + 1] == '}') {
          close = p;
          break;
        }
      }
    }
    if (close == std::string_view::npos) return absl::InvalidArgumentError(absl::StrCat(where(open), ": unclosed action"));
    size_t end = close;
    trim_next = end >= inner + 2 && src[end - 1] == '-' && IsSpace(src[end - 2]);
    if (trim_next) --end;
    std::string content(src.substr(inner, end - inner));
    content.erase(std::find_if_not(content.rbegin(), content.rend(), IsSpace).base(), content.end());
    if (!comment) {
      if (content.empty()) return absl::InvalidArgumentError(absl::StrCat(where(open), ": empty action"));
      out.push_back({true, std::move(content), where(open)});
    }
    pos = close + 2;
  }
}

// ---------------------------------------------------------------- expressions

class ExpressionParser {
 public:
  explicit ExpressionParser(std::string_view source) : s_(source) {}

  absl::StatusOr<Pipeline> ParseAll() {
    absl::StatusOr<Pipeline> p = ParsePipeline();
    if (!p.ok()) return p;
    SkipSpace();
    if (i_ != s_.size()) return Error("unexpected text");
    return p;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Absl(what), " at column ", i_ + 1, " of `", Absl(s_), "`"));
  }
  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(s_[i_])) ++i_;
  }
  static bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

  absl::StatusOr<Pipeline> ParsePipeline() {
    Pipeline pipeline;
    while (true) {
      Command command;
      while (true) {
        SkipSpace();
        if (i_ == s_.size() || s_[i_] == '|' || s_[i_] == ')') break;
        absl::StatusOr<Arg> arg = ParseArg();
        if (!arg.ok()) return arg.status();
        command.push_back(*std::move(arg));
      }
      if (command.empty()) return Error("empty command");
      pipeline.push_back(std::move(command));
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        continue;
      }
      return pipeline;
    }
  }

  absl::StatusOr<Arg> ParseArg() {
    Arg arg;
    const char c = s_[i_];
    if (c == '"') {
      arg.kind = Arg::Kind::kString;
      for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
        if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
          const char e = s_[++i_];
          arg.text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          arg.text += s_[i_];
        }
      }
      if (i_ == s_.size()) return Error("unterminated string");
      ++i_;
      return arg;
    }
    if (c == '(') {
      ++i_;
      absl::StatusOr<Pipeline> sub = ParsePipeline();
      if (!sub.ok()) return sub.status();
      if (i_ == s_.size() || s_[i_] != ')') return Error("missing )");
      ++i_;
      arg.kind = Arg::Kind::kPipeline;
      arg.sub = std::make_shared<const Pipeline>(*std::move(sub));
      return arg;
    }
    if (c == '.' || c == '$') {
      arg.kind = Arg::Kind::kField;
      arg.from_root = c == '$';
      if (arg.from_root) ++i_;
      while (i_ < s_.size() && s_[i_] == '.') {
        ++i_;
        const size_t start = i_;
        while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
        if (i_ == start) {
          if (!arg.path.empty()) return Error("empty field name");
          break;  // a lone "."
        }
        arg.path.emplace_back(s_.substr(start, i_ - start));
      }
      return arg;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-') {
      const size_t start = i_++;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])) != 0) ++i_;
      arg.kind = Arg::Kind::kNumber;
      arg.text = std::string(s_.substr(start, i_ - start));
      if (arg.text == "-") return Error("bad number");
      return arg;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
      const size_t start = i_;
      while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
      arg.text = std::string(s_.substr(start, i_ - start));
      arg.kind = arg.text == "true" || arg.text == "false" ? Arg::Kind::kBool
                 : arg.text == "nil"                       ? Arg::Kind::kNil
                                                           : Arg::Kind::kIdent;
      return arg;
    }
    return Error(absl::StrCat("unexpected '", std::string(1, c), "' (variables and other syntax are not supported)"));
  }

  std::string_view s_;
  size_t i_ = 0;
};

absl::StatusOr<std::shared_ptr<const Pipeline>> ParseExpression(std::string_view source) {
  absl::StatusOr<Pipeline> p = ExpressionParser(source).ParseAll();
  if (!p.ok()) return p.status();
  return std::make_shared<const Pipeline>(*std::move(p));
}

// ---------------------------------------------------------------- templates

std::pair<std::string_view, std::string_view> SplitKeyword(std::string_view action) {
  const size_t space = action.find_first_of(" \t\n");
  if (space == std::string_view::npos) return {action, {}};
  std::string_view rest = action.substr(space);
  while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
  return {action.substr(0, space), rest};
}

TemplateNode MakeNode(TemplateNode::Kind kind, const Token& token) {
  TemplateNode node;
  node.kind = kind;
  node.text = token.text;
  node.where = token.where;
  return node;
}

class TemplateParser {
 public:
  TemplateParser(const std::vector<Token>& tokens, Defines& defines) : tokens_(tokens), defines_(defines) {}

  absl::StatusOr<std::vector<TemplateNode>> ParseFile() {
    const Token* stop = nullptr;
    absl::StatusOr<std::vector<TemplateNode>> nodes = ParseList(&stop);
    if (nodes.ok() && stop != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(stop->where, ": {{ ", stop->text, " }} without an open block"));
    }
    return nodes;
  }

 private:
  // Parses up to the next {{ end }} or {{ else ... }} (returned in *stop) or
  // the end of the tokens (*stop null).
  absl::StatusOr<std::vector<TemplateNode>> ParseList(const Token** stop) {
    std::vector<TemplateNode> nodes;
    *stop = nullptr;
    while (next_ < tokens_.size()) {
      const Token& t = tokens_[next_++];
      if (!t.action) {
        nodes.push_back(MakeNode(TemplateNode::Kind::kText, t));
        continue;
      }
      const auto [keyword, rest] = SplitKeyword(t.text);
      if (keyword == "end" || keyword == "else") {
        *stop = &t;
        return nodes;
      }
      if (keyword == "if" || keyword == "with" || keyword == "range") {
        absl::StatusOr<TemplateNode> block = ParseBlock(t, keyword, rest);
        if (!block.ok()) return block.status();
        nodes.push_back(*std::move(block));
        continue;
      }
      if (keyword == "define") {
        if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') {
          return absl::InvalidArgumentError(absl::StrCat(t.where, ": define needs a quoted name"));
        }
        const Token* end = nullptr;
        absl::StatusOr<std::vector<TemplateNode>> body = ParseList(&end);
        if (!body.ok()) return body.status();
        if (end == nullptr || end->text != "end") {
          return absl::InvalidArgumentError(absl::StrCat(t.where, ": define without its {{ end }}"));
        }
        defines_[std::string(rest.substr(1, rest.size() - 2))] = *std::move(body);
        continue;
      }
      if (keyword == "template" || keyword == "block" || keyword == "break" || keyword == "continue") {
        return absl::InvalidArgumentError(absl::StrCat(t.where, ": {{ ", Absl(keyword), " }} is not supported"));
      }
      absl::StatusOr<std::shared_ptr<const Pipeline>> pipeline = ParseExpression(t.text);
      if (!pipeline.ok()) return At(t.where, pipeline.status());
      TemplateNode action = MakeNode(TemplateNode::Kind::kAction, t);
      action.pipeline = *pipeline;
      nodes.push_back(std::move(action));
    }
    return nodes;
  }

  absl::StatusOr<TemplateNode> ParseBlock(const Token& open, std::string_view keyword, std::string_view condition) {
    TemplateNode node = MakeNode(keyword == "if"     ? TemplateNode::Kind::kIf
                                 : keyword == "with" ? TemplateNode::Kind::kWith
                                                     : TemplateNode::Kind::kRange,
                                 open);
    std::optional<std::string_view> next_condition = condition;
    while (true) {
      Branch branch;
      if (next_condition.has_value()) {
        absl::StatusOr<std::shared_ptr<const Pipeline>> p = ParseExpression(*next_condition);
        if (!p.ok()) return At(open.where, p.status());
        branch.condition = *p;
      }
      const Token* stop = nullptr;
      absl::StatusOr<std::vector<TemplateNode>> body = ParseList(&stop);
      if (!body.ok()) return body.status();
      branch.body = *std::move(body);
      const bool was_else = !next_condition.has_value();
      node.branches.push_back(std::move(branch));
      if (stop == nullptr) return absl::InvalidArgumentError(absl::StrCat(open.where, ": {{ ", Absl(keyword), " }} without its {{ end }}"));
      if (stop->text == "end") return node;
      if (was_else) return absl::InvalidArgumentError(absl::StrCat(stop->where, ": a second {{ else }}"));
      const auto [else_keyword, else_rest] = SplitKeyword(stop->text);
      if (else_rest.empty()) {
        next_condition.reset();
      } else if (keyword == "if" && absl::StartsWith(Absl(else_rest), "if ")) {
        next_condition = SplitKeyword(else_rest).second;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(stop->where, ": {{ ", stop->text, " }} is not supported"));
      }
    }
  }

  const std::vector<Token>& tokens_;
  Defines& defines_;
  size_t next_ = 0;
};

}  // namespace

absl::Status At(std::string_view where, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(Absl(where), ": ", status.message()));
}

absl::Status ParseTemplate(const std::string& path, const std::string& source, ParsedTemplates& out) {
  absl::StatusOr<std::vector<Token>> tokens = Lex(source, path);
  if (!tokens.ok()) return tokens.status();
  absl::StatusOr<std::vector<TemplateNode>> tree = TemplateParser(*tokens, out.defines).ParseFile();
  if (!tree.ok()) return tree.status();
  out.trees[path] = *std::move(tree);
  return absl::OkStatus();
}

}  // namespace tessera::deploy::helm
