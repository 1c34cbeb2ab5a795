"""The C ABI's CUDA additions (minor version 2), checked without a GPU where they can be:

- on the CPU fixture model: aotc_model_device says CPU; device memory, an unknown memory
  kind and a CUDA stream are refused with messages; the stream functions refuse a CPU
  context;
- the command-line errors of the CUDA flags: exit status 2, a message, no output file;
- on a model compiled with --target cuda: the library exports the new functions,
  aotc_model_device says CUDA before any model exists, and aotc_model_create either works
  (a GPU is there: then a run on host memory gives finite outputs) or fails with
  AOTC_ERR_SYSTEM and CUDA's reason (no GPU), never a crash;
- with a GPU, host memory: inputs and outputs of odd sizes, pageable and pinned, mixed in
  one run, fresh data each run; a device pointer marked as host memory is refused and the
  context stays usable;
- with a GPU, the GEMM choices a library's contexts share per device: a second context
  times no candidate and gives the first's outputs bit for bit; AOTC_CUDA_TUNING_CACHE=0
  times them again.
Usage: test_cuda_abi.py FIXTURE_MODEL AOTC WORKDIR"""
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from aotc_ctypes import (DEVICE_CPU, DEVICE_CUDA, AotcError, Context, Library,  # noqa: E402
                         Model)
from common import expect, finish, run_aotc  # noqa: E402

ERR_INVALID_ARGUMENT, ERR_SYSTEM = 2, 21


def expect_error(fn, status, *words):
    name = f"refused with status {status} and {', '.join(words)}"
    try:
        fn()
    except AotcError as e:
        expect(name, e.status == status and all(w in e.message for w in words), str(e))
        return
    expect(name, False, "the call succeeded")


def fixture_checks(path):
    lib = Library(path)
    assert lib.lib.aotc_abi_minor_version() >= 2, "minor version"
    expect("the CPU fixture says AOTC_DEVICE_CPU", lib.device() == DEVICE_CPU, lib.device())
    model = Model(lib)
    ctx = Context(model)
    inputs = [torch.ones(i["shape"], dtype=getattr(torch, i["dtype"])) for i in model.inputs]
    outputs = [torch.zeros(o["shape"]) for o in model.outputs]
    ctx.run(inputs, outputs)  # host memory: fine
    run = ctx.prepare(inputs, outputs)
    for array in ctx.prepared:
        # Device memory on a CPU model, and a memory kind that does not exist: refused.
        array[0].memory = 1
        expect_error(run, ERR_INVALID_ARGUMENT, "AOTC_MEMORY_DEVICE", "CPU")
        array[0].memory = 7
        expect_error(run, ERR_INVALID_ARGUMENT, "memory is 7")
        array[0].memory = 0
    run()
    expect_error(lambda: ctx.set_stream(1234), ERR_INVALID_ARGUMENT, "CPU")
    expect_error(ctx.stream, ERR_INVALID_ARGUMENT, "CPU")
    expect_error(lambda: Context(model, stream=4096), ERR_INVALID_ARGUMENT, "cuda_stream")
    ctx.destroy()
    model.destroy()


