"""CPU benchmark: aotc against LibTorch, ONNX Runtime, OpenVINO and ExecuTorch, on this machine.

For each model, batch size and thread count it times the runtimes in rounds: each round gives
every runtime one untimed run and then --per-round timed runs, so that they all see the same
machine state (these machines are noisy); a pause (--settle-ms) before each turn lets the last
runtime's idle worker threads stop spinning, so that they do not share the cores with the one
being timed. It prints a table of medians and p90s with aotc / best peer (median over the rounds
and its spread), a roofline line per row (the model's GFLOP and aotc's GFLOP/s against the best
sgemm run timed in the row's own rounds), aotc's arena against its liveness lower bound, aotc's
compile time, and the peak RSS of aotc-run vs a LibTorch process running the same model alone.

    bench/run.sh                                   # installs the peers, runs everything
    bench/run.sh --models resnet18 --batches 1 --threads 2 --rounds 4
    bench/run.sh --with-executorch --models resnet18 mobilenet_v2 --batches 1 8 --threads 1 2

The peers (one whose package is missing is skipped, with a line saying so):
  - LibTorch: the TorchScript module through torch.jit.freeze and
    torch.jit.optimize_for_inference, torch.set_num_threads(N);
  - ONNX Runtime: torch.onnx.export (the TorchScript-based exporter), CPU provider,
    intra_op_num_threads=N, inter_op_num_threads=1, sequential execution;
  - OpenVINO: the same ONNX file, CPU plugin, INFERENCE_NUM_THREADS=N, LATENCY hint, f32
    precision (not its bf16 default where the CPU has AMX/AVX512_BF16), the same numpy inputs;
  - ExecuTorch with XNNPACK (with --executorch-python): bench/executorch_peer.py, run by the
    python of its own venv (torch 2.15), lowers the same weights to a .pte and runs it with its
    threadpool at N, as a process that times one round whenever this one asks;
  - aotc: the .so (compiled with aotc --cpu-threads N) loaded with ctypes, called through its C
    ABI, one context with N threads.
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


def compile_with_aotc(aotc, pt_path, so_path, inputs, cpu_threads=None):
    """Compiles (for cpu_threads threads: aotc --cpu-threads); returns (seconds, arena bytes,
    lower bound bytes) or raises with aotc's error."""
    cmd = [aotc, pt_path, "-o", so_path, "-v"] + (["--cpu-threads", str(cpu_threads)] if cpu_threads else [])
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


# ---- runtimes and peers ----------------------------------------------------------------------

RUNTIMES = ["aotc", "libtorch", "onnxruntime", "openvino", "executorch"]
PEERS = RUNTIMES[1:]
LABELS = {"aotc": "aotc", "libtorch": "LibTorch", "onnxruntime": "ORT", "openvino": "OpenVINO",
          "executorch": "ExecuTorch"}


