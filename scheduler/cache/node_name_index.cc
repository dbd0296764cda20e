#include "scheduler/cache/node_name_index.h"

#include <bit>
#include <cstring>

#include "absl/hash/hash.h"

namespace tessera {

uint64_t NodeNameIndex::Hash(std::string_view name) { return absl::Hash<std::string_view>{}(name); }

NodeNameIndex::NodeNameIndex(const std::vector<std::string_view>& names) : size_(names.size()) {
  if (names.empty()) return;
  slots_.resize(std::bit_ceil(2 * names.size()));
  mask_ = slots_.size() - 1;
  size_t bytes = 0;
  for (std::string_view name : names) bytes += name.size();
  names_.reserve(bytes);
  for (size_t i = 0; i < names.size(); ++i) {
    const uint64_t hash = Hash(names[i]);
    uint64_t at = hash & mask_;
    while (slots_[at].node != kEmpty) at = (at + 1) & mask_;
    slots_[at] = Slot{.tag = static_cast<uint32_t>(hash >> 32),
                      .node = static_cast<uint32_t>(i),
                      .name_at = static_cast<uint32_t>(names_.size()),
                      .name_size = static_cast<uint32_t>(names[i].size())};
    names_.append(names[i]);
  }
}

std::optional<uint32_t> NodeNameIndex::Find(std::string_view name, uint64_t hash) const {
  if (slots_.empty()) return std::nullopt;
  const auto tag = static_cast<uint32_t>(hash >> 32);
  // At most half the slots are taken, so an empty one ends every probe.
  for (uint64_t at = hash & mask_;; at = (at + 1) & mask_) {
    const Slot& slot = slots_[at];
    if (slot.node == kEmpty) return std::nullopt;
    if (slot.tag == tag && slot.name_size == name.size() &&
        std::memcmp(names_.data() + slot.name_at, name.data(), name.size()) == 0) {
      return slot.node;
    }
  }
}

}  // namespace tessera
