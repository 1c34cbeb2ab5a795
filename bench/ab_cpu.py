"""A/B of two aotc builds of the same model on the CPU, in one process: single runs
alternate (A B, then B A, ...) so that both see the same machine state, which on a shared
machine drifts by tens of percent within minutes. Prints each build's median and the
median of the per-pair ratios B/A, and checks first that both give the same outputs.

    .venv/bin/python bench/ab_cpu.py before.so after.so --input 1x3x224x224 --threads 2 --pairs 200

With many threads, a build's pool keeps polling for a while after its run (runtime/src/
thread_pool.cpp) and would slow the other build's next run: --block N --settle-ms T times
turns of N runs each (the first of a turn untimed), with a pause of T ms before each turn;
a pair's ratio is then the ratio of its two turns' medians.

Inputs are random with a fixed seed, one --input per model argument, in order: DIMS for
float32 in [-1, 1), DIMS:int64 for token ids in [0, 1000) (BERT's ids).
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import AotcModel, rel_l2  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="the first build (A)")
    ap.add_argument("b", help="the second build (B)")
    ap.add_argument("--input", action="append", required=True, help="DIMS[:int64], e.g. 1x3x224x224 or 1x128:int64")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--block", type=int, default=1, help="runs per turn (the first untimed when more than 1)")
    ap.add_argument("--settle-ms", type=float, default=0.0, help="pause before each turn")
    args = ap.parse_args()

    torch.manual_seed(0)
    inputs = []
    for spec in args.input:
        dims, _, dtype = spec.partition(":")
        shape = [int(d) for d in dims.split("x")]
        if dtype == "int64":
            inputs.append(torch.randint(0, 1000, shape, dtype=torch.int64))
        elif dtype in ("", "float32"):
            inputs.append(torch.rand(shape) * 2 - 1)
        else:
            sys.exit(f"ab_cpu.py: --input {spec}: the dtype is float32 (default) or int64")
    a = AotcModel(os.path.abspath(args.a), inputs, args.threads)
    b = AotcModel(os.path.abspath(args.b), inputs, args.threads)
    for i, (out_a, out_b) in enumerate(zip(a.run(), b.run())):
        print(f"output {i}: relative L2 difference B vs A {rel_l2(out_b, out_a):.3g}")
    for _ in range(args.warmup):
        a.run()
        b.run()

    def timed(model):
        """One turn: --block runs after a --settle-ms pause; the median of the timed ones."""
        if args.settle_ms > 0:
            time.sleep(args.settle_ms / 1e3)
        times = []
        for i in range(args.block):
            start = time.perf_counter()
            model.run()
            if i > 0 or args.block == 1:
                times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    times_a, times_b = [], []
    for pair in range(args.pairs):
        if pair % 2 == 0:
            ta = timed(a)
            tb = timed(b)
        else:
            tb = timed(b)
            ta = timed(a)
        times_a.append(ta)
        times_b.append(tb)
    ratios = sorted(tb / ta for ta, tb in zip(times_a, times_b))
    q = len(ratios) // 4
    print(f"{args.pairs} pairs, {args.threads} threads" + (f", turns of {args.block} runs" if args.block > 1 else ""))
    print(f"A {args.a}: median {statistics.median(times_a):.3f} ms")
    print(f"B {args.b}: median {statistics.median(times_b):.3f} ms")
    print(f"B/A per pair: median {statistics.median(ratios):.3f} (quartiles {ratios[q]:.3f}, {ratios[-q - 1]:.3f}); "
          f"B faster in {sum(r < 1 for r in ratios)} of {len(ratios)} pairs")
    a.close()
    b.close()


if __name__ == "__main__":
    main()
