"""aotc.load runs a library compiled with dynamic dims (aotc --dim B=1..4 --dim S=1..32):
the specs name the dims (("B", "S", 16)), Model.dims gives their ranges and repr shows
both; numpy and torch inputs of every shape in range run, size 1 and the largest included,
and give outputs of the shape those inputs make, within a relative L2 error of 1e-4 of
torch eager. Shapes out of range, of the wrong rank or fixed size, and a dim name with two
sizes are refused before the run (AotcError naming the input, the dim, the size and the
range). A contiguous input is still passed by pointer; two threads run different shapes at
once; a dim that must be a multiple of a step says so; a static model is unchanged.

usage: PYTHONPATH=python test_load_dynamic.py --workdir DIR
Exits 77 (skipped) without torch or with an aotc that has no --dim.
"""
import ctypes
import os
import subprocess
import sys
import threading

import numpy as np

try:
    import torch
except ImportError:
    torch = None

import aotc
from aotc import _paths

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import SKIP, arg_parser, close_to, compile_module, expect, finish, raises, rel_l2  # noqa: E402


def make_modules():
    class Pool(torch.nn.Module):
        """x [B, S, 16] and y [B, 16] share B; S is reduced (mean and max) in the first
        output, kept in the second and folded into the first dim in the third."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Linear(16, 24)
            self.b = torch.nn.Linear(24, 8)
            self.c = torch.nn.Linear(16, 8)

        def forward(self, x, y):
            h = self.b(torch.relu(self.a(x)))
            pooled = h.mean(dim=1) + self.c(y) * h.amax(dim=1)
            return pooled, h, h.reshape(-1, 8)

    class Pairs(torch.nn.Module):
        """Splits S in pairs: S must be even."""

        def forward(self, x):
            return x.reshape(x.shape[0], -1, 32).sum(dim=2)

    return Pool(), Pairs()


def compile_model(module, workdir, name, inputs, *extra):
    return compile_module(_paths.aotc_executable(), module, os.path.join(workdir, name + ".so"), inputs, extra=extra)


def reference(module, *arrays):
    with torch.no_grad():
        out = module(*[torch.from_numpy(a) for a in arrays])
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def main():
    args = arg_parser(aotc=False).parse_args()
    if torch is None:
        print("skip: torch is not installed")
        return SKIP
    help_text = subprocess.run([_paths.aotc_executable(), "--help"], capture_output=True, text=True).stdout
    if "--dim" not in help_text:
        print(f"skip: {_paths.aotc_executable()} has no --dim")
        return SKIP
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)

    pool, pairs = make_modules()
    dims = ["--dim", "B=1..4", "--dim", "S=1..32"]
    pool_so = compile_model(pool, workdir, "pool", ["x:BxSx16", "y:Bx16"], *dims)
    static_so = compile_model(pool, workdir, "pool_static", ["x:2x5x16", "y:2x16"])
    pairs_so = compile_model(pairs, workdir, "pairs", ["x:BxSx16"], "--dim", "B=1..4", "--dim", "S=2..32")
    rng = np.random.default_rng(0)

    def sample(b, s):
        return rng.standard_normal((b, s, 16)).astype(np.float32), rng.standard_normal((b, 16)).astype(np.float32)

    # ---- what a loaded model says about itself ----
    m = aotc.load(pool_so, threads=1)
    expect("inputs name their dims", m.inputs == [aotc.TensorSpec("x", "float32", ("B", "S", 16)),
                                                  aotc.TensorSpec("y", "float32", ("B", 16))], m.inputs)
    expect("outputs name their dims (an expression where dims combine)",
           [(o.dtype, o.shape) for o in m.outputs]
           == [("float32", ("B", 8)), ("float32", ("B", "S", 8)), ("float32", ("B*S", 8))], m.outputs)
    expect("dims: name -> (min, max)", m.dims == {"B": (1, 4), "S": (1, 32)} and list(m.dims) == ["B", "S"],
           m.dims)
    expect("DimRange attributes", m.dims["S"].min == 1 and m.dims["S"].max == 32 and m.dims["S"].multiple_of == 1
           and repr(m.dims["B"]) == "(1, 4)", (m.dims["S"], vars(m.dims["S"])))
    expect("TensorSpec.dynamic", all(s.dynamic for s in m.inputs + m.outputs), m.inputs + m.outputs)
    text = repr(m)
    expect("repr shows the names and ranges",
           all(s in text for s in ("x: float32 [B, S, 16]", "y: float32 [B, 16]", "float32 [B, S, 8]",
                                   "float32 [B*S, 8]", "B=1..4", "S=1..32")), text)

    # ---- every shape in range, numpy; size 1 and the largest included ----
    worst = 0.0
    bad = []
    for b in range(1, 5):
        for s in range(1, 33):
            x, y = sample(b, s)
            got = m(x, y)
            want = reference(pool, x, y)
            worst = max([worst] + [rel_l2(g, w) for g, w in zip(got, want)])
            if not (isinstance(got, tuple) and all(isinstance(g, np.ndarray) and close_to(g, w)
                                                   for g, w in zip(got, want))):
                bad.append((b, s))
    expect(f"numpy: all 128 shapes match torch (worst relative L2 {worst:.1e})", not bad, bad[:8])
    x, y = sample(3, 17)
    got = m(x, y)
    expect("output shapes follow the inputs", [g.shape for g in got] == [(3, 8), (3, 17, 8), (51, 8)],
           [g.shape for g in got])
    lib = m._state.lib.cdll
    dims_out = (ctypes.c_int64 * 8)()
    lib.aotc_context_output_dims(ctypes.c_void_p(m._tls.ctx.slot.handle), ctypes.c_size_t(2), dims_out)
    expect("the library wrote the shape returned (aotc_context_output_dims)", tuple(dims_out[:2]) == (51, 8),
           tuple(dims_out[:2]))

    # ---- torch, at several shapes and back and forth ----
    ok = True
    for b, s in [(1, 1), (4, 32), (2, 9), (4, 32), (1, 1), (1, 32), (4, 1)]:
        x, y = sample(b, s)
        got = m(torch.from_numpy(x), torch.from_numpy(y))
        want = reference(pool, x, y)
        ok &= all(isinstance(g, torch.Tensor) and g.dtype == torch.float32 and close_to(g.numpy(), w)
                  for g, w in zip(got, want))
    expect("torch in -> torch out at (1,1), (4,32), (2,9), (1,32), (4,1)", ok)
    x, y = sample(2, 6)
    want = reference(pool, x, y)
    got = m(y=torch.from_numpy(y), x=torch.from_numpy(x))
    expect("torch inputs by name", all(close_to(g.numpy(), w) for g, w in zip(got, want)))
    got = m.run({"x": x, "y": y})
    expect("run() with a dict", isinstance(got, list) and all(close_to(g, w) for g, w in zip(got, want)))

    # ---- copies: none for contiguous inputs, one for non-contiguous ----
    x, y = sample(3, 11)
    want = reference(pool, x, y)
    m(x, y)
    expect("contiguous numpy input passed by pointer (dynamic shape)",
           m._last_input_pointers() == [x.ctypes.data, y.ctypes.data], (m._last_input_pointers(), x.ctypes.data))
    tx, ty = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    m(tx, ty)
    expect("contiguous torch input passed by pointer (dynamic shape)",
           m._last_input_pointers() == [tx.data_ptr(), ty.data_ptr()])
    wide = np.zeros((3, 22, 16), np.float32)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    got = m(strided, y)
    expect("non-contiguous numpy input copied, right result",
           m._last_input_pointers()[0] != strided.ctypes.data and all(close_to(g, w) for g, w in zip(got, want)))
    tt = torch.from_numpy(np.ascontiguousarray(x.transpose(1, 0, 2))).transpose(0, 1)
    got = m(tt, torch.from_numpy(y))
    expect("non-contiguous torch input", not tt.is_contiguous() and all(close_to(g.numpy(), w)
                                                                       for g, w in zip(got, want)))

    # ---- wrong shapes: refused before the run, naming input, dim, size and range ----
    shape = "AOTC_ERR_WRONG_SHAPE"
    x, y = sample(2, 5)
    raises("B above its range", lambda: m(*sample(5, 3)), aotc.AotcError,
           "input 'x'", "B = 5", "range 1..4", "[B, S, 16]", status=shape)
    raises("S above its range", lambda: m(*sample(2, 33)), aotc.AotcError,
           "input 'x'", "S = 33", "range 1..32", status=shape)
    raises("S below its range (0)", lambda: m(np.zeros((2, 0, 16), np.float32), y), aotc.AotcError,
           "input 'x'", "S = 0", "range 1..32", status=shape)
    raises("wrong rank", lambda: m(np.zeros((2, 16), np.float32), y), aotc.AotcError,
           "input 'x'", "expected float32 [B, S, 16], got float32 [2, 16]", "rank", status=shape)
    raises("wrong fixed size", lambda: m(np.zeros((2, 5, 15), np.float32), y), aotc.AotcError,
           "input 'x'", "got float32 [2, 5, 15]", "fixed at 16", status=shape)
    raises("shared dim with two sizes (numpy)", lambda: m(x, np.zeros((3, 16), np.float32)), aotc.AotcError,
           "input 'y'", "B = 3", "input 'x'", "B = 2", status=shape)
    raises("shared dim with two sizes (torch)", lambda: m(torch.zeros(4, 5, 16), torch.zeros(1, 16)),
           aotc.AotcError, "input 'y'", "B = 1", "input 'x'", "B = 4", status=shape)
    raises("B out of range (torch)", lambda: m(torch.zeros(9, 5, 16), torch.zeros(9, 16)), aotc.AotcError,
           "input 'x'", "B = 9", "range 1..4", status=shape)
    raises("wrong dtype names the dims", lambda: m(x.astype(np.float64), y), aotc.AotcError,
           "input 'x'", "expected float32 [B, S, 16], got float64 [2, 5, 16]", status="AOTC_ERR_WRONG_DTYPE")
    raises("wrong count", lambda: m(x), aotc.AotcError, "takes 2 input(s)", status="AOTC_ERR_WRONG_COUNT")
    want = reference(pool, x, y)
    expect("a refused call leaves the model usable", all(close_to(g, w) for g, w in zip(m(x, y), want)))

    # ---- threads: one context each, different shapes at once ----
    cases = [sample(1, 3), sample(4, 32)]
    wants = [reference(pool, *c) for c in cases]
    results = [None, None]
    start = threading.Barrier(2)

    def worker(k):
        start.wait()
        ok = True
        for i in range(200):
            c = cases[(k + i) % 2]
            w = wants[(k + i) % 2]
            ok &= all(close_to(g, v) for g, v in zip(m(*c), w))
        results[k] = ok

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect("two threads alternating shapes, correct results", results == [True, True], results)
    m.close()
    raises("call after close()", lambda: m(*sample(2, 3)), aotc.AotcError, "closed")

    # ---- a dim that must be a multiple of a step ----
    p = aotc.load(pairs_so, threads=1)
    r = p.dims["S"]
    expect("multiple_of in DimRange", r == (2, 32) and r.multiple_of == 2 and p.dims["B"].multiple_of == 1,
           (r, getattr(r, "multiple_of", None)))
    expect("repr shows the step", "S=2..32 (multiples of 2)" in repr(p), repr(p))
    raises("a size that is not a multiple", lambda: p(np.zeros((2, 3, 16), np.float32)), aotc.AotcError,
           "input 'x'", "S = 3", "multiple of 2", status=shape)
    xp = rng.standard_normal((3, 6, 16)).astype(np.float32)
    got = p(xp)
    want = reference(pairs, xp)[0]
    expect("a multiple runs", close_to(got, want), (got.shape, want.shape))
    p.close()

    # ---- max_dims: contexts for smaller largest sizes (aotc_context_options.dim_limits) ----
    lim = aotc.load(pool_so, threads=1, max_dims={"S": 9})
    expect("max_dims narrows dims", lim.dims == {"B": (1, 4), "S": (1, 9)}, lim.dims)
    limited_ok = True
    for b, s_len in [(4, 9), (1, 1), (3, 5)]:
        x, y = sample(b, s_len)
        limited_ok &= all(close_to(g, w) for g, w in zip(lim(x, y), reference(pool, x, y)))
    expect("max_dims: runs up to the limit match torch", limited_ok)
    raises("max_dims: a size above the limit", lambda: lim(*sample(2, 10)), aotc.AotcError,
           "input 'x'", "S = 10", "1..9", status=shape)
    lim.close()
    for bad, words in [({"Q": 3}, ["'Q'", "B, S"]), ({"S": 33}, ["S max 33", "1..32"]),
                       ({"S": 0}, ["S max 0"]), ({"S": "9"}, ["dict of dim name -> int"])]:
        raises(f"max_dims={bad} refused at load", lambda: aotc.load(pool_so, max_dims=bad), ValueError, *words)
    raises("max_dims on a static model", lambda: aotc.load(static_so, max_dims={"B": 1}), ValueError,
           "every shape of this one is fixed")

    # ---- a static model is as before ----
    st = aotc.load(static_so, threads=1)
    expect("static model: int shapes, no dims",
           st.dims == {} and st.inputs == [aotc.TensorSpec("x", "float32", (2, 5, 16)),
                                           aotc.TensorSpec("y", "float32", (2, 16))]
           and not any(s.dynamic for s in st.inputs + st.outputs) and "B=" not in repr(st), (st.dims, repr(st)))
    x, y = sample(2, 5)
    expect("static model runs", all(close_to(g, w) for g, w in zip(st(x, y), reference(pool, x, y))))
    raises("static model: wrong shape as before", lambda: st(*sample(3, 5)), aotc.AotcError,
           "input 'x'", "expected float32 [2, 5, 16], got float32 [3, 5, 16]", status=shape)
    st.close()

    return finish("aotc.load runs dynamic dims")


if __name__ == "__main__":
    sys.exit(main())
