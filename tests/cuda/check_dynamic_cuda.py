"""A CUDA model with named dims (aotc --target cuda --dim) run in one process through the C
ABI, on CUDA tensors, at shapes that come and go, each compared with torch on the GPU:

- the context captures a CUDA graph per distinct shape on first use and replays it when
  the shape comes back: with AOTC_CUDA_TRACE=1 the runtime prints one line per capture,
  counted here for the default cache (8) and for aotc_context_options.cuda_graph_cache = 2
  (the least recently used shape is dropped, and captured again when it returns);
- aotc_context_output_dims gives the outputs' dims of the last run;
- a shape out of range, and two inputs that disagree on a dim, fail with a message and
  leave the context usable;
- cuda_graph_cache < 0 is refused;
- a context with dim limits (aotc_context_options.dim_limits) runs shapes up to them like
  torch, beside a context for the model's largest shape, and refuses a larger one.

Needs a GPU: scripts/gpu_dynamic.sh runs it.
Usage: check_dynamic_cuda.py --aotc AOTC --workdir DIR"""
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from aotc_ctypes import AotcError, Context, Library, Model  # noqa: E402
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


def inputs_at(batch, seq, generator):
    ids = torch.randint(1, 100, (batch, seq), generator=generator)
    mask = torch.rand(batch, seq, generator=generator) > 0.3
    mask[:, 0] = True
    return ids.cuda(), mask.cuda()


def refused(what, call, words):
    """call() must fail with AotcError naming words; returns 1 for a problem, else 0."""
    try:
        call()
    except AotcError as e:
        if all(w in e.message for w in words):
            return 0
        print(f"problem: {what} is refused with '{e.message}'", flush=True)
        return 1
    print(f"problem: {what} was not refused", flush=True)
    return 1


def child(so, pt, graph_cache):
    """Runs SEQUENCE in this process; prints one line per problem and 'ok N' at the end."""
    model_ref = torch.jit.load(pt).cuda().eval()
    lib = Library(so)
    model = Model(lib)
    context = Context(model, graph_cache=graph_cache)
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
    for (batch, seq), words in [((9, 4), ["B = 9", "1..8"]), ((2, 65), ["S = 65", "1..64"])]:
        ids, mask = inputs_at(batch, seq, generator)
        out = torch.empty(batch, seq, 48, device="cuda")
        problems += refused(f"B={batch}, S={seq}", lambda: context.run([ids, mask], [out]), words)
    ids, _ = inputs_at(2, 5, generator)
    _, mask = inputs_at(2, 6, generator)
    out = torch.empty(2, 6, 48, device="cuda")
    problems += refused("ids and mask of two lengths", lambda: context.run([ids, mask], [out]), ["S = 6", "S = 5"])
    ids, mask = inputs_at(*AFTER_REFUSALS, generator)
    with torch.no_grad():
        want = model_ref(ids, mask)
    got = torch.empty_like(want)
    context.run([ids, mask], [got])
    torch.cuda.synchronize()
    if not rel_l2(got, want) <= TOLERANCE:
        print("problem: the context is wrong after the refusals", flush=True)
        problems += 1
    problems += refused("cuda_graph_cache = -1", lambda: Context(model, graph_cache=-1), ["cuda_graph_cache"])
    context.destroy()
    model.destroy()
    print(f"ok {problems}", flush=True)


def child_limited(so, pt):
    """A context for B <= 3, S <= 33 beside one for the model's largest sizes, shapes
    alternating between them; prints one line per problem and 'ok N' at the end."""
    model_ref = torch.jit.load(pt).cuda().eval()
    model = Model(Library(so))
    full = Context(model)
    limited = Context(model, limits={"B": 3, "S": 33})
    generator = torch.Generator().manual_seed(6)
    problems = 0
    for batch, seq in [(3, 33), (1, 7), (8, 64), (2, 1), (3, 33)]:
        ids, mask = inputs_at(batch, seq, generator)
        with torch.no_grad():
            want = model_ref(ids, mask)
        for name, context in [("limited", limited), ("full", full)]:
            if name == "limited" and (batch > 3 or seq > 33):
                continue
            got = torch.full_like(want, float("nan"))
            context.run([ids, mask], [got])
            torch.cuda.synchronize()
            if not rel_l2(got, want) <= TOLERANCE:
                print(f"problem: {name} context at B={batch}, S={seq}: relative L2 {rel_l2(got, want):.2e}",
                      flush=True)
                problems += 1
    ids, mask = inputs_at(3, 34, generator)
    out = torch.empty(3, 34, 48, device="cuda")
    problems += refused("S=34 on the limited context", lambda: limited.run([ids, mask], [out]),
                        ["S = 34", "above 33", "dim_limits"])
    problems += refused("a limit out of range", lambda: Context(model, limits={"S": 65}), ["S max 65", "1..64"])
    limited.destroy()
    full.destroy()
    model.destroy()
    print(f"ok {problems}", flush=True)


def main():
    ap = arg_parser(aotc=False)
    ap.add_argument("--aotc", help="the compiler (not used with --child)")
    ap.add_argument("--child", nargs=3, metavar=("SO", "PT", "CACHE"))
    args = ap.parse_args()
    if args.child:
        if args.child[2] == "limited":
            child_limited(args.child[0], args.child[1])
        else:
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
    result = subprocess.run([sys.executable, __file__, "--workdir", args.workdir, "--child", so, pt, "limited"],
                            capture_output=True, text=True)
    print(result.stdout + result.stderr)
    expect("a context with dim limits matches torch beside a full one, and refuses above its limits",
           result.returncode == 0 and "ok 0" in result.stdout, f"exit {result.returncode}, see above")
    return finish("a CUDA graph per shape, cached and replayed, with every run matching torch")


if __name__ == "__main__":
    sys.exit(main())
