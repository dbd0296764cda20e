#include "k8s/extender_results.h"

#include "absl/strings/str_cat.h"
#include "scheduler/common/json_text.h"

namespace tessera::k8s {
namespace {

void AppendFailures(std::string& out, const std::vector<NodeFailure>& failures) {
  out.push_back('{');
  for (size_t i = 0; i < failures.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(out, failures[i].node);
    out.push_back(':');
    AppendJsonString(out, failures[i].reason);
  }
  out.push_back('}');
}

}  // namespace

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterResult& result) {
  // Reserve what the names and reasons need (escaping aside) so that a
  // 5000-node answer is written without regrowing.
  size_t size = 128;
  for (uint32_t k : result.passed) size += (args.nodes ? (*args.nodes)[k].name : (*args.node_names)[k]).size() + 3;
  for (const auto* list : {&result.failed, &result.unresolvable}) {
    for (const NodeFailure& f : *list) size += f.node.size() + f.reason.size() + 6;
  }
  std::string out;
  out.reserve(size);
  out += "{\"Nodes\":";
  if (args.nodes) {
    out += "{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < result.passed.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += simdjson::to_string((*args.nodes)[result.passed[i]].object);
    }
    out += "]}";
  } else {
    out += "null";
  }
  out += ",\"NodeNames\":[";
  for (size_t i = 0; i < result.passed.size(); ++i) {
    if (i > 0) out.push_back(',');
    const uint32_t k = result.passed[i];
    AppendJsonString(out, args.nodes ? (*args.nodes)[k].name : (*args.node_names)[k]);
  }
  out += "],\"FailedNodes\":";
  AppendFailures(out, result.failed);
  out += ",\"FailedAndUnresolvableNodes\":";
  AppendFailures(out, result.unresolvable);
  out += ",\"Error\":";
  AppendJsonString(out, result.error);
  out.push_back('}');
  return out;
}

std::string EncodeHostPriorityList(const std::vector<std::string_view>& hosts, const std::vector<int64_t>& scores) {
  // {"Host":"<name>","Score":10}, : 27 bytes besides the name (escaping aside).
  size_t size = 2;
  for (std::string_view host : hosts) size += host.size() + 27;
  std::string out;
  out.reserve(size);
  out.push_back('[');
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"Host\":";
    AppendJsonString(out, hosts[i]);
    out += ",\"Score\":";
    // The wire's 0..10 without a general number formatter.
    if (const int64_t score = scores[i]; score >= 0 && score <= 9) {
      out.push_back(static_cast<char>('0' + score));
    } else if (score == 10) {
      out += "10";
    } else {
      absl::StrAppend(&out, score);
    }
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

}  // namespace tessera::k8s
