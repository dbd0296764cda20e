// The admission webhook of the control-plane tests' Tessera: main() starts it
// with --webhook-port and certificates made at run time; the tests register
// it with the API server (admission_webhook_test.cc).
#pragma once

#include <cstdint>
#include <string>

namespace tessera::testing {

/// The port Tessera's webhook listens on (HTTPS on 127.0.0.1).
uint16_t WebhookPort();
/// The PEM CA that signed the webhook's certificate (the caBundle).
const std::string& WebhookCaPem();

}  // namespace tessera::testing
