// Which of the nodes that fit filter passes on (the policy's `shortlist:`,
// scheduler/framework/profile_set.h; docs/concepts/kubernetes.md, "The shortlist").
//
// kube-scheduler runs its own score plugins on every node filter passes, and
// sends them all to prioritize: at 1000 nodes that work, not Tessera's,
// sets the pace of a second scheduler. Passing only the nodes Tessera ranks
// best keeps it to a handful, and with one node kube-scheduler skips scoring
// altogether. Among the best (equal scores), kube-scheduler's preferences
// still choose; they no longer overrule Tessera's ranking.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tessera {

/// The entries of `passed` whose score is the highest, at most `max_nodes`
/// of them, in `passed`'s order. `scores[k]` is passed[k]'s. When more tie
/// at the top, which of them are kept turns on `salt` (a run of consecutive
/// ties from a start it picks, wrapping round), so that pods spread over
/// equally good nodes as kube-scheduler's random choice among its best
/// would. `max_nodes` 0 keeps `passed` whole.
std::vector<uint32_t> ShortlistBest(absl::Span<const uint32_t> passed, absl::Span<const int64_t> scores,
                                    size_t max_nodes, uint64_t salt);

}  // namespace tessera
