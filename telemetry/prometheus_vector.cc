#include "telemetry/prometheus_vector.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

constexpr size_t kMaxQuoted = 200;

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed Prometheus answer: ", Absl(what)));
}

// Prometheus writes sample values as strings: "97", "0.25", "NaN", "+Inf", "-Inf".
double ParseValue(std::string_view text) {
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  if (!absl::SimpleAtod(Absl(text), &v)) return std::numeric_limits<double>::quiet_NaN();
  return v;
}

std::string_view Cut(std::string_view s) { return s.size() > kMaxQuoted ? s.substr(0, kMaxQuoted) : s; }

absl::Status ErrorAnswer(simdjson::dom::object root) {
  std::string_view type, message;
  if (root["errorType"].get_string().get(type) != simdjson::SUCCESS) type = "unknown";
  if (root["error"].get_string().get(message) != simdjson::SUCCESS) message = "(no message)";
  return absl::FailedPreconditionError(
      absl::StrCat("Prometheus answered an error (", Absl(Cut(type)), "): ", Absl(Cut(message))));
}

}  // namespace

absl::Status ParseInstantVector(std::string_view body, const SeriesLabels& labels, simdjson::dom::parser& parser,
                                absl::FunctionRef<void(const VectorSample&)> visit) {
  simdjson::dom::element root;
  if (auto error = parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(root);
      error != simdjson::SUCCESS) {
    return Malformed(absl::StrCat("not JSON (", simdjson::error_message(error), ")"));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) return Malformed("not a JSON object");
  std::string_view status;
  if (object["status"].get_string().get(status) != simdjson::SUCCESS) return Malformed("no \"status\"");
  if (status == "error") return ErrorAnswer(object);
  if (status != "success") return Malformed(absl::StrCat("\"status\" is \"", Absl(Cut(status)), "\""));

  simdjson::dom::object data;
  if (object["data"].get_object().get(data) != simdjson::SUCCESS) return Malformed("no \"data\" object");
  std::string_view result_type;
  if (data["resultType"].get_string().get(result_type) != simdjson::SUCCESS) {
    return Malformed("no \"data.resultType\"");
  }
  if (result_type != "vector") {
    return Malformed(absl::StrCat("the query gives a ", Absl(Cut(result_type)),
                                  ", not an instant vector (one sample per GPU series)"));
  }
  simdjson::dom::array result;
  if (data["result"].get_array().get(result) != simdjson::SUCCESS) return Malformed("no \"data.result\" list");

  size_t item = 0;
  for (simdjson::dom::element element : result) {
    simdjson::dom::object series;
    simdjson::dom::object metric;
    simdjson::dom::array value;
    if (element.get_object().get(series) != simdjson::SUCCESS ||
        series["metric"].get_object().get(metric) != simdjson::SUCCESS ||
        series["value"].get_array().get(value) != simdjson::SUCCESS || value.size() != 2) {
      return Malformed(absl::StrCat("data.result[", item, "] is not {\"metric\":{...},\"value\":[time,\"value\"]}"));
    }
    VectorSample sample;
    for (simdjson::dom::key_value_pair label : metric) {
      std::string_view text;
      if (label.value.get_string().get(text) != simdjson::SUCCESS) continue;
      if (label.key == labels.node) {
        sample.node = text;
      } else if (label.key == labels.uuid) {
        sample.uuid = text;
      } else if (label.key == labels.gpu) {
        sample.gpu = text;
      }
    }
    std::string_view text;
    if (value.at(0).get_double().get(sample.timestamp) != simdjson::SUCCESS) {
      int64_t whole = 0;
      if (value.at(0).get_int64().get(whole) != simdjson::SUCCESS) {
        return Malformed(absl::StrCat("data.result[", item, "].value[0] is not a time"));
      }
      sample.timestamp = static_cast<double>(whole);
    }
    if (value.at(1).get_string().get(text) != simdjson::SUCCESS) {
      return Malformed(absl::StrCat("data.result[", item, "].value[1] is not a string"));
    }
    sample.value = ParseValue(text);
    visit(sample);
    ++item;
  }
  return absl::OkStatus();
}

}  // namespace tessera
