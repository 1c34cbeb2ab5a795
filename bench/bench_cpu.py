"""CPU benchmark: aotc against LibTorch and ONNX Runtime, in one process, on this machine.

For each model, batch size and thread count it times the three runtimes in rounds: each
round gives every runtime one untimed run and then --per-round timed runs, so that the
three see the same machine state (these machines are noisy); a pause (--settle-ms) before
each turn lets the last runtime's idle worker threads stop spinning, so that they do not
share the cores with the one being timed. It prints a table of medians and p90s, the
ratios aotc/peer, the achieved GFLOP/s of each runtime against the machine's sgemm peak
measured in the same run (at its start, and again in each row's rounds), aotc's arena
against its liveness lower bound, aotc's compile time, and the peak RSS of aotc-run vs a
LibTorch process running the same model alone.

    bench/run.sh                                   # installs onnxruntime, runs everything
    bench/run.sh --models resnet18 --batches 1 --threads 2 --rounds 4

The peers:
  - LibTorch 2.11: the TorchScript module through torch.jit.freeze and
    torch.jit.optimize_for_inference, torch.set_num_threads(N);
  - ONNX Runtime: torch.onnx.export (the TorchScript-based exporter), CPU provider,
    intra_op_num_threads=N, inter_op_num_threads=1, sequential execution;
  - aotc: the .so loaded with ctypes, called through its C ABI, one context with N threads.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from common import rel_l2  # noqa: E402,F401  (ab_cpu.py and model_sweep.py take it from here)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- models ------------------------------------------------------------------------------

class BertLikeEncoder(nn.Module):
    """BERT-base-like encoder: token and position embeddings, LayerNorm, 12 post-norm
    transformer layers (hidden 768, 12 heads, FFN 3072, GELU). Input: int64 ids [B, S]."""

    def __init__(self, vocab=30522, hidden=768, heads=12, layers=12, ffn=3072, max_len=512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        return self.encoder(self.norm(self.tokens(ids) + self.positions(pos)))


def torchvision_model(name):
    import torchvision
    return getattr(torchvision.models, name)(weights=None)


def make_model(name, batch):
    """(eager module in eval mode, [(input name, tensor)]), seeded."""
    torch.manual_seed(0)
    if name == "bert_base":
        model = BertLikeEncoder()
        inputs = [("ids", torch.randint(0, 30522, (batch, 128), dtype=torch.int64))]
    else:
        model = torchvision_model(name)
        inputs = [("x", torch.randn(batch, 3, 224, 224))]
        if name == "vit_b_16":
            # torchvision initialises the classifier to zeros: every output would be 0 and the
            # check against torch could not fail.
            with torch.no_grad():
                model.heads.head.weight.normal_(0.0, 0.05)
                model.heads.head.bias.normal_(0.0, 0.05)
    return model.eval(), inputs


MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16", "bert_base"]


# ---- aotc through its C ABI ----------------------------------------------------------------

AOTC_DTYPES = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int64: 4, torch.int32: 5,
               torch.bool: 6}


class AotcTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class AotcTensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 4)]


class AotcContextOptions(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("cuda_graph_cache", ctypes.c_int32),
                ("num_dim_limits", ctypes.c_int32), ("reserved_i", ctypes.c_int32 * 1), ("arena", ctypes.c_void_p),
                ("arena_size", ctypes.c_uint64), ("cuda_stream", ctypes.c_void_p), ("dim_limits", ctypes.c_void_p)]


class AotcModel:
    """A compiled model loaded with ctypes; run() calls aotc_run on preallocated buffers."""

    def __init__(self, so_path, inputs, threads):
        self.lib = ctypes.CDLL(so_path)
        lib = self.lib
        lib.aotc_last_error.restype = ctypes.c_char_p
        self.model = ctypes.c_void_p()
        self._check(lib.aotc_model_create(ctypes.byref(self.model)), "aotc_model_create")
        opts = AotcContextOptions(num_threads=threads)
        self.ctx = ctypes.c_void_p()
        self._check(lib.aotc_context_create(self.model, ctypes.byref(opts), ctypes.byref(self.ctx)),
                    "aotc_context_create")
        self.keep = []  # tensors and dims arrays that the structs point into
        self.ins = (AotcTensor * len(inputs))()
        for i, t in enumerate(inputs):
            self._fill(self.ins[i], t.contiguous())
        n = ctypes.c_size_t()
        lib.aotc_model_num_outputs(self.model, ctypes.byref(n))
        self.outputs = []
        self.outs = (AotcTensor * n.value)()
        for i in range(n.value):
            info = AotcTensorInfo()
            self._check(lib.aotc_model_output_info(self.model, ctypes.c_size_t(i), ctypes.byref(info)),
                        "aotc_model_output_info")
            dtype = {v: k for k, v in AOTC_DTYPES.items()}[info.dtype]
            out = torch.empty([info.dims[d] for d in range(info.rank)], dtype=dtype)
            self.outputs.append(out)
            self._fill(self.outs[i], out)

    def _fill(self, slot, t):
        self.keep.append(t)
        dims = (ctypes.c_int64 * t.dim())(*t.shape)
        self.keep.append(dims)
        slot.data = t.data_ptr()
        slot.dtype = AOTC_DTYPES[t.dtype]
        slot.rank = t.dim()
        slot.dims = dims
        slot.size_bytes = t.numel() * t.element_size()

    def _check(self, status, call):
        if status != 0:
            raise RuntimeError(f"{call}: {self.lib.aotc_last_error().decode(errors='replace')}")

    def run(self):
        self._check(self.lib.aotc_run(self.model, self.ctx, self.ins, ctypes.c_size_t(len(self.ins)), self.outs,
                                      ctypes.c_size_t(len(self.outs))), "aotc_run")
        return self.outputs

    def close(self):
        self.lib.aotc_context_destroy(self.ctx)
        self.lib.aotc_model_destroy(self.model)


def compile_with_aotc(aotc, pt_path, so_path, inputs):
    """Compiles; returns (seconds, arena bytes, lower bound bytes) or raises with aotc's error."""
    cmd = [aotc, pt_path, "-o", so_path, "-v"]
    for name, t in inputs:
        dtype = {torch.float32: "float32", torch.int64: "int64", torch.bool: "bool"}[t.dtype]
        cmd += ["--input", f"{name}:{'x'.join(map(str, t.shape))}:{dtype}"]
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        lines = [line for line in r.stderr.splitlines() if "error" in line] or r.stderr.splitlines()[-1:]
        raise RuntimeError(lines[0][:300] if lines else f"aotc exited {r.returncode}")
    m = re.search(r"arena (\d+) bytes, lower bound (\d+) bytes", r.stderr)
    return seconds, int(m.group(1)) if m else None, int(m.group(2)) if m else None


