"""Dynamic dims (aotc --dim) against static libraries: for each model and shape, the
library compiled for a range of sizes runs at that shape against the library compiled for
exactly that shape, in alternating rounds of aotc-run --bench (one process each, the same
threads); prints the median of the rounds' medians and their spread, and the compile times.

    python bench/bench_dynamic.py [--rounds 3] [--threads 2] [--models resnet50,bert_base]
    python bench/bench_dynamic.py --target cuda --iters 200     # on the GPU machine

Targets: dynamic time <= 1.10x static at each shape; dynamic compile time <=
2x the static one. Needs torchvision; compiles into --workdir (default /tmp/aotc-bench-dynamic)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_cpu import make_model  # noqa: E402

# model: (dynamic --input, its --dims, the shapes timed as (static --input, --shape))
CASES = {
    "resnet50": ("x:Nx3x224x224", ["N=1..64"],
                 [("x:1x3x224x224", "x=1x3x224x224"), ("x:8x3x224x224", "x=8x3x224x224")]),
    "bert_base": ("ids:BxS:int64", ["B=1..32", "S=1..512"],
                  [("ids:1x128:int64", "ids=1x128"), ("ids:8x128:int64", "ids=8x128")]),
}


def compile_model(aotc, pt, so, inputs, dims, target):
    command = [aotc, pt, "-o", so, "--target", target] + [a for i in inputs for a in ("--input", i)]
    command += [a for d in dims for a in ("--dim", d)]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def bench(aotc_run, so, shape, threads, iters):
    command = [aotc_run, so, "--bench", "--json", "--threads", str(threads), "--iters", str(iters)]
    if shape:
        command += ["--shape", shape]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build/compiler/aotc"))
    ap.add_argument("--aotc-run", default=os.path.join(ROOT, "build/tools/aotc-run/aotc-run"))
    ap.add_argument("--workdir", default="/tmp/aotc-bench-dynamic")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--models", default="resnet50,bert_base")
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        dyn_input, dims, shapes = CASES[name]
        model, example = make_model(name, 1)
        pt = os.path.join(args.workdir, name + ".pt")
        with torch.no_grad():
            torch.jit.trace(model, tuple(x for _, x in example), check_trace=False).save(pt)
        dyn_so = os.path.join(args.workdir, name + "_dynamic.so")
        t_dynamic = compile_model(args.aotc, pt, dyn_so, [dyn_input], dims, args.target)
        for static_input, shape in shapes:
            static_so = os.path.join(args.workdir, f"{name}_{shape.split('=')[1]}.so")
            t_static = compile_model(args.aotc, pt, static_so, [static_input], [], args.target)
            static_ms, dynamic_ms = [], []
            for _ in range(args.rounds):  # alternating: the machine's drift hits both alike
                static_ms.append(bench(args.aotc_run, static_so, None, args.threads, args.iters))
                dynamic_ms.append(bench(args.aotc_run, dyn_so, shape, args.threads, args.iters))
            ratios = [d / s for d, s in zip(dynamic_ms, static_ms)]
            rows.append((name, shape.split("=")[1], statistics.median(static_ms), statistics.median(dynamic_ms),
                         statistics.median(ratios), min(ratios), max(ratios), t_static, t_dynamic))
            print(f"{name} {shape}: static {static_ms} ms, dynamic {dynamic_ms} ms", flush=True)
    where = "CUDA" if args.target == "cuda" else f"{args.threads} threads"
    print(f"\n{args.rounds} alternating rounds of {args.iters} runs, {where}; medians of the rounds")
    print("| model | shape | static ms | dynamic ms | dynamic / static (min..max) | compile static s | "
          "compile dynamic s (ratio) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, shape, s, d, r, lo, hi, ts, td in rows:
        print(f"| {name} | {shape} | {s:.2f} | {d:.2f} | {r:.3f} ({lo:.3f}..{hi:.3f}) | {ts:.1f} | "
              f"{td:.1f} ({td / ts:.2f}x) |")


if __name__ == "__main__":
    main()
