// A JSON Schema (draft-07) validator for the keywords values.schema.json
// uses, so CI checks the schema without Helm: type, properties, required,
// enum, minimum, maximum, minLength, maxLength, pattern (ECMAScript),
// additionalProperties (false or a schema), items (one schema). The
// annotations $schema, title, description and default are accepted and
// ignored; any other keyword is reported by UnsupportedKeywords, so the
// schema cannot say more than the tests check.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace tessera::deploy {

/// Every violation of `schema` by `value`, each as "<path>: <message>"
/// (path "" for the root, else "a.b[2].c"); empty when `value` is valid.
std::vector<std::string> ValidateJsonSchema(const nlohmann::json& schema, const nlohmann::json& value);

/// Keywords used anywhere in `schema` that ValidateJsonSchema does not
/// enforce, each as "<schema path>: <keyword>".
std::vector<std::string> UnsupportedKeywords(const nlohmann::json& schema);

/// `node` as Helm hands values to the schema: plain scalars typed as YAML 1.2
/// reads them (null, true/false, integers, floats, else strings), quoted
/// scalars as strings.
nlohmann::json YamlToJson(const YAML::Node& node);

}  // namespace tessera::deploy
