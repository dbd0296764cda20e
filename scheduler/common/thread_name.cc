#include "scheduler/common/thread_name.h"

#include <pthread.h>

#include <array>
#include <string>

namespace tessera {

namespace {
constexpr size_t kMaxNameBytes = 15;  // TASK_COMM_LEN less the NUL
}  // namespace

void NameThisThread(std::string_view name) {
  const std::string truncated(name.substr(0, kMaxNameBytes));
  (void)pthread_setname_np(pthread_self(), truncated.c_str());
}

std::string ThisThreadName() {
  std::array<char, kMaxNameBytes + 1> name{};
  if (pthread_getname_np(pthread_self(), name.data(), name.size()) != 0) return "";
  return std::string(name.data());
}

}  // namespace tessera
