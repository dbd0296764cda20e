// The real tessera-extender binary as a child process (TESSERA_EXTENDER_BINARY),
// for the tests that run the whole program: test/testing/child_process.h
// with the binary named and the names those tests read.
#pragma once

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "test/testing/child_process.h"

namespace tessera::testing {

class Extender : public ChildProcess {
 public:
  explicit Extender(std::vector<std::string> args) : ChildProcess(TESSERA_EXTENDER_BINARY, std::move(args)) {}

  /// Reads stderr until a line matches `pattern` (or `timeout`): [0] the
  /// match, [1...] its groups; empty on time-out.
  std::vector<std::string> WaitFor(const std::regex& pattern,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return WaitForLogMatch(pattern, timeout);
  }
  /// Everything the process wrote to stderr.
  std::string AllOutput() { return Stderr(); }
};

}  // namespace tessera::testing
