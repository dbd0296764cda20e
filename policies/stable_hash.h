// Reproducible hashing for plugins that choose at random.
//
// A plugin is stateless, so "random" means a hash of what identifies the
// choice: the pod's salt, the node's name, a GPU index. The hash must be the
// same in every process and on every platform (absl::Hash and std::hash are
// not: absl seeds per process), so that a replay or a test gives the same
// answer every time.
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera {

/// SplitMix64's finaliser: a bijective, well-mixed 64-bit permutation.
constexpr uint64_t MixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A stable 64-bit hash of `text` (FNV-1a) mixed with `seed`.
constexpr uint64_t StableHash(uint64_t seed, std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL ^ MixBits(seed);
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return MixBits(h);
}

}  // namespace tessera
