#include "scheduler/cache/pod_directory.h"

#include "scheduler/model/absl_compat.h"

namespace tessera {

void PodDirectory::Upsert(PodRecord pod) {
  absl::MutexLock lock(&mu_);
  std::string uid = pod.uid;
  pods_.insert_or_assign(std::move(uid), std::move(pod));
}

void PodDirectory::Remove(std::string_view uid) {
  absl::MutexLock lock(&mu_);
  pods_.erase(Absl(uid));
}

std::optional<PodRecord> PodDirectory::Find(std::string_view uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(Absl(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

size_t PodDirectory::size() const {
  absl::MutexLock lock(&mu_);
  return pods_.size();
}

}  // namespace tessera
