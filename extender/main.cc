// tessera-extender: the scheduler extender kube-scheduler calls over HTTP.
//
// flags -> options -> components -> serve. Exit codes: 0 after a clean stop
// (SIGTERM/SIGINT), 1 when it cannot listen, 2 for a bad flag, policy or
// cluster file, or an API-server client it cannot configure.
#include <memory>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "extender/flags.h"
#include "extender/program.h"
#include "policies/builtin_registry.h"
#include "scheduler/common/log.h"
#include "scheduler/common/mutex_mode.h"

int main(int argc, char** argv) {
  using namespace tessera;
  UseReleaseMutexMode();
  absl::SetProgramUsageMessage("GPU-aware scheduler extender for kube-scheduler. See README.md.");
  AcceptDashedFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<ProgramOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    LogError(absl::StrCat("invalid flags:\n", options.status().message()));
    return 2;
  }

  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Build(*options, registry);
  if (!program.ok()) {
    LogError(std::string(program.status().message()));
    return 2;
  }
  return (*program)->Serve();
}
