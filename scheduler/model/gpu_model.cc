#include "scheduler/model/gpu_model.h"

#include "absl/strings/match.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

bool GpuModelMatches(std::string_view pattern, std::string_view model) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return model.size() >= pattern.size() && absl::EqualsIgnoreCase(Absl(model.substr(0, pattern.size())), Absl(pattern));
  }
  return absl::EqualsIgnoreCase(Absl(model), Absl(pattern));
}

}  // namespace tessera
