"""End-to-end check of one test model: torch makes the TorchScript file and the expected
outputs; aotc compiles it; aotc-run (no LibTorch) runs the .so; outputs must match torch
within a relative L2 error of 1e-4, and the .so must not need LibTorch.

Cross targets: --target-triple aarch64-linux-gnu builds the .so for 64-bit Arm, and
--emulator "qemu-aarch64 -L /usr/aarch64-linux-gnu" runs the aarch64 aotc-run (given with
--aotc-run) under qemu-user; torch's outputs are still computed on this machine. The test
skips (exit status 77) when the emulator, a --require'd file or the cross build is missing."""
import os
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (GLIBC_LIBRARIES, SKIP, TOLERANCE, arg_parser, flatten, needed_libraries, read_outputs,  # noqa: E402
                    rel_l2, run_aotc, run_aotc_run, write_inputs)
from models import MODELS  # noqa: E402
from models_quantized import (MODELS_QUANTIZED, MODELS_QUANTIZED_DYNAMIC, QUANTIZED_STEP_BOUND,  # noqa: E402
                              aotc_engine_args)

ELF_MACHINES = {"aarch64-linux-gnu": "AArch64"}  # readelf -h "Machine:" for --target-triple


def quantization_step(values):
    """The scale of a dequantized tensor: every value is (q - zero) * scale, so the smallest
    gap between distinct values is the scale (or a multiple, for sparse values)."""
    levels = np.unique(values.astype(np.float64))
    gaps = np.diff(levels)
    return float(gaps.min()) if gaps.size else 1.0


