#include "test/k8s/helm/helm_eval.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::deploy::helm {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// ---------------------------------------------------------------- values

// Tags tell the kinds of scalar apart. Strings made by the renderer carry "!",
// as quoted YAML scalars do. Plain scalars read from YAML ("8888", "true")
// carry "?", as yaml-cpp reads them; Helm reads their numbers as float64.
// Numbers and booleans the renderer computes (int, gt, literals) carry
// kComputed: Go ints and bools.
constexpr char kComputed[] = "!computed";

YAML::Node String(std::string s) {
  YAML::Node n(std::move(s));
  n.SetTag("!");
  return n;
}
YAML::Node Plain(std::string s) {
  YAML::Node n(std::move(s));
  n.SetTag(kComputed);
  return n;
}
YAML::Node Bool(bool b) { return Plain(b ? "true" : "false"); }
YAML::Node Nil() { return YAML::Node(YAML::NodeType::Null); }

bool IsPlain(const YAML::Node& n) { return n.IsScalar() && (n.Tag() == "?" || n.Tag() == kComputed); }

// How Go prints a float64 with %v, as Helm prints numbers from values files:
// the shortest digits, in exponent form from 1e+06 up ("1e+06", not "1000000").
std::string GoFloat(double v) {
  char digits[64];
  const auto sci = std::to_chars(digits, digits + sizeof digits, v, std::chars_format::scientific);
  const std::string_view text(digits, static_cast<size_t>(sci.ptr - digits));
  const size_t e = text.find('e');
  const int exponent = std::stoi(std::string(text.substr(e + 1)));
  if (exponent < -4 || exponent >= 6) {
    return absl::StrCat(Absl(text.substr(0, e)), "e", exponent < 0 ? "-" : "+", exponent > -10 && exponent < 10 ? "0" : "",
                        std::abs(exponent));
  }
  const auto fixed = std::to_chars(digits, digits + sizeof digits, v, std::chars_format::fixed);
  return std::string(digits, fixed.ptr);
}

bool IsYamlNumber(const std::string& s) {
  static const std::regex kNumber(R"([-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, kNumber);
}

// Go's truth: false, 0, nil, and empty strings, maps and lists are false.
bool Truthy(const YAML::Node& n) {
  if (IsNil(n)) return false;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (!IsPlain(n)) return !s.empty();
    return !(s.empty() || s == "false" || s == "False" || s == "FALSE" || s == "0" || s == "null" || s == "Null" ||
             s == "NULL" || s == "~");
  }
  return n.size() > 0;
}

// A map's value, or nil when absent (never inserts).
YAML::Node Child(const YAML::Node& map, const std::string& key) {
  const YAML::Node& m = map;
  YAML::Node v = m[key];
  return v.IsDefined() ? v : Nil();
}

absl::StatusOr<std::string> Text(const YAML::Node& n, std::string_view what) {
  if (IsNil(n)) return std::string();
  if (n.IsScalar() && n.Tag() == "?" && IsYamlNumber(n.Scalar())) return GoFloat(std::stod(n.Scalar()));
  if (n.IsScalar()) return n.Scalar();
  return absl::InvalidArgumentError(
      absl::StrCat(Absl(what), ": got a ", n.IsMap() ? "map" : "list", " where text is needed (pipe it through toYaml)"));
}

absl::StatusOr<double> Number(const YAML::Node& n, std::string_view what) {
  if (IsNil(n)) return 0.0;
  double d = 0;
  if (n.IsScalar() && absl::SimpleAtod(n.Scalar(), &d)) return d;
  return absl::InvalidArgumentError(absl::StrCat(Absl(what), ": not a number: ", n.IsScalar() ? n.Scalar() : "a collection"));
}

// ---------------------------------------------------------------- toYaml

std::string Quoted(const std::string& s) { return nlohmann::json(s).dump(); }

bool PlainSafe(const std::string& s) {
  if (s.empty() || IsSpace(s.front()) || IsSpace(s.back())) return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string_view::npos &&
      !(s.front() == '-' && s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1])) != 0)) {
    return false;
  }
  return s.find(": ") == std::string::npos && s.find(" #") == std::string::npos && s.back() != ':' &&
         s.find_first_of("\n\t\r") == std::string::npos;
}

