#!/usr/bin/env bash
# README command (b): set up a fresh machine, build, run every test suite, and end with
# one line "N passed, M failed" (counting meson tests; each doctest binary is one test).
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
start=$(date +%s)
meson test -C build --print-errorlogs --num-processes 2 "$@"
status=$?
python3 - "$status" "$(( $(date +%s) - start ))" <<'PY'
import json, sys
status, seconds = int(sys.argv[1]), sys.argv[2]
passed = failed = skipped = 0
with open("build/meson-logs/testlog.json") as f:
    for line in f:
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
if status != 0 and failed == 0:
    failed = 1  # meson itself failed (e.g. a build error before any test ran)
print(f"test time: {seconds} s")
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
PY