def find_peers(executorch_python):
    """{peer: version} of the peers that can run here; prints a line for each one skipped, so
    that a missing package shows as a missing column, never as a crash."""
    found = {"libtorch": torch.__version__}
    for module in ["onnxruntime", "openvino"]:
        try:
            found[module] = __import__(module).__version__.split("-")[0]
        except ImportError:
            print(f"{module}: not installed, skipped (bench/run.sh installs it)", flush=True)
    if not executorch_python:
        print("executorch: skipped (no --executorch-python; bench/run.sh --with-executorch makes its venv)",
              flush=True)
    else:
        r = subprocess.run([executorch_python, "-c", "from importlib.metadata import version; "
                            "import executorch.runtime, torch; print(version('executorch'), torch.__version__)"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            et, et_torch = r.stdout.split()
            found["executorch"] = f"{et} (torch {et_torch.split('+')[0]})"
        else:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            print(f"executorch: skipped ({executorch_python} cannot import it: {last[:200]})", flush=True)
    return found


class InProcess:
    """A runtime called in this process; run() does one inference."""

    def __init__(self, run):
        self.run = run

    def warm(self, n):
        for _ in range(n):
            self.run()

    def round(self, n):
        """One round's timed runs (ms), after an untimed one that wakes this runtime's threads
        after the others ran."""
        self.run()
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.run()
            times.append((time.perf_counter() - start) * 1e3)
        return times

    def close(self):
        pass


class ExecuTorchPeer:
    """bench/executorch_peer.py --serve, run by the python of ExecuTorch's own venv (it needs
    torch 2.15's libtorch, this process has 2.11's). One process per configuration, kept warm
    like the in-process runtimes and asked for one round at a time, so that it takes its turn in
    the same alternating rounds; it times itself, so the pipe is not in its times."""

    def __init__(self, python, extra_args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        script = os.path.join(ROOT, "bench", "executorch_peer.py")
        self.proc = subprocess.Popen([python, script, "--serve", *extra_args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        if not self._reply().get("ready"):
            raise RuntimeError("no ready line")

    def _reply(self):
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            with open(self.log_path) as f:
                tail = [s for s in f.read().splitlines() if s.strip()][-1:] or ["exited"]
            raise RuntimeError(f"failed: {tail[0][:200]} (log: {self.log_path})")
        return json.loads(line)

    def warm(self, n):
        pass  # done by the process before it said ready

    def round(self, n):
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        return self._reply()["ms"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()
        self.log.close()


def check_peer(notes, peer, got, want, tol=1e-3):
    """A peer that computes something else would make its times meaningless: note it. Looser
    than aotc's 1e-4: the peers' own kernels (Winograd, other summation orders) are not ours
    to hold to it."""
    err = rel_l2(torch.as_tensor(np.asarray(got)), want)
    if err > tol:
        notes[peer] = f"WRONG: rel L2 {err:.2e}"


def versus_best_peer(row):
    """aotc / best peer: in each round, aotc's median over the fastest peer's median of that
    round; the row gives the median of those ratios and their min..max (the spread), and the
    peer fastest overall. Peers with a WRONG note do not count."""
    peers = [k for k in PEERS if f"{k}_round_medians_ms" in row and "WRONG" not in row["notes"].get(k, "")]
    if "aotc_round_medians_ms" not in row or not peers:
        return {}
    ratios = [a / min(row[f"{k}_round_medians_ms"][i] for k in peers)
              for i, a in enumerate(row["aotc_round_medians_ms"])]
    return {"best_peer": min(peers, key=lambda k: row[f"{k}_median_ms"]),
            "vs_best": statistics.median(ratios), "vs_best_min": min(ratios), "vs_best_max": max(ratios)}



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

def bench_model(args, name, batch, work, peaks, sgemm, peers):
    rows = []
    model, inputs = make_model(name, batch)
    tensors = [t for _, t in inputs]
    with torch.no_grad():
        traced = torch.jit.trace(model, tensors, check_trace=False)
    pt = os.path.join(work, f"{name}_b{batch}.pt")
    torch.jit.save(traced, pt)
    flops = count_flops(model, inputs)

    # aotc: compiled per batch size and thread count, for the threads it runs on (aotc
    # --cpu-threads, as a user who knows them would); the compile time and arena are the
    # first thread count's.
    def so_for(threads):
        return os.path.join(work, f"{name}_b{batch}_t{threads}.so")

    aotc_note = ""
    compile_s = arena = bound = None
    try:
        for threads in args.threads:
            result = compile_with_aotc(args.aotc, pt, so_for(threads), inputs, cpu_threads=threads)
            if compile_s is None:
                compile_s, arena, bound = result
    except RuntimeError as e:
        aotc_note = str(e)

    # LibTorch: frozen and optimised for inference
    with torch.no_grad():
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(pt).eval()))
    with torch.no_grad():
        want = first_tensor(model(*tensors))

    # ONNX Runtime and OpenVINO run the same ONNX file (the TorchScript-based exporter).
    onnx_note = ""
    onnx_path = os.path.join(work, f"{name}_b{batch}.onnx")
    if "onnxruntime" in peers or "openvino" in peers:
        try:
            if not os.path.exists(onnx_path):
                with torch.no_grad(), mha_fastpath_off():
                    torch.onnx.export(model, tuple(tensors), onnx_path, input_names=[n for n, _ in inputs],
                                      opset_version=17, dynamo=False)
        except Exception as e:  # noqa: BLE001 - reported in the table
            onnx_note = f"export failed: {str(e).splitlines()[0][:200]}"
    feeds = {n: t.numpy() for n, t in inputs}

    # ExecuTorch: bench/executorch_peer.py in its own venv, on these weights and this input (the
    # other venv's torch could seed its weights differently). Lowered again once per batch size.
    et_args = None
    if "executorch" in peers:
        state = os.path.join(work, f"{name}_b{batch}_state.pt")
        torch.save(model.state_dict(), state)
        x_path = os.path.join(work, f"{name}_b{batch}_input.npy")
        np.save(x_path, tensors[0].numpy())
        pte = os.path.join(work, f"{name}_b{batch}_xnnpack.pte")
        if os.path.exists(pte):
            os.remove(pte)
        et_args = ["--model", name, "--batch", str(batch), "--pte", pte, "--state", state, "--input", x_path,
                   "--warmup", str(args.warmup), "--per-round", str(args.per_round)]

    for threads in args.threads:
        torch.set_num_threads(threads)
        runners = {}
        notes = {}
        if aotc_note:
            notes["aotc"] = aotc_note
        else:
            aotc_model = AotcModel(so_for(threads), tensors, threads)
            got = first_tensor(aotc_model.run())
            err = rel_l2(got, want)
            if err > 1e-4:
                notes["aotc"] = f"WRONG: rel L2 {err:.2e}"
            runners["aotc"] = InProcess(aotc_model.run)
        with torch.no_grad():
            def libtorch_run(frozen=frozen, tensors=tensors):
                with torch.no_grad():
                    return frozen(*tensors)
            runners["libtorch"] = InProcess(libtorch_run)
        if onnx_note:
            notes["onnx"] = onnx_note
        if "onnxruntime" in peers and not onnx_note:
            import onnxruntime as ort
            so_opts = ort.SessionOptions()
            so_opts.intra_op_num_threads = threads
            so_opts.inter_op_num_threads = 1
            so_opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so_opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            ort_session = ort.InferenceSession(onnx_path, so_opts, providers=["CPUExecutionProvider"])
            check_peer(notes, "onnxruntime", ort_session.run(None, feeds)[0], want)
            runners["onnxruntime"] = InProcess(lambda s=ort_session, f=feeds: s.run(None, f))
        if "openvino" in peers and not onnx_note:
            import openvino as ov
            # f32 asked for: on a CPU with AMX or AVX512_BF16 OpenVINO's default is bf16 (on this
            # machine's Xeon, 2026-11-28: resnet18 at 8.7 ms, rel L2 3.5e-3 from torch), which
            # would time a different computation from the others' fp32.
            compiled = ov.Core().compile_model(onnx_path, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                                  "PERFORMANCE_HINT": "LATENCY",
                                                                  "INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()
            request.infer(feeds)
            check_peer(notes, "openvino", request.get_output_tensor(0).data, want)
            runners["openvino"] = InProcess(lambda r=request, f=feeds: r.infer(f))
        if et_args:
            out_path = os.path.join(work, f"{name}_b{batch}_t{threads}_executorch_out.npy")
            try:
                et = ExecuTorchPeer(args.executorch_python, et_args + ["--threads", str(threads), "--output", out_path],
                                    os.path.join(work, f"{name}_b{batch}_t{threads}_executorch.log"))
                check_peer(notes, "executorch", np.load(out_path), want)
                runners["executorch"] = et
            except RuntimeError as e:
                notes["executorch"] = str(e)
        # The sgemm peak again in these rounds (one run a round each of aotc's sgemm and torch.mm,
        # the best of them is the row's peak): the machine's speed drifts over minutes (other
        # tenants), and a model's share of the peak is read against the peak of the same moments.
        sgemm_model = AotcModel(sgemm[0], [sgemm[1]], threads)
        runners["sgemm"] = InProcess(sgemm_model.run)
        mm_a, mm_b = torch.randn(SGEMM_N, SGEMM_N), torch.randn(SGEMM_N, SGEMM_N)
        runners["sgemm_torch"] = InProcess(lambda: torch.mm(mm_a, mm_b))

        rounds = {k: [] for k in runners}  # per runtime, each round's timed runs (ms)
        for k, runner in runners.items():  # warm-up (ExecuTorch's process warmed itself up)
            runner.warm(args.warmup)
        for _ in range(args.rounds):
            for k, runner in runners.items():
                # Idle workers of the runtime timed before spin on for tens of ms (ONNX
                # Runtime's intra-op pool by default): measured on mobilenet_v2, aotc took
                # 12.3 ms right after ORT's runs and 7.0 ms alone or after this pause.
                time.sleep(args.settle_ms / 1e3)
                rounds[k].append(runner.round(1 if k.startswith("sgemm") else args.per_round))
        for runner in runners.values():
            runner.close()
        if "aotc" in runners:
            aotc_model.close()
        sgemm_model.close()
        best_sgemm_ms = min(t for k in ["sgemm", "sgemm_torch"] for r in rounds[k] for t in r)
        row = {"model": name, "batch": batch, "threads": threads, "runs": args.rounds * args.per_round,
               "gflop": flops / 1e9, "peak_gflops": peaks[threads],
               "row_peak_gflops": 2 * SGEMM_N ** 3 / (best_sgemm_ms / 1e3) / 1e9,
               "compile_s": compile_s, "arena": arena, "lower_bound": bound, "notes": notes}
        for k in RUNTIMES:
            if k in rounds:
                all_ms = [t for r in rounds[k] for t in r]
                row[f"{k}_median_ms"] = statistics.median(all_ms)
                row[f"{k}_p90_ms"] = p90(all_ms)
                row[f"{k}_round_medians_ms"] = [statistics.median(r) for r in rounds[k]]
                row[f"{k}_gflops"] = flops / 1e9 / (row[f"{k}_median_ms"] / 1e3)
        row.update(versus_best_peer(row))
        rows.append(row)
        print(json.dumps(row), flush=True)

    # Peak RSS: aotc-run --bench vs a LibTorch process running the same model alone.
    if args.rss and not aotc_note and batch == args.batches[0]:
        rss_aotc = peak_rss_kb([args.aotc_run, so_for(args.threads[-1]), "--bench", "--iters", "3", "--warmup", "0",
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


def report(rows, torch_sgemm, aotc_sgemm, header, peers):
    lines = [header, ""]
    shown = ["aotc"] + [k for k in PEERS if k in peers]
    lines.append("| model | batch | threads | " + " | ".join(f"{LABELS[k]} ms (p90)" for k in shown)
                 + " | aotc / best peer (min..max) | notes |")
    lines.append("| --- | ---: | ---: | " + " | ".join("---:" for _ in shown) + " | ---: | --- |")
    for r in rows:
        cells = [f"{fmt(r.get(f'{k}_median_ms'))} ({fmt(r.get(f'{k}_p90_ms'))})" if f"{k}_median_ms" in r else "-"
                 for k in shown]
        vs = (f"{r['vs_best']:.2f} ({r['vs_best_min']:.2f}..{r['vs_best_max']:.2f}) {LABELS[r['best_peer']]}"
              if "vs_best" in r else "-")
        if "vs_best" in r and r["vs_best"] > 1:
            vs = f"**{vs}**"  # behind the best peer
        notes = "; ".join(f"{k}: {v}" for k, v in r["notes"].items()).replace("|", "/")
        lines.append(f"| {r['model']} | {r['batch']} | {r['threads']} | " + " | ".join(cells) + f" | {vs} | {notes} |")
    lines += ["", "aotc / best peer: per round, aotc's median over the fastest peer's median in that round; the "
              "median of the rounds' ratios, their min..max, and the peer fastest overall. Above 1 (bold): "
              "behind it.", ""]

    # Roofline: how far from the machine's limit, next to how far from the peers.
    lines.append("Roofline (FLOPs by torch's counter on one eager forward; peak: the best sgemm run of the "
                 f"row's own rounds, {SGEMM_N}x{SGEMM_N}x{SGEMM_N} fp32, aotc's linear layer or torch.mm):")
    lines.append("")
    for r in rows:
        if not r.get("aotc_gflops") or not r.get("row_peak_gflops"):
            continue
        peak = r["row_peak_gflops"]
        best = r.get("best_peer")
        peer = (f"; best peer {LABELS[best]} {r[f'{best}_gflops']:.1f} GFLOP/s = {r[f'{best}_gflops'] / peak:.2f}"
                if best else "")
        lines.append(f"- {r['model']} (batch {r['batch']}, {r['threads']} thread{'s' if r['threads'] > 1 else ''}): "
                     f"{r['gflop']:.2f} GFLOP, aotc {r['aotc_gflops']:.1f} GFLOP/s = {r['aotc_gflops'] / peak:.2f} "
                     f"of the {peak:.0f} GFLOP/s sgemm peak{peer}")
    def rates(r):
        return ", ".join(f"{t} thread{'s' if t > 1 else ''}: {g:.1f} GFLOP/s" for t, g in sorted(r.items()))
    lines += ["", f"sgemm {SGEMM_N}x{SGEMM_N} fp32 measured at the start of this run: torch.mm {rates(torch_sgemm)}; "
              f"aotc (a linear layer) {rates(aotc_sgemm)}. Winograd layers count as direct convolution (their "
              "FLOPs as if computed directly), so a model can pass 1.0 of the peak.", ""]
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
    ap.add_argument("--executorch-python", default=os.environ.get("AOTC_BENCH_EXECUTORCH_PYTHON", ""),
                    help="python of ExecuTorch's venv (bench/run.sh --with-executorch makes it); "
                         "without it ExecuTorch is skipped")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    peers = find_peers(args.executorch_python)
    torch_sgemm = {t: measure_peak_gflops(t) for t in args.threads}
    sgemm = aotc_sgemm_model(args.aotc, args.workdir)
    aotc_sgemm = measure_aotc_sgemm_gflops(sgemm, args.threads)
    peaks = {t: max(torch_sgemm[t], aotc_sgemm[t]) for t in args.threads}
    print(json.dumps({"sgemm_torch_gflops": torch_sgemm, "sgemm_aotc_gflops": aotc_sgemm}), flush=True)
    rows = []
    for name in args.models:
        for batch in args.batches:
            try:
                rows += bench_model(args, name, batch, args.workdir, peaks, sgemm, peers)
            except Exception as e:  # noqa: BLE001 - one model's failure must not end the run
                print(f"{name} batch {batch}: failed: {e}", file=sys.stderr, flush=True)
                rows.append({"model": name, "batch": batch, "threads": "-", "runs": 0, "gflop": 0,
                             "peak_gflops": 1, "compile_s": None, "arena": None, "lower_bound": None,
                             "notes": {"bench": str(e).splitlines()[0][:200]}})
    versions = ", ".join(f"{LABELS[k]} {v}" for k, v in peers.items())
    header = (f"CPU benchmark, {datetime.date.today()}: {cpu_model()}, {os.cpu_count()} cores; {versions}; "
              f"{args.rounds} rounds x {args.per_round} timed runs per runtime after {args.warmup} warm-up; "
              "medians and p90 in ms.")
    text = report(rows, torch_sgemm, aotc_sgemm, header, peers)
    print(text)
    if args.results:
        with open(args.results, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
