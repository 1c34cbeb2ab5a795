"""aotc.load runs a compiled library from Python: numpy in -> numpy out, torch in -> torch
out, inputs by position or by name, within a relative L2 error of 1e-4 of torch eager. A
contiguous input is passed by pointer (no copy), a non-contiguous one is copied. Every
wrong call (shape, dtype, count, names, numpy+torch mix, device) is refused before the run
with an error naming the problem; missing files, non-libraries and non-aotc libraries are
clear errors. Two Python threads share a model; close() releases it; a library built with
--weights file loads; a library rebuilt at the same path loads as the new one.

usage: PYTHONPATH=python test_load.py --workdir DIR   (CPU only; the CUDA paths need a GPU)
"""
import ctypes
import gc
import os
import shutil
import sys
import threading
import warnings

import numpy as np
import torch

import aotc
from aotc import _paths

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import arg_parser, close_to, compile_module, expect, finish, raises, rel_l2  # noqa: E402


class Mlp(torch.nn.Module):
    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.a = torch.nn.Linear(37, 129)
        self.b = torch.nn.Linear(129, 11)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Lookup(torch.nn.Module):
    """int64 ids and a bool mask in; float32, int64 and bool out."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.emb = torch.nn.Embedding(23, 13)
        self.proj = torch.nn.Linear(13, 5)

    def forward(self, ids, mask):
        e = self.emb(ids)
        e = torch.where(mask.unsqueeze(-1), e, torch.zeros_like(e))
        return self.proj(e), mask.long().sum(dim=1) + ids.sum(dim=1), ~mask


class Two(torch.nn.Module):
    """Two float inputs, two outputs (the CUDA target is float32 only)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.lin = torch.nn.Linear(19, 7)

    def forward(self, a, b):
        return self.lin(a * b), a - b


def compile_model(module, workdir, name, inputs, *extra):
    return compile_module(_paths.aotc_executable(), module, os.path.join(workdir, name + ".so"), inputs, extra=extra)


