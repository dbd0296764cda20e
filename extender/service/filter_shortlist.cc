#include "extender/service/filter_shortlist.h"

#include <algorithm>

namespace tessera {

std::vector<uint32_t> ShortlistBest(absl::Span<const uint32_t> passed, absl::Span<const int64_t> scores,
                                    size_t max_nodes, uint64_t salt) {
  if (max_nodes == 0 || passed.size() != scores.size() || passed.empty()) {
    return std::vector<uint32_t>(passed.begin(), passed.end());
  }
  const int64_t best = *std::max_element(scores.begin(), scores.end());
  std::vector<uint32_t> top;
  for (size_t k = 0; k < passed.size(); ++k) {
    if (scores[k] == best) top.push_back(passed[k]);
  }
  if (top.size() <= max_nodes) return top;
  const size_t start = salt % top.size();
  std::vector<uint32_t> kept;
  kept.reserve(max_nodes);
  for (size_t k = 0; k < max_nodes; ++k) kept.push_back(top[(start + k) % top.size()]);
  // Request order: the wrapped run starts with the highest indices.
  std::rotate(kept.begin(), std::min_element(kept.begin(), kept.end()), kept.end());
  return kept;
}

}  // namespace tessera