def cuda_model_checks(aotc, workdir):
    os.makedirs(workdir, exist_ok=True)
    torch.manual_seed(0)
    module = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval())
    pt, so = os.path.join(workdir, "tiny.pt"), os.path.join(workdir, "tiny_cuda.so")
    torch.jit.save(module, pt)
    result = run_aotc(aotc, pt, so, ["input:3x8"], target="cuda")
    if not expect("aotc --target cuda compiles the model", result.returncode == 0, result.stderr[-4000:]):
        return
    symbols = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True).stdout
    for name in ["aotc_model_device", "aotc_context_set_cuda_stream", "aotc_context_cuda_stream"]:
        expect(f"the --target cuda library exports {name}", name in symbols)
    lib = Library(so)
    expect("a --target cuda model says AOTC_DEVICE_CUDA", lib.device() == DEVICE_CUDA, lib.device())
    try:
        model = Model(lib)
    except AotcError as e:
        expect("without a GPU, aotc_model_create fails with AOTC_ERR_SYSTEM and CUDA's reason",
               e.status == ERR_SYSTEM and "CUDA" in e.message, str(e))
        print(f"no GPU: aotc_model_create says: {e.message}")
        return
    ctx = Context(model)
    x = torch.randn(3, 8)
    y = torch.full((3, 4), float("nan"))
    ctx.run([x], [y])
    want = module(x)
    expect("the CUDA model's output matches torch's", torch.allclose(y, want, rtol=1e-5, atol=1e-6), f"{y} vs {want}")
    ctx.destroy()
    model.destroy()
    host_memory_checks(aotc, workdir)
    torch.manual_seed(1)
    layers = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 40),
                                 torch.nn.ReLU(), torch.nn.Linear(40, 72))
    pt, so = os.path.join(workdir, "mlp.pt"), os.path.join(workdir, "mlp_cuda.so")
    torch.jit.save(torch.jit.script(layers.eval()), pt)
    result = run_aotc(aotc, pt, so, ["input:37x64"], target="cuda")
    if expect("aotc --target cuda compiles the MLP", result.returncode == 0, result.stderr[-4000:]):
        tuning_cache_checks(so)


class _TwoWays(torch.nn.Module):
    """An input of odd size over a megabyte, and a small one; exact arithmetic."""

    def forward(self, big, small):
        return big * 2.0 + 1.0, small - 1.0


def host_memory_checks(aotc, workdir):
    module = torch.jit.script(_TwoWays())
    pt, so = os.path.join(workdir, "two_ways.pt"), os.path.join(workdir, "two_ways_cuda.so")
    torch.jit.save(module, pt)
    result = run_aotc(aotc, pt, so, ["big:3x100003", "small:5"], target="cuda")
    if not expect("aotc --target cuda compiles the host-memory model", result.returncode == 0, result.stderr[-4000:]):
        return
    model = Model(Library(so))
    ctx = Context(model)
    for run in range(4):  # pageable, pinned, and the two mixed; new data every run
        big, small = torch.randn(3, 100003), torch.randn(5)
        outs = [torch.full((3, 100003), float("nan")), torch.full((5,), float("nan"))]
        if run in (1, 2):
            big, small = big.pin_memory(), small.pin_memory()
        if run in (1, 3):
            outs = [o.pin_memory() for o in outs]
        ctx.run([big, small], outs)
        want = module(big, small)
        expect(f"host run {run} (pinned inputs {run in (1, 2)}, pinned outputs {run in (1, 3)}) is exact",
               torch.equal(outs[0], want[0]) and torch.equal(outs[1], want[1]))
    # A device pointer marked as host memory: refused, never read by the host.
    big_gpu = torch.randn(3, 100003, device="cuda")
    outs = [torch.empty(3, 100003), torch.empty(5)]
    run = ctx.prepare([big_gpu, torch.randn(5)], outs)
    ctx.prepared[0][0].memory = 0
    expect_error(run, ERR_INVALID_ARGUMENT, "input 0", "device memory", "AOTC_MEMORY_DEVICE")
    run = ctx.prepare([torch.randn(3, 100003), torch.randn(5)], [torch.empty(3, 100003, device="cuda"), outs[1]])
    ctx.prepared[1][0].memory = 0
    expect_error(run, ERR_INVALID_ARGUMENT, "output 0", "device memory")
    big, small = torch.randn(3, 100003), torch.randn(5)
    ctx.run([big, small], outs)
    expect("the context runs after the refusals", torch.equal(outs[0], module(big, small)[0]))
    ctx.destroy()
    model.destroy()


