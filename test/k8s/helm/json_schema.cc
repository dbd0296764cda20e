#include "test/k8s/helm/json_schema.h"

#include <algorithm>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::deploy {
namespace {

std::string Child(const std::string& path, const std::string& key) { return path.empty() ? key : absl::StrCat(path, ".", key); }

bool HasType(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
  return false;
}

std::string TypeName(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  return v.type_name();
}

// "; known: a, b, c" for an unknown-key message: most unknown keys are typos.
std::string KnownKeys(const nlohmann::json& properties) {
  std::vector<std::string> names;
  for (const auto& [name, unused] : properties.items()) names.push_back(name);
  return absl::StrCat("; known: ", absl::StrJoin(names, ", "));
}

void Validate(const nlohmann::json& schema, const nlohmann::json& v, const std::string& path, std::vector<std::string>& errors) {
  auto fail = [&](const std::string& message) { errors.push_back(absl::StrCat(path.empty() ? "(root)" : path, ": ", message)); };
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail("no value is allowed here");
    return;
  }
  if (const auto t = schema.find("type"); t != schema.end()) {
    std::vector<std::string> types;
    if (t->is_array()) {
      for (const auto& x : *t) types.push_back(x.get<std::string>());
    } else {
      types.push_back(t->get<std::string>());
    }
    if (std::none_of(types.begin(), types.end(), [&](const std::string& x) { return HasType(v, x); })) {
      fail(absl::StrCat("must be of type ", absl::StrJoin(types, " or "), ", got ", TypeName(v), " ", v.dump()));
      return;  // the other keywords would only repeat the problem
    }
  }
  if (const auto e = schema.find("enum"); e != schema.end()) {
    if (std::find(e->begin(), e->end(), v) == e->end()) fail(absl::StrCat("must be one of ", e->dump(), ", got ", v.dump()));
  }
  if (v.is_number()) {
    if (const auto m = schema.find("minimum"); m != schema.end() && v.get<double>() < m->get<double>()) {
      fail(absl::StrCat("must be at least ", m->dump(), ", got ", v.dump()));
    }
    if (const auto m = schema.find("maximum"); m != schema.end() && v.get<double>() > m->get<double>()) {
      fail(absl::StrCat("must be at most ", m->dump(), ", got ", v.dump()));
    }
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (const auto m = schema.find("minLength"); m != schema.end() && s.size() < m->get<size_t>()) {
      fail(absl::StrCat("must be at least ", m->dump(), " characters long, got ", v.dump()));
    }
    if (const auto m = schema.find("maxLength"); m != schema.end() && s.size() > m->get<size_t>()) {
      fail(absl::StrCat("must be at most ", m->dump(), " characters long"));
    }
    if (const auto p = schema.find("pattern"); p != schema.end()) {
      if (!std::regex_search(s, std::regex(p->get<std::string>(), std::regex::ECMAScript))) {
        fail(absl::StrCat("must match ", p->dump(), ", got ", v.dump()));
      }
    }
  }
  if (v.is_object()) {
    const auto props = schema.find("properties");
    if (const auto r = schema.find("required"); r != schema.end()) {
      for (const auto& key : *r) {
        if (!v.contains(key.get<std::string>())) fail(absl::StrCat("\"", key.get<std::string>(), "\" is required"));
      }
    }
    const auto extra = schema.find("additionalProperties");
    for (const auto& [key, child] : v.items()) {
      if (props != schema.end() && props->contains(key)) {
        Validate((*props)[key], child, Child(path, key), errors);
      } else if (extra != schema.end()) {
        if (extra->is_boolean() && !extra->get<bool>()) {
          fail(absl::StrCat("unknown key \"", key, "\"", props != schema.end() ? KnownKeys(*props) : ""));
        } else {
          Validate(*extra, child, Child(path, key), errors);
        }
      }
    }
  }
  if (v.is_array()) {
    if (const auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < v.size(); ++i) Validate(*items, v[i], absl::StrCat(path, "[", i, "]"), errors);
    }
  }
}

void FindUnsupported(const nlohmann::json& schema, const std::string& path, std::vector<std::string>& out) {
  static const std::vector<std::string> kEnforced = {"type",      "properties", "required",  "enum",
                                                     "minimum",   "maximum",    "minLength", "maxLength",
                                                     "pattern",   "additionalProperties", "items"};
  static const std::vector<std::string> kAnnotations = {"$schema", "title", "description", "default"};
  if (!schema.is_object()) return;
  for (const auto& [key, child] : schema.items()) {
    const bool enforced = std::find(kEnforced.begin(), kEnforced.end(), key) != kEnforced.end();
    if (!enforced && std::find(kAnnotations.begin(), kAnnotations.end(), key) == kAnnotations.end()) {
      out.push_back(absl::StrCat(path.empty() ? "(root)" : path, ": ", key));
    }
    if (key == "properties") {
      for (const auto& [name, sub] : child.items()) FindUnsupported(sub, Child(path, name), out);
    } else if (key == "items" || key == "additionalProperties") {
      FindUnsupported(child, Child(path, key), out);
    }
  }
}

}  // namespace

std::vector<std::string> ValidateJsonSchema(const nlohmann::json& schema, const nlohmann::json& value) {
  std::vector<std::string> errors;
  Validate(schema, value, "", errors);
  return errors;
}

std::vector<std::string> UnsupportedKeywords(const nlohmann::json& schema) {
  std::vector<std::string> out;
  FindUnsupported(schema, "", out);
  return out;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsMap()) {
    nlohmann::json object = nlohmann::json::object();
    for (auto kv : node) object[kv.first.Scalar()] = YamlToJson(kv.second);
    return object;
  }
  if (node.IsSequence()) {
    nlohmann::json array = nlohmann::json::array();
    for (auto item : node) array.push_back(YamlToJson(item));
    return array;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() != "?") return s;  // quoted: a string
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+");
  if (s == "null" || s == "Null" || s == "NULL" || s == "~") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, kInteger)) return std::stoll(s);
  if (std::regex_match(s, kFloat)) return std::stod(s);
  return s;
}

}  // namespace tessera::deploy
