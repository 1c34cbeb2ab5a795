#!/usr/bin/env bash
# Longer libFuzzer runs than the 20 s of the test suite (tests/fuzz/, docs/RELIABILITY.md).
#
#   scripts/fuzz.sh                      # every target, 10 minutes each
#   scripts/fuzz.sh -t 180 fuzz_npy      # one target, 3 minutes
#   scripts/fuzz.sh -b build-asan -t 60  # another build directory
#   scripts/fuzz.sh --merge-seeds        # afterwards, add inputs with new coverage to the seeds
#
# Targets run one after the other (the machine has few cores) over the same work corpus as
# the meson tests (BUILD/tests/fuzz/work/<target>/corpus), so it keeps what it found.
# A finding (crash, leak, hang, out-of-memory, broken invariant) stops that target; its
# input is copied into tests/fuzz/regressions/<target>/, where the meson tests replay it
# from then on. Commit it with the fix. Prints executions per second and total executions
# per target; exits 1 if anything was found.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-600}
build=build
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--seconds) seconds=$2; shift 2 ;;
    -b|--build) build=$2; shift 2 ;;
    --merge-seeds) merge=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_npy fuzz_abi_run)

if [ ! -f "$build/build.ninja" ]; then
  echo "fuzz.sh: $build is not configured; run scripts/setup.sh (or meson setup $build) first" >&2
  exit 2
fi
outputs=()
for t in "${targets[@]}"; do outputs+=("tests/fuzz/$t"); done
if ! ninja -C "$build" -j 2 "${outputs[@]}"; then
  echo "fuzz.sh: cannot build ${targets[*]} (is libclang-rt-14-dev installed? see tests/fuzz/meson.build)" >&2
  exit 2
fi

status=0
summary=()
for t in "${targets[@]}"; do
  dict=()
  [ -f "tests/fuzz/${t#fuzz_}.dict" ] && dict=(--dict "tests/fuzz/${t#fuzz_}.dict")
  echo "=== $t: $seconds s"
  log="$build/tests/fuzz/work/$t/fuzz.log"
  mkdir -p "$(dirname "$log")"
  # The full libFuzzer output goes to the log; progress lines are shown once a minute.
  python3 tests/fuzz/run_fuzz.py --fuzzer "$build/tests/fuzz/$t" --seconds "$seconds" \
    --work "$build/tests/fuzz/work/$t" --seeds "tests/fuzz/corpus/$t" \
    --regressions "tests/fuzz/regressions/$t" --save-crashes "${dict[@]}" > "$log" 2>&1 &
  pid=$!
  ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    ticks=$((ticks + 1))
    if [ $((ticks % 12)) = 0 ] && kill -0 "$pid" 2>/dev/null; then
      grep -aE '^#[0-9]+' "$log" | tail -1 | sed "s/^/  $t /"
    fi
  done
  wait "$pid" || status=1
  grep -aE '^(==[0-9]+==ERROR|SUMMARY|fuzz_[a-z_]+: invariant)' "$log" | head -5
  grep -aE "^($t: |  finding|  saved|  a kept)" "$log"
  summary+=("$(grep -a '^RESULT' "$log" | tail -1)")
  if [ "$merge" = 1 ]; then
    mkdir -p "tests/fuzz/corpus/$t"
    "$build/tests/fuzz/$t" -merge=1 "tests/fuzz/corpus/$t" "$build/tests/fuzz/work/$t/corpus" \
      > "$build/tests/fuzz/work/$t/merge.log" 2>&1 && grep -E 'MERGE-OUTER: [0-9]+ new files' "$build/tests/fuzz/work/$t/merge.log"
  fi
done

echo
echo "=== fuzz summary (log: $build/tests/fuzz/work/<target>/fuzz.log)"
for line in "${summary[@]}"; do echo "$line"; done
[ $status = 0 ] && echo "no findings" || echo "FAILED: see above; new findings are saved under tests/fuzz/regressions/ (fix the bug, keep the input)"
exit $status
