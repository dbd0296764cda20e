// Encoding the extender's answers: ExtenderFilterResult and HostPriorityList.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/extender_args.h"

namespace tessera::k8s {

/// The most bytes of one reason (or Error) written for kube-scheduler; a
/// longer one is cut at a character boundary and ends in "...". Reasons are
/// sentences; the cap keeps one echoing a huge annotation from being copied
/// into the answer once per node.
inline constexpr size_t kMaxWireReasonBytes = 512;

/// Appends `text` as the JSON string kube-scheduler gets as a reason or Error.
/// kube-scheduler uses an extender's text as a Go format string (its events
/// and errors print "95%!u(MISSING)tilisation" for "95% utilisation"), so no
/// `%` reaches it: each is written as "percent" ("95 percent utilisation"; a
/// space is put between a digit and the word). Then cut to kMaxWireReasonBytes.
void AppendWireReason(std::string& out, std::string_view text);

/// Nodes that failed filtering, and why (shown to the user in pod events),
/// kept as the JSON members of the answer's map: each reason is written for
/// the wire (AppendWireReason) as it is added, so a request that rejects
/// thousands of nodes keeps no string per node and copies no reason twice.
class NodeFailures {
 public:
  void Add(std::string_view node, std::string_view reason);
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] size_t size() const { return count_; }
  /// `"node":"reason",…` (no braces), in the order added.
  [[nodiscard]] std::string_view members() const { return members_; }

 private:
  std::string members_;
  size_t count_ = 0;
};

/// What filter decided, before encoding. `passed` indexes the request's nodes
/// (Nodes.items or NodeNames), in request order.
struct FilterResult {
  std::vector<uint32_t> passed;
  NodeFailures failed;        ///< FailedNodes: not now.
  NodeFailures unresolvable;  ///< FailedAndUnresolvableNodes: never.
  std::string error;          ///< Non-empty fails the scheduling attempt.
};

/// `{"Nodes":…,"NodeNames":[…],"FailedNodes":{…},"FailedAndUnresolvableNodes":{…},"Error":""}`.
/// The Error is written with AppendWireReason, as the reasons were.
/// With full Nodes in the request, `Nodes` echoes the passing Node objects (as
/// sent, byte for byte) and `NodeNames` lists them too; with NodeNames, `Nodes` is
/// null. `NodeNames` is always a list, never null: null would mean "no node fits"
/// only by accident.
std::string EncodeFilterResult(const ExtenderArgs& args, const FilterResult& result);

/// `[{"Host":"node","Score":7},…]`; scores must already be 0..10.
/// `hosts_plain`: the caller knows no host needs escaping
/// (ExtenderArgs::node_names_plain), so none is checked.
std::string EncodeHostPriorityList(const std::vector<std::string_view>& hosts, const std::vector<int64_t>& scores,
                                   bool hosts_plain = false);

}  // namespace tessera::k8s
