#!/usr/bin/env bash
# Builds everything with clang + AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs the unit and e2e suites there; any sanitizer report fails the run.
# See docs/RELIABILITY.md.
#
#   scripts/sanitize.sh                  # configure (first time), build, test, summary
#   scripts/sanitize.sh --suite unit     # arguments replace the default '--suite unit --suite e2e'
#   SANITIZE_BUILD=/tmp/asan scripts/sanitize.sh
#   SANITIZERS=thread scripts/sanitize.sh concurrency   # ThreadSanitizer, in build-tsan/
#
# What is sanitized: the runtime, aotc-run, the fixture model, the doctest binaries, the
# libFuzzer targets, aotc itself, and every model .so that aotc compiles during the e2e
# tests (-Dmodel_sanitize puts -fsanitize=... into the generated build.ninja). Everything
# is built by clang, because one process cannot hold GCC's and clang's sanitizer runtimes.
# LibTorch (GCC-built, in aotc) is not instrumented, but aotc's own code is, and ASan's
# allocator and leak checker cover LibTorch's memory too. The Python test drivers (which
# import torch) are not sanitized; they run aotc and aotc-run as subprocesses.
#
# The sanitizer runtime is linked as a shared library (-shared-libasan, found through an
# rpath): the fixture model is linked with -z defs (tests/abi/meson.build), which the
# static runtime's undefined __asan_* symbols would fail. Generated models are linked
# without it; their __asan_* symbols resolve to the runtime of the program that loads them.
#
# Reports: ASan and UBSan halt the process at the first report (exit status 86) and write
# it to BUILD/sanitizer-logs/report.<pid> instead of stderr. A test that expects a
# non-zero exit (bad input to aotc-run, say) could mistake a report for the expected
# failure, so the run fails when that directory holds any report, whatever the tests
# said; the reports are printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."

sanitizers=${SANITIZERS:-address,undefined}
if [ "$sanitizers" = thread ]; then
  build=${SANITIZE_BUILD:-build-tsan}
  rtlib=libclang_rt.tsan-x86_64.a
  link_args="[]"  # TSan's runtime is static in executables; models resolve __tsan_* to it
else
  build=${SANITIZE_BUILD:-build-asan}
  rtlib=libclang_rt.asan-x86_64.so
fi
[ -d .venv/bin ] && export PATH="$PWD/.venv/bin:$PATH"

for tool in clang clang++ meson ninja; do
  command -v "$tool" > /dev/null || { echo "sanitize.sh: $tool not found (run scripts/setup.sh)" >&2; exit 2; }
done
rtdir=$(clang++ -print-runtime-dir)
[ "$sanitizers" = thread ] || link_args="['-shared-libasan','-Wl,-rpath,$rtdir']"
if [ ! -f "$rtdir/$rtlib" ]; then
  echo "sanitize.sh: no $rtlib in $rtdir (install libclang-rt-14-dev)" >&2
  exit 2
fi

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  # debugoptimized: -O2 -g, asserts on. werror off: clang warns about things g++ does not,
  # and this build is for finding run-time bugs (the g++ build keeps -Werror). No CUDA: nvcc
  # links its test programs against the sanitized runtime without clang's sanitizer
  # runtime (undefined __asan_* symbols), and CUDA code runs only on the GPU machine.
  CC=clang CXX=clang++ meson setup "$build" -Dwith_cuda=disabled \
    -Db_sanitize=$sanitizers -Db_lundef=false -Dmodel_sanitize=$sanitizers \
    -Dbuildtype=debugoptimized -Dwerror=false \
    "-Dc_link_args=$link_args" "-Dcpp_link_args=$link_args" || exit 1
fi
ninja -C "$build" -j "${SANITIZE_JOBS:-2}" || { echo "sanitize.sh: build failed"; echo "0 passed, 1 failed"; exit 1; }
built=$(date +%s)

logs="$PWD/$build/sanitizer-logs"
[ "${build:0:1}" = / ] && logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
# halt_on_error: the first report ends the process (UBSan too: it would go on otherwise).
# detect_leaks: LeakSanitizer at exit. log_path: reports also go to files (see above).
# ASan's exit code 86 is not one any of our tools uses for its own errors.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=86:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:detect_odr_violation=2:symbolize=1:log_path=$logs/report"
# second_deadlock_stack: both stacks of a lock-order report. TSan ends with exit code 66.
export TSAN_OPTIONS="halt_on_error=1:exitcode=86:second_deadlock_stack=1:log_path=$logs/report"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86:log_path=$logs/report"
# Tells tests that something differs under ASan (tests/e2e/test_hostile_files.py: no ulimit -v).
export AOTC_SANITIZER=$sanitizers
# Leaks inside LibTorch's own static state (kernel registries, thread pools) that aotc
# cannot free are suppressed there, and only there; leaks in our code still fail.
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0"
suites=(--suite unit --suite e2e)
[ $# -gt 0 ] && suites=("$@")
meson test -C "$build" --num-processes 2 --timeout-multiplier 3 --print-errorlogs "${suites[@]}"
status=$?
end=$(date +%s)

python3 - "$status" "$build" "$logs" "$((built - start))" "$((end - built))" <<'PY'
import json, os, sys
status, build, logs, build_s, test_s = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
passed = failed = skipped = 0
failures = []
with open(os.path.join(build, "meson-logs", "testlog.json")) as f:
    for line in f:
        r = json.loads(line)
        if r["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r["result"] == "SKIP":
            skipped += 1
        else:
            failed += 1
            failures.append(f'{r["name"]} ({r["result"]})')
reports = sorted(os.listdir(logs)) if os.path.isdir(logs) else []
for name in reports:
    print(f"\n==== sanitizer report {os.path.join(logs, name)}")
    with open(os.path.join(logs, name), errors="replace") as f:
        print(f.read()[-6000:])
if status != 0 and failed == 0:
    failed = 1
    failures.append("meson test itself")
print(f"\nsanitizers: {os.environ.get('AOTC_SANITIZER')} (clang); build {build_s} s, tests {test_s} s")
if failures:
    print("failed: " + ", ".join(failures))
print(f"sanitizer reports: {len(reports)}")
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed or reports else 0)
PY
