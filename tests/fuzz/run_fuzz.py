#!/usr/bin/env python3
"""Runs one libFuzzer target for a fixed time and summarises the run.

Used by the meson tests in tests/fuzz/meson.build (20 s per target) and by
scripts/fuzz.sh (minutes per target). The fuzzer reads, in this order:
  WORK/corpus        the working corpus (new interesting inputs are written here only)
  SEEDS              the seed corpus, tests/fuzz/corpus/<target>/ (read only)
  REGRESSIONS        inputs that once crashed it, tests/fuzz/regressions/<target>/
All of them are executed first, so a regression that comes back fails at once.
A crash, leak, timeout or out-of-memory is written to WORK/artifacts/ and, with
--save-crashes, copied into REGRESSIONS too. The exit status is the fuzzer's (0: clean).
The last line is a summary: executions, executions per second, corpus size, findings.
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

ARTIFACT_PREFIXES = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


def merged_options(name, defaults):
    """defaults, overridden by whatever the caller's environment already sets."""
    given = os.environ.get(name, "")
    keys = {part.split("=", 1)[0] for part in given.split(":") if part}
    extra = [f"{k}={v}" for k, v in defaults.items() if k not in keys]
    return ":".join(filter(None, [":".join(extra), given]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skip", action="store_true", help="report SKIP (exit 77): the fuzzers were not built")
    p.add_argument("--fuzzer")
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--work")
    p.add_argument("--seeds")
    p.add_argument("--regressions")
    p.add_argument("--dict")
    p.add_argument("--save-crashes", action="store_true", help="copy new findings into --regressions")
    p.add_argument("--timeout", type=int, default=10, help="seconds one input may take (a hang)")
    p.add_argument("--rss-limit-mb", type=int, default=2048)
    args = p.parse_args()
    if args.skip:
        print("SKIP: clang++ cannot build libFuzzer targets here (see tests/fuzz/meson.build)")
        return 77
    if not (args.fuzzer and args.work):
        p.error("--fuzzer and --work are required")

    name = os.path.basename(args.fuzzer)
    corpus = os.path.join(args.work, "corpus")
    artifacts = os.path.join(args.work, "artifacts")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    for f in os.listdir(artifacts):  # findings of earlier runs: kept in REGRESSIONS or dropped
        os.remove(os.path.join(artifacts, f))

    cmd = [args.fuzzer, f"-max_total_time={args.seconds}", f"-timeout={args.timeout}",
           f"-rss_limit_mb={args.rss_limit_mb}", "-print_final_stats=1",
           f"-artifact_prefix={artifacts}{os.sep}"]
    if args.dict:
        cmd.append(f"-dict={args.dict}")
    cmd.append(corpus)
    for extra in (args.seeds, args.regressions):
        if extra and os.path.isdir(extra):
            cmd.append(extra)

    env = dict(os.environ)
    # Any report ends the run as a failure; leaks are reported (libFuzzer checks each input).
    env["ASAN_OPTIONS"] = merged_options("ASAN_OPTIONS", {
        "detect_leaks": "1", "halt_on_error": "1", "abort_on_error": "0", "symbolize": "1",
        "allocator_may_return_null": "0"})
    env["UBSAN_OPTIONS"] = merged_options("UBSAN_OPTIONS", {"halt_on_error": "1", "print_stacktrace": "1"})

    print("running:", " ".join(cmd), flush=True)
    start = time.monotonic()
    stats = {}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", env=env)
    for line in proc.stdout:
        sys.stdout.write(line)
        m = re.match(r"stat::(\w+):\s*(\d+)", line)
        if m:
            stats[m.group(1)] = int(m.group(2))
    rc = proc.wait()
    elapsed = time.monotonic() - start

    found = sorted(f for f in os.listdir(artifacts) if f.startswith(ARTIFACT_PREFIXES))
    # A finding with the contents of a kept regression input is that input failing again.
    known = {}
    if args.regressions and os.path.isdir(args.regressions):
        for f in os.listdir(args.regressions):
            with open(os.path.join(args.regressions, f), "rb") as data:
                known[hashlib.sha1(data.read()).hexdigest()] = os.path.join(args.regressions, f)
    saved, again = [], []
    for f in found:
        with open(os.path.join(artifacts, f), "rb") as data:
            digest = hashlib.sha1(data.read()).hexdigest()
        if digest in known:
            again.append(known[digest])
        elif args.save_crashes and args.regressions:
            os.makedirs(args.regressions, exist_ok=True)
            shutil.copy(os.path.join(artifacts, f), os.path.join(args.regressions, f))
            saved.append(os.path.join(args.regressions, f))

    execs = stats.get("number_of_executed_units", 0)
    rate = stats.get("average_exec_per_sec", 0)
    corpus_files = len(os.listdir(corpus))
    print(f"\n{name}: {execs} executions in {elapsed:.0f} s ({rate} exec/s), "
          f"{stats.get('new_units_added', 0)} new corpus units ({corpus_files} in the work corpus), "
          f"peak RSS {stats.get('peak_rss_mb', 0)} MB, exit status {rc}")
    for f in again:
        print(f"  a kept regression input fails: {f} (its bug is not fixed; reproduce with {args.fuzzer} {f})")
    if len(found) > len(again):
        for f in found:
            print(f"  finding: {os.path.join(artifacts, f)}")
        for f in saved:
            print(f"  saved as regression input: {f}")
        if not saved:
            print(f"  keep it: copy it into {args.regressions or 'tests/fuzz/regressions/' + name}/ "
                  f"and reproduce with: {args.fuzzer} FILE")
    print(f"RESULT {name} executions={execs} exec_per_sec={rate} seconds={elapsed:.0f} "
          f"findings={len(found) - len(again)} failing_regressions={len(again)} status={'FAIL' if rc else 'OK'}")
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
