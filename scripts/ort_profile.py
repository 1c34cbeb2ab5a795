#!/usr/bin/env python3
"""Per-node timings of ONNX Runtime on the CPU, named as scripts/op_profile.py names aotc's
ops, so that the two lists can be read side by side: where a peer is faster, layer by layer.

Runs the model with ORT's own profiler (SessionOptions.enable_profiling, CPU provider,
intra-op threads set), and prints each node's median kernel time per run (ms) in graph
order, a convolution named by its shapes ("conv2d 64>256 1x1/1 -> 56x56", as op_profile
prints it; the NCHWc reorder nodes ORT inserts keep their own names), and the totals per
kind ("conv2d 1x1 stride 1", "conv2d 3x3 stride 2", ...).

    scripts/ort_profile.py build/bench/resnet50_b1.onnx --threads 1 --runs 30
    scripts/op_profile.py build/bench/resnet50_b1.pt --input x:1x3x224x224 --threads 1 --top 0

Needs onnxruntime (bench/run.sh installs it into .venv). Run the two one after
the other on a quiet machine and compare per kind: each list is at the mercy of the
machine's drift, so compare ratios between kinds, not one absolute time with another.
"""
import argparse
import collections
import glob
import json
import os
import sys
import tempfile

import numpy as np


def describe(op, args):
    """(name, kind) of one node from its profile record: a convolution by its shapes (the
    weight is its second input; the stride from the planes, as ORT's records give shapes,
    not attributes), anything else by its operator."""
    ins = [next(iter(t.values())) for t in args.get("input_type_shape", [])]
    outs = [next(iter(t.values())) for t in args.get("output_type_shape", [])]
    if op in ("Conv", "FusedConv") and len(ins) >= 2 and len(ins[0]) == 4 and len(ins[1]) == 4 and outs:
        x, w, y = ins[0], ins[1], outs[0]
        c_in, c_out, kh, kw = x[1], w[0], w[2], w[3]
        stride = max(1, round(x[2] / y[2])) if y[2] else 1
        name = f"conv2d {c_in}>{c_out} {kh}x{kw}/{stride} -> {y[2]}x{y[3]}"
        groups = c_in // w[1] if w[1] else 1
        if groups > 1 and groups == c_in == c_out:
            return name + " depthwise", "conv2d depthwise"
        if groups > 1:
            return name + f" g{groups}", f"conv2d g{groups}"
        return name, f"conv2d {kh}x{kw} stride {stride}"
    return op, op


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import onnxruntime as ort

    workdir = tempfile.mkdtemp(prefix="aotc_ort_profile_")
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(workdir, "ort")
    session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for i in session.get_inputs():
        dims = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 100, size=dims).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(dims).astype(np.float32)
    for _ in range(args.warmup):
        session.run(None, feeds)
    session.end_profiling()  # the warm-up runs go to a file of their own, not read
    session = None
    so.profile_file_prefix = os.path.join(workdir, "timed")
    session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    for _ in range(args.warmup):
        session.run(None, feeds)
    for _ in range(args.runs):
        session.run(None, feeds)
    events = json.load(open(session.end_profiling()))
    times, order = collections.defaultdict(list), []
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        node = e["name"][: -len("_kernel_time")]
        if node not in times:
            order.append((node, describe(e["args"].get("op_name", "?"), e["args"])))
        times[node].append(e["dur"] / 1000.0)
    for f in glob.glob(os.path.join(workdir, "*.json")):
        os.remove(f)
    os.rmdir(workdir)
    rows, kinds = [], collections.defaultdict(lambda: [0, 0.0])
    for node, (name, kind) in order:
        t = times[node][-args.runs :]  # the timed runs (the session's warm-up runs come first)
        ms = float(np.median(t))
        rows.append((ms, name))
        kinds[kind][0] += 1
        kinds[kind][1] += ms
    total = sum(ms for ms, _ in rows)
    print(f"{args.model}: ONNX Runtime {ort.__version__}, {args.threads} threads, median of {args.runs} runs")
    print(f"{len(rows)} nodes, {total:.3f} ms per run in node kernels\n")
    print(f"{'node':>5} {'ms':>9} {'share':>7}  name")
    for i, (ms, name) in enumerate(rows):
        print(f"{i:5d} {ms:9.3f} {100 * ms / total:6.1f}%  {name}")
    print(f"\n{'kind':32s} {'nodes':>5} {'ms':>9} {'share':>7}")
    for kind, (count, ms) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"{kind:32s} {count:5d} {ms:9.3f} {100 * ms / total:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
