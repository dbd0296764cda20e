#include "k8s/extender_results.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "scheduler/common/json_text.h"

namespace tessera::k8s {
namespace {

void AppendFailures(std::string& out, const NodeFailures& failures) {
  out.push_back('{');
  out += failures.members();
  out.push_back('}');
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

void AppendWireReason(std::string& out, std::string_view text) {
  constexpr std::string_view kPercent = "percent";
  constexpr std::string_view kCut = "...";
  // The common case, a short reason with nothing to escape and no '%', is
  // copied as it is after one pass over it.
  if (text.size() <= kMaxWireReasonBytes && IsPlainJsonString(text, '%')) {
    out.push_back('"');
    out.append(text);
    out.push_back('"');
    return;
  }
  std::string safe;
  safe.reserve(std::min(text.size(), kMaxWireReasonBytes) + 16);
  for (char c : text) {
    if (c != '%') {
      safe.push_back(c);
    } else {
      if (!safe.empty() && absl::ascii_isdigit(static_cast<unsigned char>(safe.back()))) safe.push_back(' ');
      safe += kPercent;
    }
    if (safe.size() > kMaxWireReasonBytes) break;
  }
  if (safe.size() > kMaxWireReasonBytes) {
    size_t keep = kMaxWireReasonBytes - kCut.size();
    // Never split a UTF-8 character: back up to the start of the one cut.
    while (keep > 0 && IsContinuationByte(safe[keep])) --keep;
    safe.resize(keep);
    safe += kCut;
  }
  AppendJsonString(out, safe);
}

void NodeFailures::Add(std::string_view node, std::string_view reason) {
  if (count_++ > 0) members_.push_back(',');
  AppendJsonString(members_, node);
  members_.push_back(':');
  AppendWireReason(members_, reason);
}

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterResult& result) {
  // Reserve what the names and reasons need (escaping aside) so that a
  // 5000-node answer is written without regrowing.
  size_t size = 128;
  for (uint32_t k : result.passed) {
    size += args.nodes ? (*args.nodes)[k].name.size() + (*args.nodes)[k].json.size() + 4 : (*args.node_names)[k].size() + 3;
  }
  size += result.failed.members().size() + result.unresolvable.members().size();
  std::string out;
  out.reserve(size);
  out += "{\"Nodes\":";
  if (args.nodes) {
    out += "{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < result.passed.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += (*args.nodes)[result.passed[i]].json;
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
  AppendWireReason(out, result.error);
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