// Strings keep their type: a string that plain YAML would read as something
// else ("8888", "true") is quoted, as Helm's toYaml does.
std::string ScalarYaml(const YAML::Node& n) {
  if (IsNil(n)) return "null";
  return IsPlain(n) && PlainSafe(n.Scalar()) ? n.Scalar() : Quoted(n.Scalar());
}

std::string KeyYaml(const YAML::Node& key) {
  const std::string& k = key.Scalar();
  static constexpr std::string_view kReserved[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"};
  const bool word = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '/' || c == '-';
  });
  std::string lower = k;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const bool reserved = std::find(std::begin(kReserved), std::end(kReserved), lower) != std::end(kReserved);
  const bool numeric = !k.empty() && (std::isdigit(static_cast<unsigned char>(k.front())) != 0 || k.front() == '-' || k.front() == '.');
  return word && !reserved && !numeric ? k : Quoted(k);
}

void EmitBlock(const YAML::Node& n, int indent, std::string& out);

// After "key:" or "-": the value on the same line, or a nested block.
void EmitValue(const YAML::Node& v, int nested_indent, std::string& out) {
  if (IsNil(v) || v.IsScalar()) {
    absl::StrAppend(&out, " ", ScalarYaml(v), "\n");
  } else if (v.size() == 0) {
    absl::StrAppend(&out, v.IsMap() ? " {}\n" : " []\n");
  } else {
    out += "\n";
    EmitBlock(v, nested_indent, out);
  }
}

void EmitBlock(const YAML::Node& n, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (n.IsMap()) {
    // Keys in sorted order: Helm's toYaml goes through JSON (sigs.k8s.io/yaml),
    // whose maps have no order of their own.
    // (Sorted by index: assigning a YAML::Node writes through to the node it
    // refers to, so the nodes themselves must never be moved about.)
    std::vector<YAML::Node> values;
    std::vector<std::pair<std::string, size_t>> keys;
    for (auto kv : n) {
      keys.emplace_back(kv.first.Scalar(), values.size());
      values.push_back(kv.second);
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& [key, at] : keys) {
      const YAML::Node& value = values[at];
      absl::StrAppend(&out, pad, KeyYaml(YAML::Node(key)), ":");
      // Lists under a key sit at the key's indentation, as Helm writes them.
      EmitValue(value, value.IsSequence() ? indent : indent + 2, out);
    }
  } else {
    for (auto item : n) {
      if (!IsNil(item) && !item.IsScalar() && item.size() > 0) {
        // "- " then the nested block's first line: "- name: x\n  key: y".
        std::string nested;
        EmitBlock(item, indent + 2, nested);
        absl::StrAppend(&out, pad, "- ", nested.substr(static_cast<size_t>(indent) + 2));
        continue;
      }
      absl::StrAppend(&out, pad, "-");
      EmitValue(item, indent + 2, out);
    }
  }
}

std::string ToYaml(const YAML::Node& n) {
  std::string out;
  if (IsNil(n) || n.IsScalar()) return ScalarYaml(n);
  if (n.size() == 0) return n.IsMap() ? "{}" : "[]";
  EmitBlock(n, 0, out);
  out.pop_back();  // Helm's toYaml drops the final newline
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) absl::StrAppend(&hex, absl::Hex(digest[i], absl::kZeroPad2));
  return hex;
}

std::string Indent(int width, const std::string& s) {
  const std::string pad(static_cast<size_t>(std::max(width, 0)), ' ');
  return absl::StrCat(pad, absl::StrReplaceAll(s, {{"\n", absl::StrCat("\n", pad)}}));
}

// ---------------------------------------------------------------- evaluation

class Evaluator {
 public:
  Evaluator(const Defines& defines, YAML::Node root) : defines_(defines), root_(std::move(root)) {}

