// Linked into every benchmark: they measure abseil's mutexes as the programs
// run them (scheduler/common/mutex_mode.h), not with the deadlock detection
// Debian's libabsl leaves on.
#include "scheduler/common/mutex_mode.h"

namespace {

const bool kReleaseMutexMode = [] {
  tessera::UseReleaseMutexMode();
  return true;
}();

}  // namespace
