"""A CUDA model with named dims (aotc --target cuda --dim) run in one process through the C
ABI, on CUDA tensors, at shapes that come and go, each compared with torch on the GPU:

- the context captures a CUDA graph per distinct shape on first use and replays it when
  the shape comes back: with AOTC_CUDA_TRACE=1 the runtime prints one line per capture,
  counted here for the default cache (8) and for aotc_context_options.cuda_graph_cache = 2
  (the least recently used shape is dropped, and captured again when it returns);
- aotc_context_output_dims gives the outputs' dims of the last run;
- a shape out of range, and two inputs that disagree on a dim, fail with a message and
  leave the context usable;
- cuda_graph_cache < 0 is refused.

Needs a GPU: scripts/gpu_dynamic.sh runs it.
Usage: check_dynamic_cuda.py --aotc AOTC --workdir DIR"""
import ctypes
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from aotc_ctypes import AotcError, ContextOptions, Library, Model  # noqa: E402
import aotc_ctypes  # noqa: E402
from common import TOLERANCE, arg_parser, compile_module, expect, finish, rel_l2  # noqa: E402
from test_dynamic_shapes import BertStyle  # noqa: E402
# (B, S): shapes that repeat, so that a cache of 2 drops one and captures it again.
SEQUENCE = [(1, 7), (3, 64), (1, 7), (8, 33), (3, 64), (1, 7), (2, 1), (8, 64)]
# The shape run once more after the refusals (a cache of 2 has dropped it by then).
AFTER_REFUSALS = (1, 7)


def captures_expected(cache):
    """Captures an LRU cache of `cache` graphs makes over the child's runs."""
    kept, captures = [], 0
    for shape in SEQUENCE + [AFTER_REFUSALS]:
        if shape in kept:
            kept.remove(shape)
        else:
            captures += 1
            if len(kept) == cache:
                kept.pop(0)
        kept.append(shape)
    return captures


class Context(aotc_ctypes.Context):
    """aotc_ctypes.Context with aotc_context_options.cuda_graph_cache."""

    def __init__(self, model, graph_cache):
        self.model = model
        self.L = model.L
        self.handle = ctypes.c_void_p()
        options = ContextOptions()
        options.num_threads = 1
        options.cuda_graph_cache = graph_cache
        self.L.check(self.L.lib.aotc_context_create(model.handle, ctypes.byref(options), ctypes.byref(self.handle)))
        self._dims = []

    def output_dims(self, index):
        dims = (ctypes.c_int64 * 8)()
        self.L.lib.aotc_context_output_dims.restype = ctypes.c_int32
        self.L.check(self.L.lib.aotc_context_output_dims(self.handle, ctypes.c_size_t(index), dims))
        return [dims[d] for d in range(len(self.model.outputs[index]["shape"]))]


def inputs_at(batch, seq, generator):
    ids = torch.randint(1, 100, (batch, seq), generator=generator)
    mask = torch.rand(batch, seq, generator=generator) > 0.3
    mask[:, 0] = True
    return ids.cuda(), mask.cuda()


def child(so, pt, graph_cache):
    """Runs SEQUENCE in this process; prints one line per problem and 'ok N' at the end."""
    model_ref = torch.jit.load(pt).cuda().eval()
    lib = Library(so)
    model = Model(lib)
    context = Context(model, graph_cache)
    generator = torch.Generator().manual_seed(5)
    problems = 0
    for batch, seq in SEQUENCE:
        ids, mask = inputs_at(batch, seq, generator)
        with torch.no_grad():
            want = model_ref(ids, mask)
        got = torch.full_like(want, float("nan"))
        context.run([ids, mask], [got])
        torch.cuda.synchronize()
        err = rel_l2(got, want)
        dims = context.output_dims(0)
        if not err <= TOLERANCE or dims != list(want.shape):
            print(f"problem: B={batch}, S={seq}: relative L2 {err:.2e}, output dims {dims}", flush=True)
            problems += 1
    # Refusals leave the context usable.
    for bad, words in [((9, 4), ["B = 9", "1..8"]), ((2, 65), ["S = 65", "1..64"])]:
        ids, mask = inputs_at(*bad, generator)
        try:
            context.run([ids, mask], [torch.empty(bad[0], bad[1], 48, device="cuda")])
            print(f"problem: B={bad[0]}, S={bad[1]} was not refused", flush=True)
            problems += 1
        except AotcError as e:
            if not all(w in e.message for w in words):
                print(f"problem: the refusal of {bad} says '{e.message}'", flush=True)
                problems += 1
    ids, _ = inputs_at(2, 5, generator)
    _, mask = inputs_at(2, 6, generator)
    try:
        context.run([ids, mask], [torch.empty(2, 6, 48, device="cuda")])
        print("problem: ids and mask of two lengths were not refused", flush=True)
        problems += 1
    except AotcError as e:
        if "S" not in e.message:
            print(f"problem: the refusal of two lengths says '{e.message}'", flush=True)
            problems += 1
    ids, mask = inputs_at(*AFTER_REFUSALS, generator)
    with torch.no_grad():
        want = model_ref(ids, mask)
    got = torch.empty_like(want)
    context.run([ids, mask], [got])
    torch.cuda.synchronize()
    if not rel_l2(got, want) <= TOLERANCE:
        print("problem: the context is wrong after the refusals", flush=True)
        problems += 1
    try:
        Context(model, -1)
        print("problem: cuda_graph_cache = -1 was accepted", flush=True)
        problems += 1
    except AotcError as e:
        if "cuda_graph_cache" not in e.message:
            print(f"problem: cuda_graph_cache = -1 is refused with '{e.message}'", flush=True)
            problems += 1
    context.destroy()
    model.destroy()
    print(f"ok {problems}", flush=True)


def main():
    ap = arg_parser(aotc=False)
    ap.add_argument("--aotc", help="the compiler (not used with --child)")
    ap.add_argument("--child", nargs=3, metavar=("SO", "PT", "CACHE"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(35)
    so = compile_module(args.aotc, BertStyle(max_len=64), os.path.join(args.workdir, "bert_cuda.so"),
                        ["ids:BxS:int64", "mask:BxS:bool"], ["B=1..8", "S=1..64"], target="cuda")
    pt = os.path.join(args.workdir, "bert_cuda.pt")  # compile_module saved the module there
    for cache in [0, 2]:
        env = dict(os.environ, AOTC_CUDA_TRACE="1")
        result = subprocess.run([sys.executable, __file__, "--workdir", args.workdir, "--child", so, pt, str(cache)],
                                capture_output=True, text=True, env=env)
        print(result.stdout + result.stderr)
        captures = sum("CUDA graph captured" in line for line in result.stderr.splitlines())
        want = captures_expected(cache or 8)
        label = f"cache {cache}" if cache else "the default cache (8)"
        expect(f"{label}: every run matches torch, refusals leave the context usable",
               result.returncode == 0 and "ok 0" in result.stdout, f"exit {result.returncode}, see above")
        expect(f"{label}: {want} graphs captured over {len(SEQUENCE) + 1} runs", captures == want,
               f"{captures} captured")
    return finish("a CUDA graph per shape, cached and replayed, with every run matching torch")


if __name__ == "__main__":
    sys.exit(main())
