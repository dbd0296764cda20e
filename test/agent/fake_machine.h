// The fake libnvidia-ml (test/testing/fake_nvml) loaded as the agent loads
// the driver's: one of its machines, chosen through its environment.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "agent/nvml/nvml_library.h"

namespace tessera::agent::testing {

/// What the fake describes (fake_nvml.cc's environment variables; "" = unset).
struct FakeMachine {
  std::string machine{};     ///< FAKE_NVML_MACHINE: dgx1-v100, dgx-a100, pcie-8, none
  std::string unhealthy{};   ///< FAKE_NVML_UNHEALTHY: "3,5"
  std::string mig{};         ///< FAKE_NVML_MIG
  std::string mig_instances{};  ///< FAKE_NVML_MIG_INSTANCES: "6:3g.40gb@0,2g.20gb@4;7:7g.80gb@0"
  std::string fail{};        ///< FAKE_NVML_FAIL: "nvmlGpuInstanceGetInfo=999"
  std::string control{};     ///< FAKE_NVML_CONTROL: a file of "xid <gpu> <code>" / "lost <gpu>" lines
  std::string init_error{};  ///< FAKE_NVML_INIT_ERROR
};

inline void SetOrUnset(const char* name, const std::string& value) {
  if (value.empty()) {
    unsetenv(name);
  } else {
    setenv(name, value.c_str(), 1);
  }
}

/// Sets the fake's environment (read by nvmlInit_v2).
inline void Describe(const FakeMachine& m) {
  SetOrUnset("FAKE_NVML_MACHINE", m.machine);
  SetOrUnset("FAKE_NVML_UNHEALTHY", m.unhealthy);
  SetOrUnset("FAKE_NVML_MIG", m.mig);
  SetOrUnset("FAKE_NVML_MIG_INSTANCES", m.mig_instances);
  SetOrUnset("FAKE_NVML_FAIL", m.fail);
  SetOrUnset("FAKE_NVML_CONTROL", m.control);
  SetOrUnset("FAKE_NVML_INIT_ERROR", m.init_error);
}

/// The fake, loaded and initialised as `m`; null (and a test failure) when it cannot be.
inline std::unique_ptr<NvmlLibrary> LoadFake(const FakeMachine& m) {
  Describe(m);
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load(FAKE_NVML_LIBRARY);
  EXPECT_TRUE(nvml.ok()) << nvml.status();
  if (!nvml.ok()) return nullptr;
  const absl::Status st = (*nvml)->Init();
  EXPECT_TRUE(st.ok()) << st;
  return st.ok() ? *std::move(nvml) : nullptr;
}

}  // namespace tessera::agent::testing
