// Integer quantities with their unit in the type.
//
// Allocation bookkeeping never uses floating point: a GPU share is counted in
// milli-GPU (1000 = one whole GPU), memory in MiB, utilisation in per-mille.
// Each unit is its own type, so adding MiB to milli-GPU does not compile.
#pragma once

#include <cstdint>
#include <compare>

namespace tessera {

/// A strongly typed int64 count of some unit. `Tag` only distinguishes types.
template <typename Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(int64_t value) : value_(value) {}

  [[nodiscard]] constexpr int64_t value() const { return value_; }

  constexpr Quantity operator+(Quantity o) const { return Quantity(value_ + o.value_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(value_ - o.value_); }
  constexpr Quantity operator*(int64_t k) const { return Quantity(value_ * k); }
  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  constexpr auto operator<=>(const Quantity&) const = default;

  static constexpr Quantity Zero() { return Quantity(0); }

 private:
  int64_t value_ = 0;
};

struct MilliGpuTag {};
struct MemoryMiBTag {};
struct PerMilleTag {};
struct MilliCpuTag {};

/// A share of one GPU's compute: 1000 = one whole GPU, 250 = a quarter.
using MilliGpu = Quantity<MilliGpuTag>;
/// GPU memory in mebibytes (2^20 bytes).
using MemoryMiB = Quantity<MemoryMiBTag>;
/// A ratio in thousandths (utilisation, fractions of capacity).
using PerMille = Quantity<PerMilleTag>;
/// Host CPU in thousandths of a core, as Kubernetes counts it (1000 = one core).
using MilliCpu = Quantity<MilliCpuTag>;

inline constexpr MilliGpu kOneGpu{1000};

}  // namespace tessera