def main():
    args = arg_parser(aotc=False).parse_args()
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)

    mlp_module = Mlp(0)
    lookup_module = Lookup()
    mlp_so = compile_model(mlp_module, workdir, "mlp", ["x:3x37"])
    lookup_so = compile_model(lookup_module, workdir, "lookup", ["ids:3x7:int64", "mask:3x7:bool"])
    ext_so = compile_model(Mlp(2), workdir, "mlp_ext", ["x:3x37"], "--weights", "file")
    ext_module = Mlp(2)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 37)).astype(np.float32)
    ids = rng.integers(0, 23, (3, 7)).astype(np.int64)
    mask = rng.integers(0, 2, (3, 7)).astype(bool)
    with torch.no_grad():
        want_mlp = mlp_module(torch.from_numpy(x)).numpy()
        want_lookup = [t.numpy() for t in lookup_module(torch.from_numpy(ids), torch.from_numpy(mask))]

    # ---- what a loaded model says about itself ----
    m = aotc.load(mlp_so, threads=1)
    expect("inputs", m.inputs == [aotc.TensorSpec("x", "float32", (3, 37))], m.inputs)
    expect("outputs", [(o.dtype, o.shape) for o in m.outputs] == [("float32", (3, 11))], m.outputs)
    expect("device and path", m.device == "cpu" and m.path == mlp_so, (m.device, m.path))
    # The aotc that built it: the package's version, then git describe in a checkout's build.
    expect("aotc_version", isinstance(m.aotc_version, str)
           and m.aotc_version.split(" ")[0] == aotc.__version__, m.aotc_version)
    expect("TensorSpec fields", m.inputs[0].name == "x" and m.inputs[0].dtype == "float32"
           and m.inputs[0].shape == (3, 37), m.inputs[0])

    # ---- numpy and torch ----
    y = m(x)
    expect("numpy in -> numpy out", isinstance(y, np.ndarray) and y.dtype == np.float32, type(y))
    expect("mlp matches torch (numpy)", close_to(y, want_mlp), rel_l2(y, want_mlp))
    yt = m(torch.from_numpy(x))
    expect("torch in -> torch out", isinstance(yt, torch.Tensor) and yt.dtype == torch.float32, type(yt))
    expect("mlp matches torch (torch)", close_to(yt.numpy(), want_mlp), rel_l2(yt.numpy(), want_mlp))
    expect("outputs are fresh each call", m(x) is not m(x) and not np.shares_memory(m(x), y))
    out = m.run([x])
    expect("run() returns a list", isinstance(out, list) and len(out) == 1 and close_to(out[0], want_mlp), out)
    expect("keyword input", close_to(m(x=x), want_mlp))
    expect("run() with a dict", close_to(m.run({"x": x})[0], want_mlp))

    lk = aotc.load(lookup_so, threads=2)
    expect("lookup inputs", [(s.name, s.dtype, s.shape) for s in lk.inputs]
           == [("ids", "int64", (3, 7)), ("mask", "bool", (3, 7))], lk.inputs)
    expect("lookup outputs", [(s.dtype, s.shape) for s in lk.outputs]
           == [("float32", (3, 7, 5)), ("int64", (3,)), ("bool", (3, 7))], lk.outputs)
    got = lk(ids, mask)
    expect("several outputs: a tuple", isinstance(got, tuple) and len(got) == 3, type(got))
    expect("int64 and bool inputs: float output", close_to(got[0], want_lookup[0]), rel_l2(got[0], want_lookup[0]))
    expect("int64 output exact", got[1].dtype == np.int64 and np.array_equal(got[1], want_lookup[1]), got[1])
    expect("bool output exact", got[2].dtype == np.bool_ and np.array_equal(got[2], want_lookup[2]), got[2])
    got = lk(mask=torch.from_numpy(mask), ids=torch.from_numpy(ids))
    expect("keywords in any order, torch out",
           all(isinstance(g, torch.Tensor) for g in got) and close_to(got[0].numpy(), want_lookup[0])
           and torch.equal(got[1], torch.from_numpy(want_lookup[1]))
           and got[2].dtype == torch.bool and torch.equal(got[2], torch.from_numpy(want_lookup[2])), got)
    got = lk(ids, mask=mask)
    expect("positional and keyword mixed", close_to(got[0], want_lookup[0]))
    got = lk.run([ids, mask])
    expect("run() with several outputs: a list", isinstance(got, list) and len(got) == 3)

    # ---- copies: none for contiguous inputs, one for non-contiguous ----
    t = torch.from_numpy(x.copy())
    m(t)
    expect("contiguous torch tensor passed by pointer", m._last_input_pointers()[0] == t.data_ptr(),
           (m._last_input_pointers(), t.data_ptr()))
    m(x)
    expect("contiguous numpy array passed by pointer", m._last_input_pointers()[0] == x.ctypes.data)
    wide = np.zeros((3, 74), np.float32)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    y = m(strided)
    expect("non-contiguous numpy input", close_to(y, want_mlp), rel_l2(y, want_mlp))
    expect("non-contiguous numpy input is copied", m._last_input_pointers()[0] != strided.ctypes.data)
    tt = torch.from_numpy(np.ascontiguousarray(x.T)).t()
    expect("transposed torch input is not contiguous", not tt.is_contiguous())
    y = m(tt)
    expect("non-contiguous torch input", close_to(y.numpy(), want_mlp), rel_l2(y.numpy(), want_mlp))
    y = m(x.astype(">f4"))
    expect("big-endian numpy input converted", close_to(y, want_mlp), rel_l2(y, want_mlp))
    y = m(torch.nn.Parameter(torch.from_numpy(x.copy())))
    expect("nn.Parameter input", close_to(y.detach().numpy(), want_mlp))

    # ---- wrong calls: refused before the run, naming the problem ----
    raises("wrong shape", lambda: m(np.zeros((3, 38), np.float32)), aotc.AotcError,
           "input 'x'", "expected float32 [3, 37], got float32 [3, 38]", status="AOTC_ERR_WRONG_SHAPE")
    raises("wrong rank", lambda: m(np.zeros((111,), np.float32)), aotc.AotcError,
           "input 'x'", "got float32 [111]", status="AOTC_ERR_WRONG_SHAPE")
    raises("wrong dtype (numpy)", lambda: m(x.astype(np.float64)), aotc.AotcError,
           "input 'x'", "expected float32 [3, 37], got float64 [3, 37]", status="AOTC_ERR_WRONG_DTYPE")
    raises("wrong dtype (torch)", lambda: m(torch.zeros(3, 37, dtype=torch.float16)), aotc.AotcError,
           "input 'x'", "got float16 [3, 37]", status="AOTC_ERR_WRONG_DTYPE")
    raises("wrong dtype (int32 ids)", lambda: lk(ids.astype(np.int32), mask), aotc.AotcError,
           "input 'ids'", "expected int64 [3, 7], got int32 [3, 7]", status="AOTC_ERR_WRONG_DTYPE")
    raises("too few inputs", lambda: lk(ids), aotc.AotcError, "takes 2 input(s)", "got 1",
           status="AOTC_ERR_WRONG_COUNT")
    raises("too many inputs", lambda: m(x, x), aotc.AotcError, "takes 1 input(s)", "got 2",
           status="AOTC_ERR_WRONG_COUNT")
    raises("run() with a wrong count", lambda: m.run([]), aotc.AotcError, "got 0", status="AOTC_ERR_WRONG_COUNT")
    raises("unknown keyword", lambda: lk(ids, mask=mask, bogus=mask), TypeError, "'bogus'", "'ids', 'mask'")
    raises("missing keyword", lambda: lk(ids=ids), TypeError, "missing", "'mask'")
    raises("input given twice", lambda: lk(ids, mask, ids=ids), TypeError, "'ids'", "both")
    raises("numpy then torch", lambda: lk(ids, torch.from_numpy(mask)), TypeError, "'mask'", "numpy", "torch")
    raises("torch then numpy", lambda: lk(torch.from_numpy(ids), mask), TypeError, "'mask'", "numpy", "torch")
    raises("not an array", lambda: m(x.tolist()), TypeError, "input 'x'", "list")
    raises("tensor on another device", lambda: m(torch.empty(3, 37, device="meta")), aotc.AotcError,
           "input 'x'", "meta", status="AOTC_ERR_INVALID_ARGUMENT")
    expect("a refused call leaves the model usable", close_to(m(x), want_mlp))

    # ---- files that are not models ----
    missing = os.path.join(workdir, "no_such_model.so")
    raises("missing file", lambda: aotc.load(missing), FileNotFoundError, missing)
    text = os.path.join(workdir, "not_a_library.so")
    with open(text, "w") as f:
        f.write("hello\n")
    raises("not a library", lambda: aotc.load(text), ValueError, text, "not a shared library")
    other = os.path.join(os.path.dirname(np.__file__), "_core", "_multiarray_umath" + _ext_suffix())
    if not os.path.exists(other):
        other = _paths.torch_backend_library()
    raises("a library that is not aotc's", lambda: aotc.load(other), ValueError, other, "not an aotc model")
    raises("a directory", lambda: aotc.load(workdir), IsADirectoryError, workdir)
    raises("threads=0", lambda: aotc.load(mlp_so, threads=0), ValueError, "threads")
    raises("cuda_graphs=0", lambda: aotc.load(mlp_so, cuda_graphs=0), ValueError, "cuda_graphs")
    # A CPU model ignores cuda_graphs (the C ABI accepts any count for it).
    with aotc.load(mlp_so, threads=1, cuda_graphs=3) as m3:
        expect("cuda_graphs on a CPU model: runs and matches", m3.cuda_graphs == 3 and close_to(m3(x), want_mlp))
    raises("weights= for embedded weights", lambda: aotc.load(mlp_so, weights=mlp_so), ValueError, "embedded")

    # ---- --weights file ----
    with torch.no_grad():
        want_ext = ext_module(torch.from_numpy(x)).numpy()
    with aotc.load(ext_so, threads=1) as e:
        expect("--weights file loads (beside the .so)", e.weights == ext_so[:-3] + ".weights"
               and close_to(e(x), want_ext), (e.weights, rel_l2(e(x), want_ext)))
    moved = os.path.join(workdir, "moved.weights")
    shutil.copyfile(ext_so[:-3] + ".weights", moved)
    with aotc.load(ext_so, threads=1, weights=moved) as e:
        expect("--weights file with weights=", e.weights == moved and close_to(e(x), want_ext))
    bad = os.path.join(workdir, "bad.weights")
    data = bytearray(open(moved, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(bad, "wb").write(bytes(data))
    raises("wrong weights: the library's error", lambda: aotc.load(ext_so, weights=bad), aotc.AotcError,
           "AOTC_ERR_INVALID_ARGUMENT", "checksum")
    raises("missing weights file", lambda: aotc.load(ext_so, weights=missing), FileNotFoundError, missing)
    lone = os.path.join(workdir, "lone")
    os.makedirs(lone, exist_ok=True)
    shutil.copyfile(ext_so, os.path.join(lone, "mlp_ext.so"))
    raises("weights not beside the .so", lambda: aotc.load(os.path.join(lone, "mlp_ext.so")), FileNotFoundError,
           "mlp_ext.weights", "weights=")

    # ---- a library rebuilt at the same path ----
    path = os.path.join(workdir, "rebuilt.so")
    shutil.copyfile(mlp_so, path + ".tmp")
    os.replace(path + ".tmp", path)
    first = aotc.load(path, threads=1)
    os.replace(compile_model(Mlp(5), workdir, "mlp5", ["x:3x37"]), path + ".tmp")
    os.replace(path + ".tmp", path)
    second = aotc.load(path, threads=1)
    with torch.no_grad():
        want5 = Mlp(5)(torch.from_numpy(x)).numpy()
    expect("a rebuilt library loads as the new one", close_to(second(x), want5) and close_to(first(x), want_mlp),
           (rel_l2(second(x), want5), rel_l2(first(x), want_mlp)))
    first.close()
    second.close()

    # ---- threads: one context each, the model shared ----
    xs = [rng.standard_normal((3, 37)).astype(np.float32) for _ in range(2)]
    with torch.no_grad():
        wants = [mlp_module(torch.from_numpy(v)).numpy() for v in xs]
    results = [None, None]
    start = threading.Barrier(2)

    def worker(k):
        start.wait()
        ok = True
        for i in range(300):
            ok &= close_to(m(xs[k]), wants[k])
            g = lk(ids, mask)
            ok &= np.array_equal(g[1], want_lookup[1])
        results[k] = ok

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect("two threads, correct results", results == [True, True], results)
    gc.collect()
    expect("contexts of ended threads are destroyed", len(m._state.slots) == 1, len(m._state.slots))

    # ---- fork: the child must load again ----
    if hasattr(os, "fork"):
        read_end, write_end = os.pipe()
        with warnings.catch_warnings():  # "multi-threaded, fork() may deadlock": the child only raises
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child
            try:
                m(x)
                msg = b"ran"
            except aotc.AotcError as e:
                msg = str(e).encode()
            os.write(write_end, msg)
            os._exit(0)
        os.close(write_end)
        msg = os.read(read_end, 4096).decode()
        os.waitpid(pid, 0)
        expect("a model loaded before fork() is refused in the child", "fork" in msg, msg)
        expect("the parent's model still runs after fork()", close_to(m(x), want_mlp))

    # ---- close ----
    m.close()
    raises("call after close()", lambda: m(x), aotc.AotcError, "closed", mlp_so)
    m.close()
    expect("close() twice is fine", m.closed)
    with aotc.load(mlp_so, threads=1) as c:
        c(x)
    raises("call after the with block", lambda: c(x), aotc.AotcError, "closed")

    def ended_thread_then_close():
        model = aotc.load(lookup_so, threads=1)
        t = threading.Thread(target=lambda: model(ids, mask))
        t.start()
        t.join()
        model(ids, mask)
        model.close()
        return model._state.model is None and not model._state.slots
    expect("close() destroys every context, then the model", ended_thread_then_close())
    g = aotc.load(lookup_so, threads=1)
    g(ids, mask)
    state = g._state
    del g
    gc.collect()
    expect("garbage collection releases the model", state.model is None and not state.slots)
    lk.close()

    check_cuda(workdir, mlp_module, x)

    return finish("aotc.load works")


def check_cuda(workdir, mlp_module, x):
    """CUDA libraries (aotc --target cuda): CUDA tensors in and out, runs ordered on torch's
    current stream without waiting for the GPU, CPU inputs refused."""
    if not torch.cuda.is_available():
        print("skip CUDA libraries: no GPU here (torch.cuda.is_available() is False)")
        return
    so = compile_model(mlp_module, workdir, "mlp_cuda", ["x:3x37"], "--target", "cuda")
    two_so = compile_model(Two(), workdir, "two_cuda", ["a:5x19", "b:5x19"], "--target", "cuda")
    dev = torch.device("cuda", torch.cuda.current_device())
    with torch.no_grad():
        want = mlp_module(torch.from_numpy(x)).numpy()
    m = aotc.load(so, threads=1)
    expect("CUDA: device", m.device == "cuda", m.device)
    xc = torch.from_numpy(x).to(dev)
    y = m(xc)
    expect("CUDA: output is a CUDA tensor", isinstance(y, torch.Tensor) and y.device == dev, y.device)
    expect("CUDA: matches torch", close_to(y.cpu().numpy(), want), rel_l2(y.cpu().numpy(), want))
    m(xc)
    expect("CUDA: device tensor passed by pointer", m._last_input_pointers()[0] == xc.data_ptr())
    raises("CUDA: CPU tensor refused", lambda: m(torch.from_numpy(x)), aotc.AotcError, "input 'x'", "cpu",
           status="AOTC_ERR_INVALID_ARGUMENT")
    raises("CUDA: numpy array refused", lambda: m(x), aotc.AotcError, "input 'x'", "numpy",
           status="AOTC_ERR_INVALID_ARGUMENT")
    raises("CUDA: wrong shape", lambda: m(torch.zeros(3, 36, device=dev)), aotc.AotcError, "[3, 36]",
           status="AOTC_ERR_WRONG_SHAPE")

    # Ordered on torch's current stream (a side stream here), and no wait for the GPU: the
    # call returns while the stream is still busy with work queued before it (a spin kernel,
    # then the copy that fills the input: a run not ordered after it would read zeros).
    side = torch.cuda.Stream(device=dev)
    stream_ptr = ctypes.c_void_p()
    with torch.cuda.stream(side):
        xin = torch.zeros_like(xc)
        z = m(xin) * 2  # the side stream's memory pool warm: no cudaMalloc below
        side.synchronize()
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time
        xin.copy_(xc)
        y = m(xin)
        busy_after_call = not side.query()
        z = y * 2
        m._state.lib.cdll.aotc_context_cuda_stream(ctypes.c_void_p(m._tls.ctx.slot.handle), ctypes.byref(stream_ptr))
    expect("CUDA: the run goes on torch's current stream", stream_ptr.value == side.cuda_stream,
           (stream_ptr.value, side.cuda_stream))
    expect("CUDA: the call does not wait for the GPU", busy_after_call)
    side.synchronize()
    expect("CUDA: ordered with torch's work on a side stream", close_to((z / 2).cpu().numpy(), want))
    y = m(xc)  # back on the default stream (CUDA's legacy stream, passed as cudaStreamLegacy)
    m._state.lib.cdll.aotc_context_cuda_stream(ctypes.c_void_p(m._tls.ctx.slot.handle), ctypes.byref(stream_ptr))
    expect("CUDA: torch's default stream is passed as cudaStreamLegacy", stream_ptr.value == 1, stream_ptr.value)
    expect("CUDA: on the default stream", close_to(y.cpu().numpy(), want))

    two = aotc.load(two_so, threads=1)
    a = torch.randn(5, 19, device=dev)
    b = torch.randn(5, 19, device=dev)
    with torch.no_grad():
        wants = [t.cpu().numpy() for t in Two().to(dev)(a, b)]
    got = two(b=b, a=a)
    expect("CUDA: two inputs by name, a tuple of CUDA tensors",
           isinstance(got, tuple) and all(g.device == dev for g in got)
           and all(close_to(g.cpu().numpy(), w) for g, w in zip(got, wants)))
    results = [None, None]

    def worker(k):
        ok = True
        for _ in range(50):
            ok &= close_to(m(xc).cpu().numpy(), want)
        results[k] = ok
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect("CUDA: two threads, correct results", results == [True, True], results)
    m.close()
    two.close()
    expect("CUDA: close() releases the model", m._state.model is None and two._state.model is None)
    raises("CUDA: call after close()", lambda: m(xc), aotc.AotcError, "closed")


def _ext_suffix():
    import sysconfig
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


if __name__ == "__main__":
    sys.exit(main())