def _stderr_of(fn):
    """fn()'s result and what it wrote to the process's standard error (the C runtime's too)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return result, f.read().decode(errors="replace")


def tuning_cache_checks(so):
    """The GEMM choices that a model library's contexts share per device (gemm_tuning.cpp):
    three contexts of one model, the third with AOTC_CUDA_TUNING_CACHE=0. so: a --target
    cuda library with GEMMs, not loaded in this process before (AOTC_CUDA_TRACE, which says
    how many candidates a context's tuning run timed, is read once per library)."""
    saved = {k: os.environ.get(k) for k in ("AOTC_CUDA_TRACE", "AOTC_CUDA_TUNING_CACHE")}
    os.environ["AOTC_CUDA_TRACE"] = "1"
    model = Model(Library(so))
    torch.manual_seed(2)
    inputs = [torch.randn(i["shape"]) if i["dtype"] == "float32" else torch.zeros(i["shape"], dtype=getattr(
        torch, i["dtype"])) for i in model.inputs]
    timed, outputs, times = [], [], []
    for cache in ("1", "1", "0"):
        os.environ["AOTC_CUDA_TUNING_CACHE"] = cache
        start = time.perf_counter()
        ctx, trace = _stderr_of(lambda: Context(model))
        times.append((time.perf_counter() - start) * 1e3)
        found = re.search(r"GEMM tuning: \d+ shapes, (\d+) candidates timed", trace)
        timed.append(int(found.group(1)) if found else -1)
        outs = [torch.full(o["shape"], float("nan"), dtype=getattr(torch, o["dtype"])) for o in model.outputs]
        ctx.run(inputs, outs)
        outputs.append(outs)
        ctx.destroy()
    model.destroy()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    name = os.path.basename(so)
    print(f"{name}: candidates timed {timed}, context creation {', '.join(f'{t:.0f}' for t in times)} ms")
    expect(f"{name}: the first context times GEMM candidates", timed[0] > 0, timed)
    expect(f"{name}: a second context takes the first's choices (no candidate timed)", timed[1] == 0, timed)
    expect(f"{name}: the second context's outputs are the first's, bit for bit",
           all(torch.equal(a, b) for a, b in zip(outputs[0], outputs[1])))
    expect(f"{name}: AOTC_CUDA_TUNING_CACHE=0 times the candidates again", timed[2] > 0, timed)


def cli_checks(aotc, workdir):
    pt, so = os.path.join(workdir, "tiny.pt"), os.path.join(workdir, "cli.so")
    base = [aotc, pt, "-o", so, "--input", "input:3x8"]
    if os.path.exists(so):  # left by an earlier run: each refused call must write none
        os.remove(so)
    cases = [  # (options, words of the error, exit status: 2 usage, 1 compile error)
        (["--target", "tpu"], "--target must be 'cpu' or 'cuda'", 2),
        (["--target", "cuda", "--cuda-arch", "sm_61"], "compute capability 7.0 or newer", 2),
        (["--target", "cuda", "--cuda-arch", "90"], "expected sm_NN", 2),
        (["--target", "cuda", "--precision", "fp64"], "--precision must be", 2),
        (["--target", "cuda", "--precision", "bf16", "--cuda-arch", "sm_75"], "compute capability 8.0", 1),
        (["--cuda-arch", "sm_80"], "need --target cuda", 2),
        (["--target", "cuda", "--target-triple", "aarch64-linux-gnu"], "cannot be combined", 2),
    ]
    for extra, words, status in cases:
        result = subprocess.run(base + extra, capture_output=True, text=True)
        expect(f"aotc {' '.join(extra)}: status {status}, {words!r}, no output",
               result.returncode == status and words in result.stderr and not os.path.exists(so),
               f"status {result.returncode}, {result.stderr.strip()}")


def main():
    fixture, aotc, workdir = sys.argv[1:4]
    fixture_checks(fixture)
    cuda_model_checks(aotc, workdir)
    cli_checks(aotc, workdir)
    return finish("the C ABI's CUDA additions behave")


if __name__ == "__main__":
    sys.exit(main())
