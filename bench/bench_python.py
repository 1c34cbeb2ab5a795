"""What aotc.load costs on top of the C ABI, and whether Python threads run in parallel.

(a) Per-call overhead: a small MLP (64 -> 256 -> 256 -> 10, batch 1), where the run itself
    takes microseconds and the call's overhead dominates. Each round times `aotc-run MODEL.so
    --bench` (C++, one context, each run timed alone) and then `model(x)` from Python the
    same way (numpy, then torch inputs), threads=1 both; the rounds alternate so that a
    noisy neighbour hits both sides alike. Reported: the medians of each round and the
    overhead (Python median - aotc-run median), as a median with its min..max over rounds.
    The TorchScript backend's execute is timed the same way: the same MLP lowered with
    aotc.to_backend (threads=1), called with a torch tensor. Its library is built from the
    same module by the same compiler, so it is the same code (aotc's builds are reproducible).
(b) Two Python threads sharing one Model (one context each, threads=1) against one thread,
    on a compute-bound conv net: calls per second, and their ratio, per round. ctypes
    releases the GIL during aotc_run, so on two free cores the ratio nears 2.

usage: PYTHONPATH=python .venv/bin/python bench/bench_python.py [--workdir DIR] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch

import aotc
from aotc import _paths


class SmallMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 256)
        self.b = torch.nn.Linear(256, 256)
        self.c = torch.nn.Linear(256, 10)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.c3 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))))
        return self.fc(x.mean(dim=(2, 3)))


def compile_model(module, workdir, name, spec):
    pt = os.path.join(workdir, name + ".pt")
    so = os.path.join(workdir, name + ".so")
    if not os.path.exists(so):
        torch.manual_seed(0)
        torch.jit.save(torch.jit.script(module.eval()), pt)
        subprocess.run([_paths.aotc_executable(), pt, "-o", so, "--input", spec], check=True)
    return so


def aotc_run_median_us(so, iters):
    out = subprocess.run([_paths.aotc_run_executable(), so, "--bench", "--json", "--threads", "1",
                          "--iters", str(iters), "--warmup", str(iters // 10)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["median_ms"] * 1e3


def python_median_us(model, x, iters):
    """Each call timed alone, as aotc-run times each run."""
    clock = time.perf_counter_ns
    for _ in range(iters // 10):
        model(x)
    times = [0] * iters
    for i in range(iters):
        start = clock()
        model(x)
        times[i] = clock() - start
    return statistics.median(times) / 1e3


def calls_per_second(model, x, n_threads, seconds):
    counts = [0] * n_threads
    stop = threading.Event()
    start = threading.Barrier(n_threads + 1)

    def worker(k):
        model(x)  # creates this thread's context outside the timed part
        start.wait()
        n = 0
        while not stop.is_set():
            model(x)
            n += 1
        counts[k] = n

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    start.wait()
    begin = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - begin)


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "aotc_bench_python"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20000, help="timed calls per side and round for (a)")
    ap.add_argument("--seconds", type=float, default=1.5, help="per configuration and round for (b)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)

    mlp_so = compile_model(SmallMlp(), args.workdir, "small_mlp", "x:1x64")
    conv_so = compile_model(ConvNet(), args.workdir, "convnet", "x:1x3x64x64")

    # (a) per-call overhead
    mlp = aotc.load(mlp_so, threads=1)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 64)).astype(np.float32)
    xt = torch.from_numpy(x.copy())
    torch.manual_seed(0)
    lowered = aotc.to_backend(torch.jit.script(SmallMlp().eval()), {"forward": ["x:1x64"]}, threads=1)
    c_us, np_us, torch_us, backend_us = [], [], [], []
    with torch.no_grad():
        for _ in range(args.rounds):
            c_us.append(aotc_run_median_us(mlp_so, args.iters))
            np_us.append(python_median_us(mlp, x, args.iters))
            torch_us.append(python_median_us(mlp, xt, args.iters))
            backend_us.append(python_median_us(lowered, xt, args.iters))
    print(f"(a) per call, small MLP 64-256-256-10 batch 1, threads=1, {args.rounds} rounds of {args.iters} calls;"
          " median (min..max) over rounds, us")
    print(f"    {'aotc-run --bench median':32s} {spread(c_us)}")
    print(f"    {'aotc.load(...)(x), numpy':32s} {spread(np_us)}   overhead "
          f"{spread([p - c for p, c in zip(np_us, c_us)])}")
    print(f"    {'aotc.load(...)(x), torch':32s} {spread(torch_us)}   overhead "
          f"{spread([p - c for p, c in zip(torch_us, c_us)])}")
    print(f"    {'to_backend module(x), torch':32s} {spread(backend_us)}   overhead "
          f"{spread([p - c for p, c in zip(backend_us, c_us)])}")
    mlp.close()

    # (b) two Python threads against one
    conv = aotc.load(conv_so, threads=1)
    xc = np.random.default_rng(1).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    one, two = [], []
    for _ in range(args.rounds):
        one.append(calls_per_second(conv, xc, 1, args.seconds))
        two.append(calls_per_second(conv, xc, 2, args.seconds))
    ratios = [b / a for a, b in zip(one, two)]
    print(f"(b) conv net 1x3x64x64, one context per thread with threads=1, {args.rounds} rounds of "
          f"{args.seconds:g} s; {os.cpu_count()} CPUs")
    print(f"    {'1 thread, calls/s':32s} {spread(one, '{:.0f}')}")
    print(f"    {'2 threads, calls/s':32s} {spread(two, '{:.0f}')}")
    print(f"    {'ratio 2 threads / 1':32s} {spread(ratios)}")
    conv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
