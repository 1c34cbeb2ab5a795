"""torch.compile(backend="aotc") against backend="inductor" (and eager) on the CPU.

resnet18 (batch 1, 3x224x224) and a BERT-style encoder (batch 1, int64 token ids; plain
Linear / scaled_dot_product_attention / LayerNorm / GELU layers as in BERT, so that both
compilers see the same ops), at --threads threads (torch.set_num_threads; aotc's threads
option). One process; after a warm-up (compile + --warmup calls) each round times --iters
calls of every backend, in an order that alternates from round to round. Per-call time:
the median over all rounds' calls; spread: the lowest and highest of the rounds' medians.

    PYTHONPATH=python .venv/bin/python bench/bench_torch_compile.py [--rounds 3] [--iters 20]
        [--bert-base] [--inductor-freezing] [--cache-dir DIR]
"""
import argparse
import copy
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from importlib.metadata import entry_points

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
import common  # noqa: E402  (rel_l2)


class BertLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1 = nn.Linear(d, ffn)
        self.ff2 = nn.Linear(ffn, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, h):
        b, s, d = h.shape
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        h = self.ln1(h + self.out(a))
        return self.ln2(h + self.ff2(F.gelu(self.ff1(h))))


class Bert(nn.Module):
    def __init__(self, layers, d, heads, vocab=30522, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, 4 * d) for _ in range(layers))
        self.pool = nn.Linear(d, d)

    def forward(self, ids):
        h = self.ln(self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device)))
        for layer in self.layers:
            h = layer(h)
        return h, torch.tanh(self.pool(h[:, 0]))


def aotc_backend_ref():
    if "aotc" in {ep.name for ep in entry_points(group="torch_dynamo_backends")}:
        return "aotc"
    from aotc._dynamo import aotc_backend
    return aotc_backend


def inductor_freezing(gm, example_inputs):
    """inductor with torch._inductor.config.freezing: parameters folded in as constants, weights
    prepacked (as aotc does)."""
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(freezing=True):
        return compile_fx(gm, example_inputs)


def rel_l2(got, want):
    """The worst relative L2 error over the outputs (common.rel_l2 per tensor)."""
    if isinstance(want, (tuple, list)):
        return max(rel_l2(g, w) for g, w in zip(got, want))
    return common.rel_l2(got, want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20, help="timed calls per backend per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--bert-base", action="store_true", help="12 layers of d_model 768 (default: 4 of 256)")
    ap.add_argument("--inductor-freezing", action="store_true",
                    help="also time inductor with torch._inductor.config.freezing (weights as constants)")
    ap.add_argument("--models", default="resnet18,bert")
    ap.add_argument("--no-eager", action="store_true")
    ap.add_argument("--cache-dir", default=None,
                    help="aotc's cache (default: a temporary directory, removed at the end)")
    args = ap.parse_args()
    if args.rounds < 3:
        sys.exit("--rounds must be at least 3")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="aotc-bench-cache-")
    try:
        return run(args, cache_dir)
    finally:
        if args.cache_dir is None:
            shutil.rmtree(cache_dir, ignore_errors=True)


def run(args, cache_dir):
    aotc_backend = aotc_backend_ref()

    models = {}
    if "resnet18" in args.models:
        import torchvision
        models["resnet18 b1 3x224x224"] = (torchvision.models.resnet18(weights=None).eval(),
                                           (torch.randn(1, 3, 224, 224),))
    if "bert" in args.models:
        layers, d, heads = (12, 768, 12) if args.bert_base else (4, 256, 4)
        models[f"BERT {layers}x{d} b1 seq{args.seq}"] = (Bert(layers, d, heads).eval(),
                                                         (torch.randint(0, 30522, (1, args.seq)),))

    rows = []
    for title, (model, inputs) in models.items():
        with torch.no_grad():
            want = model(*inputs)
        runners = {}
        if not args.no_eager:
            runners["eager"] = model
        torch._dynamo.reset()
        runners["inductor"] = torch.compile(copy.deepcopy(model), backend="inductor")
        if args.inductor_freezing:
            # a backend of its own: dynamo would otherwise reuse the plain inductor graph
            runners["inductor+freezing"] = torch.compile(copy.deepcopy(model), backend=inductor_freezing)
        runners["aotc"] = torch.compile(copy.deepcopy(model), backend=aotc_backend,
                                        options={"threads": args.threads, "cache_dir": cache_dir})
        compile_s, errors = {}, {}
        for name, fn in list(runners.items()):
            start = time.perf_counter()
            with torch.no_grad():
                got = fn(*inputs)
            compile_s[name] = time.perf_counter() - start
            errors[name] = rel_l2(got, want)
            with torch.no_grad():
                for _ in range(args.warmup):
                    fn(*inputs)
            print(f"{title}: {name}: first call {compile_s[name]:.1f} s, relative L2 vs eager {errors[name]:.2g}",
                  flush=True)

        times = {name: [] for name in runners}
        round_medians = {name: [] for name in runners}
        names = list(runners)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                fn = runners[name]
                calls = []
                with torch.no_grad():
                    for _ in range(args.iters):
                        start = time.perf_counter()
                        fn(*inputs)
                        calls.append(time.perf_counter() - start)
                times[name] += calls
                round_medians[name].append(statistics.median(calls))
            print(f"{title}: round {r + 1}: " + ", ".join(f"{n} {round_medians[n][-1] * 1e3:.2f} ms" for n in order),
                  flush=True)
        for name in names:
            rows.append((title, name, statistics.median(times[name]) * 1e3, min(round_medians[name]) * 1e3,
                         max(round_medians[name]) * 1e3, compile_s[name], errors[name]))
        inductor_ms = statistics.median(times["inductor"]) * 1e3
        rows.append((title, "ratio aotc/inductor", statistics.median(times["aotc"]) * 1e3 / inductor_ms,
                     math.nan, math.nan, math.nan, math.nan))

    print()
    print(f"torch {torch.__version__}, {args.threads} threads, {args.rounds} rounds x {args.iters} calls "
          f"(alternating order), warm-up {args.warmup}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"| {'model':<26} | {'backend':<19} | {'median ms':>9} | {'round medians ms':>17} | "
          f"{'1st call s':>10} | {'rel L2':>7} |")
    print(f"|{'-' * 28}|{'-' * 21}|{'-' * 11}|{'-' * 19}|{'-' * 12}|{'-' * 9}|")
    for title, name, median, lo, hi, first, err in rows:
        if name.startswith("ratio"):
            print(f"| {title:<26} | {name:<19} | {median:>8.3f}x | {'':>17} | {'':>10} | {'':>7} |")
        else:
            print(f"| {title:<26} | {name:<19} | {median:>9.2f} | {lo:>7.2f} - {hi:>7.2f} | {first:>10.1f} | "
                  f"{err:>7.1g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
