#include "scheduler/framework/profile_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

absl::StatusOr<std::shared_ptr<const ProfileSet>> ProfileSet::Create(std::shared_ptr<const Profile> default_profile,
                                                                     std::vector<PoolPolicy> pools,
                                                                     Shortlist shortlist) {
  if (default_profile == nullptr) return absl::InvalidArgumentError("a policy needs a default profile");
  if (shortlist.max_nodes < 0 || shortlist.max_nodes > Shortlist::kMostNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("shortlist.maxNodes must be in 0..", Shortlist::kMostNodes, "; got ", shortlist.max_nodes));
  }
  for (size_t i = 0; i < pools.size(); ++i) {
    const PoolPolicy& pool = pools[i];
    if (pool.name.empty()) return absl::InvalidArgumentError(absl::StrCat("pool ", i, " has no name"));
    if (pool.profile == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("pool \"", pool.name, "\" has no profile"));
    }
    if (pool.task_types.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("pool \"", pool.name, "\" takes no task type"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (pools[j].name == pool.name) {
        return absl::InvalidArgumentError(absl::StrCat("pool \"", pool.name, "\" is listed twice"));
      }
      for (const std::string& t : pool.task_types) {
        if (std::find(pools[j].task_types.begin(), pools[j].task_types.end(), t) != pools[j].task_types.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("task type \"", t, "\" goes to two pools: \"", pools[j].name, "\" and \"", pool.name, "\""));
        }
      }
    }
    for (const std::string& t : pool.task_types) {
      if (t.empty()) return absl::InvalidArgumentError(absl::StrCat("pool \"", pool.name, "\" lists an empty task type"));
    }
  }
  return std::shared_ptr<const ProfileSet>(new ProfileSet(std::move(default_profile), std::move(pools), shortlist));
}

std::shared_ptr<const ProfileSet> ProfileSet::Single(std::shared_ptr<const Profile> profile) {
  return std::shared_ptr<const ProfileSet>(new ProfileSet(std::move(profile), {}, Shortlist{}));
}

std::shared_ptr<const ProfileSet> ProfileSet::WithDefault(std::shared_ptr<const Profile> default_profile) const {
  return std::shared_ptr<const ProfileSet>(new ProfileSet(std::move(default_profile), pools_, shortlist_));
}

ProfileSet::ProfileSet(std::shared_ptr<const Profile> default_profile, std::vector<PoolPolicy> pools,
                       Shortlist shortlist)
    : default_(std::move(default_profile)), pools_(std::move(pools)), shortlist_(shortlist) {
  has_exclusive_ = std::any_of(pools_.begin(), pools_.end(), [](const PoolPolicy& p) { return p.exclusive; });
}

const PoolPolicy* ProfileSet::PoolFor(std::string_view task_type) const {
  if (task_type.empty()) return nullptr;
  for (const PoolPolicy& pool : pools_) {
    for (const std::string& t : pool.task_types) {
      if (t == task_type) return &pool;
    }
  }
  return nullptr;
}

bool ProfileSet::Contains(const Profile* profile) const {
  if (profile == default_.get()) return true;
  return std::any_of(pools_.begin(), pools_.end(), [profile](const PoolPolicy& p) { return p.profile.get() == profile; });
}

PoolRoute::PoolRoute(const ProfileSet& set, std::string_view task_type)
    : set_(&set), task_type_(task_type), pool_(set.PoolFor(task_type)) {}

bool PoolRoute::Admits(std::string_view node_pool) const {
  if (pool_ != nullptr) return node_pool == pool_->name;
  if (!set_->has_exclusive_pools() || node_pool.empty()) return true;
  for (const PoolPolicy& pool : set_->pools()) {
    if (pool.exclusive && pool.name == node_pool) return false;
  }
  return true;
}

const FilterVerdict* PoolRoute::Refusal(std::string_view node_pool) {
  if (Admits(node_pool)) return nullptr;
  for (const auto& [pool, verdict] : refusals_) {
    if (pool == node_pool) return &verdict;
  }
  const std::string_view code = pool_ != nullptr ? kOutsidePool : kReservedPool;
  refusals_.emplace_back(std::string(node_pool), FilterVerdict::Never(code, RefusalMessage(node_pool)));
  return &refusals_.back().second;
}

std::string PoolRoute::RefusalMessage(std::string_view node_pool) const {
  // Unquoted: pool names and task types are label values (the loader and
  // the service check them), and a reason with no quote in it is copied to
  // the wire as it is (k8s::AppendWireReason), not escaped for every node.
  if (pool_ != nullptr) {
    return absl::StrCat("pods of task type ", task_type_, " run only in node pool ", pool_->name, "; ",
                        node_pool.empty() ? std::string("this node is in no node pool")
                                          : absl::StrCat("this node is in node pool ", Absl(node_pool)));
  }
  const PoolPolicy* reserved = nullptr;
  for (const PoolPolicy& pool : set_->pools()) {
    if (pool.name == node_pool) reserved = &pool;
  }
  return absl::StrCat("node pool ", Absl(node_pool), " is reserved for task types ",
                      reserved != nullptr ? absl::StrJoin(reserved->task_types, ", ") : std::string("of its own"), "; ",
                      task_type_.empty() ? std::string("pod has no task type")
                                         : absl::StrCat("pod's task type is ", task_type_));
}

}  // namespace tessera
