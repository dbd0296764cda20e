#include "extender/service/recent_refusals.h"

#include <algorithm>
#include <utility>

#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// Cuts `text` to at most `max` bytes at a UTF-8 character boundary.
void Cut(std::string& text, size_t max) {
  if (text.size() <= max) return;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  text += "...";
}

}  // namespace

RecentRefusals::RecentRefusals(RecentRefusalsOptions options) : options_(options) {}

void RecentRefusals::Record(FilterRefusal refusal) {
  const size_t max = options_.max_text_bytes;
  for (std::string* text : {&refusal.key, &refusal.pod, &refusal.tenant_label, &refusal.request, &refusal.error}) {
    Cut(*text, max);
  }
  std::sort(refusal.reasons.begin(), refusal.reasons.end(),
            [](const FilterRefusal::Reason& a, const FilterRefusal::Reason& b) {
              return a.nodes != b.nodes ? a.nodes > b.nodes : a.code < b.code;
            });
  if (refusal.reasons.size() > options_.max_reasons) refusal.reasons.resize(options_.max_reasons);
  for (FilterRefusal::Reason& r : refusal.reasons) {
    Cut(r.code, max);
    Cut(r.example, max);
    Cut(r.node, max);
  }
  const absl::Time now = options_.clock->Now();
  refusal.at = now;
  absl::MutexLock lock(&mu_);
  if (auto it = by_key_.find(refusal.key); it != by_key_.end()) {
    order_.erase(it->second);
    by_key_.erase(it);
  }
  DropExpired(now);
  while (!order_.empty() && order_.size() >= options_.capacity) {
    by_key_.erase(order_.back().key);
    order_.pop_back();
  }
  if (options_.capacity == 0) return;
  order_.push_front(std::move(refusal));
  by_key_.emplace(order_.front().key, order_.begin());
}

void RecentRefusals::Forget(std::string_view key) {
  absl::MutexLock lock(&mu_);
  if (by_key_.empty()) return;
  auto it = by_key_.find(Absl(key));
  if (it == by_key_.end()) return;
  order_.erase(it->second);
  by_key_.erase(it);
}

void RecentRefusals::DropExpired(absl::Time now) {
  while (!order_.empty() && now - order_.back().at >= options_.ttl) {
    by_key_.erase(order_.back().key);
    order_.pop_back();
  }
}

std::vector<FilterRefusal> RecentRefusals::List() const {
  const absl::Time now = options_.clock->Now();
  absl::MutexLock lock(&mu_);
  std::vector<FilterRefusal> out;
  out.reserve(order_.size());
  for (const FilterRefusal& r : order_) {
    if (now - r.at >= options_.ttl) break;  // the rest are older
    out.push_back(r);
  }
  return out;
}

size_t RecentRefusals::size() const {
  absl::MutexLock lock(&mu_);
  return order_.size();
}

}  // namespace tessera
