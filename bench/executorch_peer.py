"""ExecuTorch with XNNPACK, the edge peer of bench/bench_cpu.py. Run it with the python of its own
venv (torch 2.15: ExecuTorch's bindings link that libtorch and fail against .venv's 2.11; bench/run.sh
--with-executorch makes the venv, /work/shared/PEERS.md has the pip lines).

It builds the model as bench_cpu.py does (same code; with --state, the very weights bench_cpu.py
timed), lowers it (torch.export -> to_edge_transform_and_lower with XnnpackPartitioner -> .pte),
sets ExecuTorch's threadpool to --threads and times Method.execute with bench_cpu.py's scheme:
--warmup untimed runs, then per round one untimed run (wakes the pool) and --per-round timed runs.

    build/venv-executorch/bin/python bench/executorch_peer.py --model resnet18 --threads 2

prints one JSON line with each round's times (ms) and their median. With --serve (how
bench_cpu.py runs it) it warms up, prints {"ready": ...} and then times one round per line read
from stdin, answering each with {"ms": [...]}: one process per configuration, kept warm like the
in-process runtimes, so that bench_cpu.py's rounds alternate it with the others.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import make_model  # noqa: E402  (the same models, torch 2.15 or 2.11)


def export_pte(model, inputs, path):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    with torch.no_grad():
        ep = torch.export.export(model, tuple(inputs))
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    with open(path + ".tmp", "wb") as f:
        f.write(program.buffer)
    os.replace(path + ".tmp", path)  # never leave a half-written .pte for the next process


def time_round(method, inputs, per_round):
    method.execute(inputs)  # untimed: wakes the threadpool after the other runtimes ran
    times = []
    for _ in range(per_round):
        start = time.perf_counter()
        method.execute(inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=4)
    ap.add_argument("--pte", default="", help="the .pte to run; exported first when it does not exist")
    ap.add_argument("--state", default="", help="state_dict saved by bench_cpu.py (torch.save)")
    ap.add_argument("--input", default="", help=".npy input (bench_cpu.py's); default make_model's")
    ap.add_argument("--output", default="", help="write the first output here (.npy), for the check")
    ap.add_argument("--serve", action="store_true", help="time one round per line read from stdin")
    args = ap.parse_args()

    from executorch.extension.pybindings.portable_lib import _unsafe_reset_threadpool
    from executorch.runtime import Runtime

    model, named = make_model(args.model, args.batch)
    if args.state:
        model.load_state_dict(torch.load(args.state))
    inputs = [torch.from_numpy(np.load(args.input))] if args.input else [t for _, t in named]
    pte = args.pte or os.path.join("/tmp", f"executorch_{args.model}_b{args.batch}.pte")
    if not os.path.exists(pte):
        start = time.perf_counter()
        export_pte(model, inputs, pte)
        print(f"exported {pte} in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)

    _unsafe_reset_threadpool(args.threads)
    method = Runtime.get().load_program(pte).load_method("forward")
    out = method.execute(inputs)
    if args.output:
        np.save(args.output, out[0].numpy())
    for _ in range(args.warmup):
        method.execute(inputs)

    if args.serve:
        print(json.dumps({"ready": True, "torch": torch.__version__}), flush=True)
        for _ in sys.stdin:
            print(json.dumps({"ms": time_round(method, inputs, args.per_round)}), flush=True)
        return
    rounds = [time_round(method, inputs, args.per_round) for _ in range(args.rounds)]
    print(json.dumps({"model": args.model, "batch": args.batch, "threads": args.threads, "rounds": rounds,
                      "median_ms": statistics.median(t for r in rounds for t in r)}))


if __name__ == "__main__":
    main()