def quantized_output_matches(i, got, want):
    """A dequantized output against torch's, in quantization steps (QUANTIZED_STEP_BOUND)."""
    step = quantization_step(want)
    steps = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    off = int(np.count_nonzero(steps > 1e-3))
    fraction = off / max(want.size, 1)
    worst = float(steps.max()) if steps.size else 0.0
    ok = worst <= 1.001 and fraction <= QUANTIZED_STEP_BOUND
    print(f"  output {i} {list(want.shape)}: {off} of {want.size} values differ (at most "
          f"{QUANTIZED_STEP_BOUND:.1%} allowed), by at most {worst:.3f} steps of {step:.4g} "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def host_has_avx512():
    """What aotc's host_runs_avx512_kernels() checks: AVX-512 F and VL, and AOTC_CPU_AVX512 not 0."""
    if os.environ.get("AOTC_CPU_AVX512") == "0":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512f" in flags and "avx512vl" in flags


def main():
    ap = arg_parser(aotc_run=True)
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--target-triple", default="", help="passed to aotc; default: the host")
    ap.add_argument("--emulator", default="", help="command prefix that runs --aotc-run, e.g. qemu-aarch64 -L DIR")
    ap.add_argument("--require", action="append", default=[], help="skip unless this file exists")
    ap.add_argument("--cross-status", default="", help="status file of tests/e2e/refresh_cross_build.py")
    ap.add_argument("--cpu-threads", type=int, default=0,
                    help="compile with aotc --cpu-threads N and run on N threads (default: aotc's default, 1 thread)")
    ap.add_argument("--expect-pointwise-rows", choices=["yes", "no"], default="",
                    help="fail unless the emitted source does (yes) or does not (no) run the positions-as-rows "
                         "kernel; yes is checked only on hosts with AVX-512 (no other build takes it)")
    args = ap.parse_args()

    if args.cross_status:
        status = open(args.cross_status).read() if os.path.exists(args.cross_status) else "missing"
        if status.startswith("failed"):
            print(status)
            print(f"FAIL {args.model}: the {args.target_triple} cross build failed")
            return 1
        if status != "ok":
            print(f"SKIP {args.model}: no {args.target_triple or 'cross'} build (scripts/setup.sh configures it)")
            return SKIP
    for path in args.require:
        if not os.path.exists(path):
            print(f"SKIP {args.model}: {path} does not exist (scripts/setup.sh builds it)")
            return SKIP
    emulator = shlex.split(args.emulator)
    if emulator and not shutil.which(emulator[0]):
        print(f"SKIP {args.model}: {emulator[0]} is not installed (Debian package qemu-user)")
        return SKIP

    work = os.path.join(args.workdir, args.model + (f"_cpu_threads_{args.cpu_threads}" if args.cpu_threads else "")
                        + (f"_rows_{args.expect_pointwise_rows}" if args.expect_pointwise_rows else ""))
    os.makedirs(work, exist_ok=True)
    module, inputs = MODELS[args.model]()
    pt = os.path.join(work, "model.pt")
    torch.jit.save(module, pt)
    loaded = torch.jit.load(pt)
    with torch.no_grad():
        expected = flatten(loaded(*[t for _, t in inputs]), [])

    so = os.path.join(work, "model.so")
    if os.path.exists(so):
        os.remove(so)
    extra = ["-v"] + (["--target-triple", args.target_triple] if args.target_triple else [])
    if args.cpu_threads:
        extra += ["--cpu-threads", str(args.cpu_threads)]
    if args.expect_pointwise_rows:
        extra += ["--emit-source", os.path.join(work, "src")]
    if args.model in MODELS_QUANTIZED or args.model in MODELS_QUANTIZED_DYNAMIC:  # the engine torch ran
        extra += aotc_engine_args()
    start = time.monotonic()
    result = run_aotc(args.aotc, pt, so, inputs, extra=extra)
    compile_s = time.monotonic() - start
    if result.returncode != 0:
        print(result.stderr[-6000:])
        print(f"FAIL {args.model}: aotc exited with {result.returncode}")
        return 1
    if args.expect_pointwise_rows:
        with open(os.path.join(work, "src", "model.cpp")) as f:
            has_rows = "conv2d_pointwise_rows_f32" in f.read()
        want_rows = args.expect_pointwise_rows == "yes" and host_has_avx512()
        if has_rows != want_rows:
            print(f"FAIL {args.model}: the source {'runs' if has_rows else 'does not run'} the positions-as-rows kernel "
                  f"(expected {'it' if want_rows else 'the implicit GEMM'}; AOTC_CPU_POINTWISE_ROWS="
                  f"{os.environ.get('AOTC_CPU_POINTWISE_ROWS', 'unset')}, --cpu-threads {args.cpu_threads})")
            return 1
    plan = [line for line in result.stderr.splitlines() if "arena" in line and "lower bound" in line]
    target = f" for {args.target_triple}" if args.target_triple else ""
    print(f"{args.model}: compiled in {compile_s:.2f} s{target}; {plan[0] if plan else ''}")
    if args.target_triple in ELF_MACHINES:
        header = subprocess.run(["readelf", "-h", so], capture_output=True, text=True, check=True).stdout
        machine = next((line.split(":", 1)[1].strip() for line in header.splitlines() if "Machine:" in line), "")
        if machine != ELF_MACHINES[args.target_triple]:
            print(f"FAIL {args.model}: the .so is for '{machine}', not {args.target_triple}")
            return 1

    # A model .so needs only glibc and the loader: no LibTorch, and not even libstdc++.
    bad = [lib for lib in needed_libraries(so) if lib not in GLIBC_LIBRARIES]
    if bad:
        print(f"FAIL {args.model}: the .so needs {bad} (allowed: glibc and the loader only)")
        return 1

    run_args = ["--output-dir", os.path.join(work, "out")] + write_inputs(inputs, work)
    if args.cpu_threads:
        run_args += ["--threads", str(args.cpu_threads)]
    start = time.monotonic()
    result = run_aotc_run(args.aotc_run, so, *run_args, emulator=emulator)
    run_s = time.monotonic() - start
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        print(f"FAIL {args.model}: aotc-run exited with {result.returncode}")
        return 1
    print(f"{args.model}: ran in {run_s:.2f} s{' under ' + emulator[0] if emulator else ''}")

    failed = False
    for i, (got, want) in enumerate(zip(read_outputs(os.path.join(work, "out"), len(expected)), expected)):
        want = want.detach().numpy()
        if got.shape != want.shape:
            print(f"FAIL {args.model}: output {i} has shape {got.shape}, torch gives {want.shape}")
            failed = True
            continue
        if got.dtype != want.dtype:
            print(f"FAIL {args.model}: output {i} has dtype {got.dtype}, torch gives {want.dtype}")
            failed = True
            continue
        if want.dtype.kind in "biu":  # integer and bool outputs must match exactly
            mismatches = int(np.count_nonzero(got != want))
            status = "ok" if mismatches == 0 else "FAIL"
            failed |= mismatches != 0
            print(f"  output {i} {list(want.shape)} {want.dtype}: {mismatches} elements differ {status}")
            continue
        if args.model in MODELS_QUANTIZED:
            failed |= not quantized_output_matches(i, got, want)
            continue
        err = rel_l2(got, want)
        status = "ok" if err <= TOLERANCE else "FAIL"
        failed |= not err <= TOLERANCE
        print(f"  output {i} {list(want.shape)}: relative L2 error {err:.3e} {status}")
    print(("FAIL " if failed else "PASS ") + args.model)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