# ---- timing --------------------------------------------------------------------------------

def measure_peak_gflops(threads, n=2048, runs=10):
    """torch.mm's (MKL/oneDNN) sgemm rate with this many threads on n x n."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        torch.mm(a, b)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / statistics.median(times) / 1e9


SGEMM_N = 2048


def aotc_sgemm_model(aotc, work, n=SGEMM_N):
    """aotc's own sgemm on n x n: a bias-free linear layer compiled to a .so (weights packed
    at compile time, the micro-kernel every convolution and linear layer uses). Returns the
    .so's path and its input."""
    pt = os.path.join(work, f"sgemm_{n}.pt")
    so = os.path.join(work, f"sgemm_{n}.so")
    x = torch.randn(n, n)
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(nn.Linear(n, n, bias=False).eval(), (x,)), pt)
    compile_with_aotc(aotc, pt, so, [("input", x)])  # nn.Linear.forward(input)
    return so, x


def measure_aotc_sgemm_gflops(sgemm, thread_counts, n=SGEMM_N, runs=10):
    """aotc's sgemm rate per thread count, at the start of the run. On the 2-core development
    machine (2026-11-26, three rounds) it measured 79-82 GFLOP/s on one thread against
    torch.mm's 70-77, and 131-150 on two against 125-156, so the % of peak in the table is
    taken against the better of the two."""
    so, x = sgemm
    rates = {}
    for threads in thread_counts:
        model = AotcModel(so, [x], threads)
        for _ in range(3):
            model.run()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model.run()
            times.append(time.perf_counter() - start)
        model.close()
        rates[threads] = 2 * n ** 3 / statistics.median(times) / 1e9
    return rates


class mha_fastpath_off:
    """nn.TransformerEncoderLayer and nn.MultiheadAttention take torch's fused fast path in
    eval mode (aten::_transformer_encoder_layer_fwd, _native_multi_head_attention), which
    neither the FLOP counter nor the ONNX exporter understands: they see the same model
    through its unfused ops while this is active. aotc and LibTorch still get the fast path."""

    def __enter__(self):
        self.before = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)

    def __exit__(self, *exc):
        torch.backends.mha.set_fastpath_enabled(self.before)