  absl::Status Exec(const std::vector<TemplateNode>& nodes, const YAML::Node& dot, std::string& out) {
    for (const TemplateNode& node : nodes) {
      switch (node.kind) {
        case TemplateNode::Kind::kText:
          out += node.text;
          break;
        case TemplateNode::Kind::kAction: {
          absl::StatusOr<YAML::Node> v = Eval(*node.pipeline, dot);
          if (!v.ok()) return At(node.where, v.status());
          absl::StatusOr<std::string> text = Text(*v, node.text);
          if (!text.ok()) return At(node.where, text.status());
          out += *text;
          break;
        }
        case TemplateNode::Kind::kIf:
        case TemplateNode::Kind::kWith:
        case TemplateNode::Kind::kRange:
          if (absl::Status st = ExecBlock(node, dot, out); !st.ok()) return st;
          break;
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ExecBlock(const TemplateNode& node, const YAML::Node& dot, std::string& out) {
    for (const Branch& branch : node.branches) {
      if (branch.condition == nullptr) return Exec(branch.body, dot, out);  // else
      absl::StatusOr<YAML::Node> v = Eval(*branch.condition, dot);
      if (!v.ok()) return At(node.where, v.status());
      if (!Truthy(*v)) continue;
      if (node.kind == TemplateNode::Kind::kIf) return Exec(branch.body, dot, out);
      if (node.kind == TemplateNode::Kind::kWith) return Exec(branch.body, *v, out);
      for (auto item : *v) {  // range: a list's items, or a map's values
        const YAML::Node element = v->IsMap() ? YAML::Node(item.second) : YAML::Node(item);
        if (absl::Status st = Exec(branch.body, element, out); !st.ok()) return st;
      }
      return absl::OkStatus();
    }
    return absl::OkStatus();
  }

// GCC 12 at -O2 reports the optional below as maybe-uninitialized on paths
// where it is empty and never read; a known false positive. (GCC's warning
// only: clang does not know the group and would refuse the pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  absl::StatusOr<YAML::Node> Eval(const Pipeline& pipeline, const YAML::Node& dot) {
    std::optional<YAML::Node> piped;
    for (const Command& command : pipeline) {
      absl::StatusOr<YAML::Node> v = EvalCommand(command, piped, dot);
      if (!v.ok()) return v;
      // Never assign one YAML::Node to another: that writes through to the
      // node the left side refers to (here, a node of the values). Rebind.
      piped.reset();
      piped.emplace(*std::move(v));
    }
    return *piped;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  absl::StatusOr<YAML::Node> EvalCommand(const Command& command, const std::optional<YAML::Node>& piped,
                                         const YAML::Node& dot) {
    const std::vector<std::string> kHas = {"Capabilities", "APIVersions", "Has"};
    if (command.front().kind == Arg::Kind::kField && command.front().path == kHas) {
      // The one method the chart calls: does the cluster serve this API version?
      if (command.size() != 2 || piped.has_value()) {
        return absl::InvalidArgumentError(".Capabilities.APIVersions.Has takes one API version");
      }
      absl::StatusOr<YAML::Node> version = EvalArg(command[1], dot);
      if (!version.ok()) return version;
      bool has = false;
      for (const YAML::Node& v : root_["Capabilities"]["APIVersions"]) has = has || v.Scalar() == version->Scalar();
      return Plain(has ? "true" : "false");
    }
    const std::vector<std::string> kFilesGet = {"Files", "Get"};
    if (command.front().kind == Arg::Kind::kField && command.front().path == kFilesGet) {
      // A file of the chart's, as text; Helm gives "" for a file it lacks.
      if (command.size() != 2 || piped.has_value()) return absl::InvalidArgumentError(".Files.Get takes one path");
      absl::StatusOr<YAML::Node> path = EvalArg(command[1], dot);
      if (!path.ok()) return path;
      const YAML::Node& root = root_;  // const: a lookup must not add the path
      const YAML::Node text = root["Files"][path->Scalar()];
      return String(text.IsDefined() && text.IsScalar() ? text.Scalar() : "");
    }
    if (command.front().kind != Arg::Kind::kIdent) {
      if (command.size() > 1 || piped.has_value()) {
        return absl::InvalidArgumentError("a value cannot take arguments or a piped value");
      }
      return EvalArg(command.front(), dot);
    }
    std::vector<YAML::Node> args;
    for (size_t i = 1; i < command.size(); ++i) {
      absl::StatusOr<YAML::Node> v = EvalArg(command[i], dot);
      if (!v.ok()) return v;
      args.push_back(*std::move(v));
    }
    if (piped.has_value()) args.push_back(*piped);
    return Call(command.front().text, args);
  }

  absl::StatusOr<YAML::Node> EvalArg(const Arg& arg, const YAML::Node& dot) {
    switch (arg.kind) {
      case Arg::Kind::kString:
        return String(arg.text);
      case Arg::Kind::kNumber:
      case Arg::Kind::kBool:
        return Plain(arg.text);
      case Arg::Kind::kNil:
        return Nil();
      case Arg::Kind::kPipeline:
        return Eval(*arg.sub, dot);
      case Arg::Kind::kIdent:
        return Call(arg.text, {});
      case Arg::Kind::kField:
        break;
    }
    YAML::Node v = arg.from_root ? root_ : dot;
    std::string walked = arg.from_root ? "$" : "";
    for (const std::string& field : arg.path) {
      if (IsNil(v)) return absl::InvalidArgumentError(absl::StrCat("nil pointer evaluating ", walked, ".", field));
      if (!v.IsMap()) return absl::InvalidArgumentError(absl::StrCat("can't evaluate field ", field, " of ", walked));
      v.reset(Child(v, field));  // rebind; `v = ...` would overwrite the node v refers to
      absl::StrAppend(&walked, ".", field);
    }
    return v;
  }

  absl::Status Arity(std::string_view fn, const std::vector<YAML::Node>& args, size_t min, size_t max) const {
    if (args.size() < min || args.size() > max) {
      return absl::InvalidArgumentError(absl::StrCat(Absl(fn), ": wrong number of arguments (", args.size(), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<YAML::Node> Call(const std::string& fn, const std::vector<YAML::Node>& a) {
    auto text = [&](size_t i) { return Text(a[i], fn); };
    auto number = [&](size_t i) { return Number(a[i], fn); };
    auto arity = [&](size_t min, size_t max) { return Arity(fn, a, min, max); };

    if (fn == "include") {
      if (absl::Status st = arity(2, 2); !st.ok()) return st;
      absl::StatusOr<std::string> name = text(0);
      if (!name.ok()) return name.status();
      const auto it = defines_.find(*name);
      if (it == defines_.end()) return absl::NotFoundError(absl::StrCat("include: no template named \"", *name, "\""));
      if (++depth_ > 64) return absl::InvalidArgumentError("include: recursion too deep");
      std::string out;
      absl::Status st = Exec(it->second, a[1], out);
      --depth_;
      if (!st.ok()) return st;
      return String(std::move(out));
    }
    if (fn == "required" || fn == "fail") {
      if (absl::Status st = fn == "fail" ? arity(1, 1) : arity(2, 2); !st.ok()) return st;
      absl::StatusOr<std::string> message = text(0);
      if (!message.ok()) return message.status();
      if (fn == "fail" || IsNil(a[1]) || (a[1].IsScalar() && !IsPlain(a[1]) && a[1].Scalar().empty())) {
        return absl::FailedPreconditionError(*message);
      }
      return a[1];
    }
    if (fn == "default") {
      if (absl::Status st = arity(2, 2); !st.ok()) return st;
      return Truthy(a[1]) ? a[1] : a[0];
    }
    if (fn == "empty" || fn == "not") {
      if (absl::Status st = arity(1, 1); !st.ok()) return st;
      return Bool(!Truthy(a[0]));
    }
    if (fn == "and" || fn == "or") {
      if (absl::Status st = arity(1, 16); !st.ok()) return st;
      for (const YAML::Node& v : a) {
        if (Truthy(v) == (fn == "or")) return v;
      }
      return a.back();
    }
    if (fn == "eq" || fn == "ne") {
      if (absl::Status st = arity(2, 16); !st.ok()) return st;
      bool equal = false;
      for (size_t i = 1; i < a.size() && !equal; ++i) {
        absl::StatusOr<std::string> x = text(0), y = text(i);
        if (!x.ok()) return x.status();
        if (!y.ok()) return y.status();
        equal = IsNil(a[0]) == IsNil(a[i]) && *x == *y;
      }
      return Bool(fn == "eq" ? equal : !equal);
    }
    if (fn == "gt" || fn == "ge" || fn == "lt" || fn == "le") {
      if (absl::Status st = arity(2, 2); !st.ok()) return st;
      absl::StatusOr<double> x = number(0), y = number(1);
      if (!x.ok()) return x.status();
      if (!y.ok()) return y.status();
      return Bool(fn == "gt" ? *x > *y : fn == "ge" ? *x >= *y : fn == "lt" ? *x < *y : *x <= *y);
    }
    if (fn == "int") {
      if (absl::Status st = arity(1, 1); !st.ok()) return st;
      absl::StatusOr<double> x = number(0);
      if (!x.ok()) return x.status();
      return Plain(absl::StrCat(static_cast<int64_t>(*x)));
    }
    if (fn == "quote") {
      std::string out;
      for (size_t i = 0; i < a.size(); ++i) {
        if (IsNil(a[i])) continue;
        absl::StatusOr<std::string> s = text(i);
        if (!s.ok()) return s.status();
        absl::StrAppend(&out, out.empty() ? "" : " ", Quoted(*s));
      }
      return String(std::move(out));
    }
    if (fn == "toYaml") {
      if (absl::Status st = arity(1, 1); !st.ok()) return st;
      return String(ToYaml(a[0]));
    }
    if (fn == "sha256sum") {
      if (absl::Status st = arity(1, 1); !st.ok()) return st;
      absl::StatusOr<std::string> s = text(0);
      if (!s.ok()) return s.status();
      return String(Sha256Hex(*s));
    }
    if (fn == "indent" || fn == "nindent" || fn == "trunc") {
      if (absl::Status st = arity(2, 2); !st.ok()) return st;
      absl::StatusOr<double> n = number(0);
      absl::StatusOr<std::string> s = text(1);
      if (!n.ok()) return n.status();
      if (!s.ok()) return s.status();
      const int width = static_cast<int>(*n);
      if (fn == "trunc") {
        if (width >= 0) return String(s->substr(0, static_cast<size_t>(width)));
        const size_t keep = static_cast<size_t>(-width);
        return String(s->size() > keep ? s->substr(s->size() - keep) : *s);
      }
      return String(absl::StrCat(fn == "nindent" ? "\n" : "", Indent(width, *s)));
    }
    if (fn == "trimSuffix" || fn == "contains") {
      if (absl::Status st = arity(2, 2); !st.ok()) return st;
      absl::StatusOr<std::string> part = text(0), s = text(1);
      if (!part.ok()) return part.status();
      if (!s.ok()) return s.status();
      if (fn == "contains") return Bool(absl::StrContains(*s, *part));
      return String(absl::EndsWith(*s, *part) ? s->substr(0, s->size() - part->size()) : *s);
    }
    if (fn == "replace") {
      if (absl::Status st = arity(3, 3); !st.ok()) return st;
      absl::StatusOr<std::string> from = text(0), to = text(1), s = text(2);
      if (!from.ok() || !to.ok() || !s.ok()) return absl::InvalidArgumentError("replace: text arguments needed");
      return String(absl::StrReplaceAll(*s, {{*from, *to}}));
    }
    if (fn == "printf") {
      if (absl::Status st = arity(1, 16); !st.ok()) return st;
      absl::StatusOr<std::string> format = text(0);
      if (!format.ok()) return format.status();
      std::string out;
      size_t next = 1;
      for (size_t i = 0; i < format->size(); ++i) {
        if ((*format)[i] != '%' || i + 1 == format->size()) {
          out += (*format)[i];
          continue;
        }
        const char verb = (*format)[++i];
        if (verb == '%') {
          out += '%';
          continue;
        }
        if (verb != 's' && verb != 'd' && verb != 'v') return absl::InvalidArgumentError(absl::StrCat("printf: %", std::string(1, verb), " is not supported"));
        if (next >= a.size()) return absl::InvalidArgumentError("printf: too few arguments");
        absl::StatusOr<std::string> s = text(next++);
        if (!s.ok()) return s.status();
        out += *s;
      }
      return String(std::move(out));
    }
    return absl::InvalidArgumentError(absl::StrCat("function \"", fn, "\" is not supported by this renderer"));
  }

  const Defines& defines_;
  YAML::Node root_;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<std::string> Execute(const std::vector<TemplateNode>& tree, const Defines& defines, const YAML::Node& root) {
  try {
    Evaluator evaluator(defines, root);
    std::string out;
    if (absl::Status st = evaluator.Exec(tree, root, out); !st.ok()) return st;
    return out;
  } catch (const YAML::Exception& e) {
    return absl::InternalError(absl::StrCat("rendering: ", e.what()));
  }
}

YAML::Node StringValue(std::string s) { return String(std::move(s)); }
YAML::Node BoolValue(bool b) { return Bool(b); }
bool IsNil(const YAML::Node& n) { return !n.IsDefined() || n.IsNull(); }
YAML::Node ChildOrNil(const YAML::Node& map, const std::string& key) { return Child(map, key); }

}  // namespace tessera::deploy::helm
