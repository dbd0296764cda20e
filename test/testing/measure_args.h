// One-line builders of fgd's and host-stranding's MeasureArgs for tests:
// the rest of the args keep their defaults.
#pragma once

#include "policies/fgd/fgd.h"

namespace tessera::testing {

inline MeasureArgs Measure(KindWeights weights, bool gpu_memory = false, bool leftover_outlook = false) {
  MeasureArgs m;
  m.kind_weights = weights;
  m.gpu_memory = gpu_memory;
  m.leftover_outlook = leftover_outlook;
  return m;
}

}  // namespace tessera::testing