def count_flops(model, inputs):
    """The model's FLOPs by torch's counter, with attention on the CPU counted too: torch
    2.11's counter has formulas for the CUDA attention kernels but not for the CPU's
    (aten._scaled_dot_product_flash_attention_for_cpu), which it silently counted as 0,
    leaving out 4% of vit_b_16's FLOPs and 3% of bert_base's until 2026-11-27."""
    from torch.utils import flop_counter

    def cpu_sdpa(query, key, value, *args, out_shape=None, **kwargs):  # shapes, as torch's formulas get
        return flop_counter.sdpa_flop_count(query, key, value)
    mapping = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: cpu_sdpa}
    with torch.no_grad(), mha_fastpath_off(), flop_counter.FlopCounterMode(display=False,
                                                                         custom_mapping=mapping) as counter:
        model(*[t for _, t in inputs])
    return counter.get_total_flops()


def p90(values):
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]



def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        return first_tensor(value[0])
    if isinstance(value, dict):
        return first_tensor(next(iter(value.values())))
    raise TypeError(type(value))


def peak_rss_kb(cmd):
    """Peak RSS of a child process (its own ru_maxrss, via a tiny wrapper)."""
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
               "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 else None


LIBTORCH_RSS_SCRIPT = """
import sys, torch
torch.set_num_threads(int(sys.argv[2]))
m = torch.jit.load(sys.argv[1])
x = [torch.load(p) for p in sys.argv[3:]]
with torch.no_grad():
    for _ in range(3):
        m(*x)
"""


