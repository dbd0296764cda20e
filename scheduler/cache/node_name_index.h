// Node name -> the node's dense index in a snapshot, built once per node set
// and read by every filter and prioritize for each of their thousands of
// names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// Open addressing over 16-byte slots that hold a hash tag and where the
/// name sits in one buffer of every name: a lookup reads one or two slots
/// and the name, all in two compact arrays (a request's names come in an
/// order unrelated to the index, so each lookup is a cache miss that the
/// caller overlaps by prefetching a few names ahead with the hash it
/// computed once).
class NodeNameIndex {
 public:
  NodeNameIndex() = default;
  /// names[i] is node i's name; names are unique.
  explicit NodeNameIndex(const std::vector<std::string_view>& names);

  static uint64_t Hash(std::string_view name);
  [[nodiscard]] std::optional<uint32_t> Find(std::string_view name) const { return Find(name, Hash(name)); }
  /// Find with `hash` == Hash(name), computed by the caller.
  [[nodiscard]] std::optional<uint32_t> Find(std::string_view name, uint64_t hash) const;
  /// Starts loading the slot Find(name, hash) reads first.
  void Prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask_]);
  }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t tag = 0;        // the hash's high half
    uint32_t node = kEmpty;  // the node's index, or kEmpty
    uint32_t name_at = 0;    // in names_
    uint32_t name_size = 0;
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;

  std::vector<Slot> slots_;  // a power of two, at least twice the names
  std::string names_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace tessera
