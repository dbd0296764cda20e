// Names for Tessera's threads, as `top -H`, `ps -L`, perf and gdb show them
// (/proc/<pid>/task/<tid>/comm). A process with 130 threads all called
// "tessera-extende" says nothing about which of them is busy.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

/// Names the calling thread; Linux keeps the first 15 bytes. Best effort:
/// a name that cannot be set leaves the old one.
void NameThisThread(std::string_view name);

/// The calling thread's name ("" when it cannot be read).
[[nodiscard]] std::string ThisThreadName();

}  // namespace tessera