def cpu_model():
    """The model name, with the family and model numbers and the widest vector ISA: a VM's
    model name can be as bare as "AMD EPYC", and the kernels take AVX-512 where it is there."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or "unknown"
    flags = fields.get("flags", "").split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    extra = [f"family {fields['cpu family']} model {fields['model']}"] if "cpu family" in fields and "model" in fields else []
    return f"{fields['model name']} ({', '.join(extra + ([isa] if isa else []))})"


# ---- one configuration -----------------------------------------------------------------------

def bench_model(args, name, batch, work, peaks, sgemm):
    rows = []
    model, inputs = make_model(name, batch)
    tensors = [t for _, t in inputs]
    with torch.no_grad():
        traced = torch.jit.trace(model, tensors, check_trace=False)
    pt = os.path.join(work, f"{name}_b{batch}.pt")
    torch.jit.save(traced, pt)
    flops = count_flops(model, inputs)

    # aotc: compile once per batch size
    so = os.path.join(work, f"{name}_b{batch}.so")
    aotc_note = ""
    try:
        compile_s, arena, bound = compile_with_aotc(args.aotc, pt, so, inputs)
    except RuntimeError as e:
        compile_s = arena = bound = None
        aotc_note = str(e)

    # LibTorch: frozen and optimised for inference
    with torch.no_grad():
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(pt).eval()))
    with torch.no_grad():
        want = first_tensor(model(*tensors))

    # ONNX Runtime
    ort_note = ""
    ort_session = None
    onnx_path = os.path.join(work, f"{name}_b{batch}.onnx")
    try:
        import onnxruntime as ort
        if not os.path.exists(onnx_path):
            with torch.no_grad(), mha_fastpath_off():
                torch.onnx.export(model, tuple(tensors), onnx_path, input_names=[n for n, _ in inputs],
                                  opset_version=17, dynamo=False)
    except Exception as e:  # noqa: BLE001 - reported in the table
        ort_note = f"export failed: {str(e).splitlines()[0][:200]}"

    for threads in args.threads:
        torch.set_num_threads(threads)
        runners = {}
        notes = {}
        if aotc_note:
            notes["aotc"] = aotc_note
        else:
            aotc_model = AotcModel(so, tensors, threads)
            got = first_tensor(aotc_model.run())
            err = rel_l2(got, want)
            if err > 1e-4:
                notes["aotc"] = f"WRONG: rel L2 {err:.2e}"
            runners["aotc"] = aotc_model.run
        with torch.no_grad():
            def libtorch_run(frozen=frozen, tensors=tensors):
                with torch.no_grad():
                    return frozen(*tensors)
            runners["libtorch"] = libtorch_run
        if not ort_note:
            import onnxruntime as ort
            so_opts = ort.SessionOptions()
            so_opts.intra_op_num_threads = threads
            so_opts.inter_op_num_threads = 1
            so_opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so_opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            ort_session = ort.InferenceSession(onnx_path, so_opts, providers=["CPUExecutionProvider"])
            feeds = {n: t.numpy() for n, t in inputs}
            runners["onnxruntime"] = lambda s=ort_session, f=feeds: s.run(None, f)
        elif ort_note:
            notes["onnxruntime"] = ort_note
        # The peak again in these rounds (aotc's sgemm, one timed run a round): the machine's
        # speed drifts over minutes (other tenants), and a model's share of the peak is read
        # against the peak of the same moments.
        sgemm_model = AotcModel(sgemm[0], [sgemm[1]], threads)
        runners["sgemm"] = sgemm_model.run

        times = {k: [] for k in runners}
        for k, run in runners.items():  # warm-up
            for _ in range(args.warmup):
                run()
        for _ in range(args.rounds):
            for k, run in runners.items():
                # Idle workers of the runtime timed before spin on for tens of ms (ONNX
                # Runtime's intra-op pool by default): measured on mobilenet_v2, aotc took
                # 12.3 ms right after ORT's runs and 7.0 ms alone or after this pause.
                time.sleep(args.settle_ms / 1e3)
                run()  # untimed: wakes this runtime's threads after the others ran
                for _ in range(1 if k == "sgemm" else args.per_round):
                    start = time.perf_counter()
                    run()
                    times[k].append((time.perf_counter() - start) * 1e3)
        if "aotc" in runners:
            aotc_model.close()
        sgemm_model.close()
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"model": name, "batch": batch, "threads": threads, "runs": args.rounds * args.per_round,
               "gflop": flops / 1e9, "peak_gflops": peaks[threads],
               "row_peak_gflops": 2 * SGEMM_N ** 3 / (med["sgemm"] / 1e3) / 1e9,
               "compile_s": compile_s, "arena": arena, "lower_bound": bound, "notes": notes}
        for k in ["aotc", "libtorch", "onnxruntime"]:
            if k in med:
                row[f"{k}_median_ms"] = med[k]
                row[f"{k}_p90_ms"] = p90(times[k])
                row[f"{k}_gflops"] = flops / 1e9 / (med[k] / 1e3)
        rows.append(row)
        print(json.dumps(row), flush=True)

    # Peak RSS: aotc-run --bench vs a LibTorch process running the same model alone.
    if args.rss and not aotc_note and batch == args.batches[0]:
        rss_aotc = peak_rss_kb([args.aotc_run, so, "--bench", "--iters", "3", "--warmup", "0",
                                "--threads", str(args.threads[-1])])
        input_files = []
        for n_, t in inputs:
            p = os.path.join(work, f"{name}_b{batch}_{n_}.tpt")
            torch.save(t, p)
            input_files.append(p)
        rss_torch = peak_rss_kb([sys.executable, "-c", LIBTORCH_RSS_SCRIPT, pt, str(args.threads[-1]),
                                 *input_files])
        for row in rows:
            row["rss_aotc_kb"], row["rss_libtorch_kb"] = rss_aotc, rss_torch
    return rows


# ---- report ----------------------------------------------------------------------------------

def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def report(rows, torch_sgemm, aotc_sgemm, header):
    lines = [header, ""]
    lines.append("| model | batch | threads | aotc ms (p90) | LibTorch ms (p90) | ORT ms (p90) | aotc/LibTorch "
                 "| aotc/ORT | aotc GFLOP/s (% peak: row / start) | sgemm GFLOP/s in the row | LibTorch GFLOP/s "
                 "| ORT GFLOP/s | notes |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        a, t, o = r.get("aotc_median_ms"), r.get("libtorch_median_ms"), r.get("onnxruntime_median_ms")
        row_peak = r.get("row_peak_gflops")
        pct = (f" ({100 * r['aotc_gflops'] / row_peak:.0f}% / {100 * r['aotc_gflops'] / r['peak_gflops']:.0f}%)"
               if a and row_peak else "")
        notes = "; ".join(f"{k}: {v}" for k, v in r["notes"].items()).replace("|", "/")
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['threads']} "
            f"| {fmt(a)} ({fmt(r.get('aotc_p90_ms'))}) | {fmt(t)} ({fmt(r.get('libtorch_p90_ms'))}) "
            f"| {fmt(o)} ({fmt(r.get('onnxruntime_p90_ms'))}) "
            f"| {fmt(a / t if a and t else None)} | {fmt(a / o if a and o else None)} "
            f"| {fmt(r.get('aotc_gflops'), '.1f')}{pct} | {fmt(row_peak, '.1f')} "
            f"| {fmt(r.get('libtorch_gflops'), '.1f')} "
            f"| {fmt(r.get('onnxruntime_gflops'), '.1f')} | {notes} |")
    def rates(r):
        return ", ".join(f"{t} thread{'s' if t > 1 else ''}: {g:.1f} GFLOP/s" for t, g in sorted(r.items()))
    lines += ["", f"sgemm {SGEMM_N}x{SGEMM_N} fp32 measured at the start of this run: torch.mm {rates(torch_sgemm)}; "
              f"aotc (a linear layer) {rates(aotc_sgemm)}. % peak: \"row\" is against aotc's sgemm timed in the "
              "row's own rounds (one run a round, alternating with the three runtimes), \"start\" against the "
              "better of the two rates above. Winograd layers count as direct convolution (their FLOPs as if "
              "computed directly), so a model can pass 100%.", ""]
    lines.append("| model | batch | aotc compile s | arena bytes | lower bound | ratio | peak RSS aotc-run | "
                 "peak RSS LibTorch |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    seen = set()
    for r in rows:
        if (r["model"], r["batch"]) in seen:
            continue
        seen.add((r["model"], r["batch"]))
        ratio = r["arena"] / r["lower_bound"] if r.get("arena") and r.get("lower_bound") else None
        rss_a, rss_t = r.get("rss_aotc_kb"), r.get("rss_libtorch_kb")
        lines.append(f"| {r['model']} | {r['batch']} | {fmt(r['compile_s'])} | {fmt(r['arena'], 'd')} "
                     f"| {fmt(r['lower_bound'], 'd')} | {fmt(ratio, '.3f')} "
                     f"| {fmt(rss_a / 1024 if rss_a else None, '.1f')} MiB "
                     f"| {fmt(rss_t / 1024 if rss_t else None, '.1f')} MiB |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build/compiler/aotc"))
    ap.add_argument("--aotc-run", default=os.path.join(ROOT, "build/tools/aotc-run/aotc-run"))
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of alternation")
    ap.add_argument("--per-round", type=int, default=4, help="timed runs per runtime per round")
    ap.add_argument("--settle-ms", type=float, default=100,
                    help="pause before each runtime's turn, so that the last one's threads stop spinning")
    ap.add_argument("--no-rss", dest="rss", action="store_false")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build/bench"))
    ap.add_argument("--results", default="", help="write the markdown table here too")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch_sgemm = {t: measure_peak_gflops(t) for t in args.threads}
    sgemm = aotc_sgemm_model(args.aotc, args.workdir)
    aotc_sgemm = measure_aotc_sgemm_gflops(sgemm, args.threads)
    peaks = {t: max(torch_sgemm[t], aotc_sgemm[t]) for t in args.threads}
    print(json.dumps({"sgemm_torch_gflops": torch_sgemm, "sgemm_aotc_gflops": aotc_sgemm}), flush=True)
    rows = []
    for name in args.models:
        for batch in args.batches:
            try:
                rows += bench_model(args, name, batch, args.workdir, peaks, sgemm)
            except Exception as e:  # noqa: BLE001 - one model's failure must not end the run
                print(f"{name} batch {batch}: failed: {e}", file=sys.stderr, flush=True)
                rows.append({"model": name, "batch": batch, "threads": "-", "runs": 0, "gflop": 0,
                             "peak_gflops": 1, "compile_s": None, "arena": None, "lower_bound": None,
                             "notes": {"bench": str(e).splitlines()[0][:200]}})
    import onnxruntime
    header = (f"CPU benchmark, {datetime.date.today()}: {cpu_model()}, {os.cpu_count()} cores; torch "
              f"{torch.__version__}, onnxruntime {onnxruntime.__version__}; {args.rounds} rounds x "
              f"{args.per_round} timed runs per runtime after {args.warmup} warm-up; medians and p90 in ms.")
    text = report(rows, torch_sgemm, aotc_sgemm, header)
    print(text)
    if args.results:
        with open(args.results, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
