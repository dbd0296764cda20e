#!/usr/bin/env bash
# No test waits by sleeping. A test waits on an event (a latch, an
# absl::Notification, a FakeClock for code that reads the injectable Clock)
# or, where only another process or a peer's state can tell, polls through
# the one helper, test/testing/eventually.h. A sleep anywhere else in test/
# fails this check, named file:line, unless the allow-list below has it.
#
#   scripts/check_test_sleeps.sh SOURCE_DIR
#
# The allow-list: "path|text|reason", one a line. A sleep on a line of
# `path` (relative to SOURCE_DIR) that contains `text` is allowed; an empty
# `text` allows the whole file. Only the polling helper and delays that ARE
# the behaviour under test (a peer simulated as slow) belong here. An entry
# that no longer matches a sleep fails too, so the list stays true.
allowed=(
  "test/testing/eventually.h||the polling helper itself: WaitFor's pause between polls"
  "test/testing/fake_nvml/fake_nvml.cc|sleep_for|the fake libnvidia-ml's nvmlEventSetWait blocks up to its timeout as the real one does, re-reading the control file a test writes from another process (a C library: no gtest, no helper)"
  "test/control_plane_faults/api_server_fault_test.cc|the arrival rate|PodsArriving: pods created at a steady 4 a second while the API server fails is the load the chaos case runs under"
  "test/control_plane_faults/api_server_fault_test.cc|the fault's length|ApiServerFaultTest: the API server frozen for 20 s or down for 30 s is the fault under test"
  "test/extender/server/http_server_test.cc|kSlowerThanTheDrainTimeout|DrainTimeoutStopsWithARequestStillInFlight: a handler slower than drain_timeout is the case under test"
)
set -euo pipefail
src=${1:?usage: check_test_sleeps.sh SOURCE_DIR}
cd "$src"

pattern='(sleep_for|sleep_until|SleepFor|usleep|nanosleep|(^|[^A-Za-z0-9_])sleep)[[:space:]]*\('
status=0
declare -A used=()
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  ok=0
  for entry in "${allowed[@]}"; do
    IFS='|' read -r path token _ <<<"$entry"
    if [[ "$file" == "$path" && ( -z "$token" || "$text" == *"$token"* ) ]]; then
      ok=1
      used["$path|$token"]=1
    fi
  done
  if (( ! ok )); then
    echo "$file:$line: a sleep in a test (wait on an event, or poll with test/testing/eventually.h):$text" >&2
    status=1
  fi
done < <(grep -rnE --include='*.cc' --include='*.h' --include='*.c' --include='*.cpp' --include='*.hpp' \
           "$pattern" test/ | sort -t: -k1,1 -k2,2n || true)

for entry in "${allowed[@]}"; do
  IFS='|' read -r path token _ <<<"$entry"
  if [[ -z "${used["$path|$token"]:-}" ]]; then
    echo "scripts/check_test_sleeps.sh: the allow-list entry for $path${token:+ ($token)} matches no sleep: remove it" >&2
    status=1
  fi
done
(( status == 0 )) && echo "check_test_sleeps: no sleep in test/ outside the polling helper and the ${#allowed[@]} allowed"
exit $status
