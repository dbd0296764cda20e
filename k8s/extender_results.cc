#include "k8s/extender_results.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

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

// Text written into room made for it in one go: the answers carry thousands
// of names, and appending piece by piece paid a capacity check per piece
// (the largest cost of encoding prioritize's answer). The caller makes room
// for everything it writes; nothing here checks.
class RoomWriter {
 public:
  // Makes `bytes` of room at the end of `out`; Done() trims what was unused.
  RoomWriter(std::string& out, size_t bytes) : out_(out), start_(out.size()) {
    out_.resize(start_ + bytes);
    at_ = out_.data() + start_;
  }
  void Put(char c) { *at_++ = c; }
  void Put(std::string_view s) {
    std::memcpy(at_, s.data(), s.size());
    at_ += s.size();
  }
  // At most kMaxIntBytes.
  void PutInt(int64_t v) {
    if (v >= 0 && v <= 9) {
      *at_++ = static_cast<char>('0' + v);
      return;
    }
    at_ = std::to_chars(at_, at_ + kMaxIntBytes, v).ptr;
  }
  void Done() { out_.resize(static_cast<size_t>(at_ - out_.data())); }

  static constexpr size_t kMaxIntBytes = 20;  // "-9223372036854775808"

 private:
  std::string& out_;
  size_t start_;
  char* at_;
};

// The bytes `names` take as plain JSON strings (quotes included), or nullopt
// when one needs escaping: node names are DNS names and never do. `known_plain`:
// the request had them unescaped, so they are not looked at again.
template <typename NameOf>
std::optional<size_t> PlainNamesBytes(size_t count, NameOf name_of, bool known_plain) {
  size_t bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view name = name_of(i);
    if (!known_plain && !IsPlainJsonString(name)) return std::nullopt;
    bytes += name.size() + 2;
  }
  return bytes;
}

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
  const auto passed_name = [&](size_t i) -> std::string_view {
    const uint32_t k = result.passed[i];
    return args.nodes ? (*args.nodes)[k].name : (*args.node_names)[k];
  };
  const bool known_plain = !args.nodes && args.node_names_plain;
  if (const std::optional<size_t> bytes = PlainNamesBytes(result.passed.size(), passed_name, known_plain)) {
    RoomWriter w(out, *bytes + result.passed.size());
    for (size_t i = 0; i < result.passed.size(); ++i) {
      if (i > 0) w.Put(',');
      w.Put('"');
      w.Put(passed_name(i));
      w.Put('"');
    }
    w.Done();
  } else {
    for (size_t i = 0; i < result.passed.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendJsonString(out, passed_name(i));
    }
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

std::string EncodeHostPriorityList(const std::vector<std::string_view>& hosts, const std::vector<int64_t>& scores,
                                   bool hosts_plain) {
  static constexpr std::string_view kHost = "{\"Host\":";
  static constexpr std::string_view kScore = ",\"Score\":";
  std::string out;
  const auto host = [&](size_t i) { return hosts[i]; };
  if (const std::optional<size_t> bytes = PlainNamesBytes(hosts.size(), host, hosts_plain)) {
    // {"Host":"<name>","Score":<n>}, per host; the wire's scores are 0..10.
    size_t score_bytes = 0;
    for (const int64_t score : scores) score_bytes += score >= 0 && score <= 9 ? 1 : RoomWriter::kMaxIntBytes;
    RoomWriter w(out, 2 + *bytes + score_bytes + hosts.size() * (kHost.size() + kScore.size() + 2));
    w.Put('[');
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (i > 0) w.Put(',');
      w.Put(kHost);
      w.Put('"');
      w.Put(hosts[i]);
      w.Put('"');
      w.Put(kScore);
      w.PutInt(scores[i]);
      w.Put('}');
    }
    w.Put(']');
    w.Done();
    return out;
  }
  out.push_back('[');
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += kHost;
    AppendJsonString(out, hosts[i]);
    out += kScore;
    absl::StrAppend(&out, scores[i]);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

}  // namespace tessera::k8s
