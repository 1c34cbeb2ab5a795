"""torch.compile(model, backend="aotc"): each graph compiled by aotc matches eager (relative L2
error at most 1e-4, ints and bools exactly) on random data of odd sizes: resnet18 (BatchNorm
buffers and conv/linear parameters frozen into the library), a BERT-style encoder on int64
token ids (with and without torch.no_grad), a model with a graph break (two graphs, both
compiled), one with an op aotc lacks (warns once, runs eagerly, still right), int64 and bool
inputs with several outputs, dynamic shapes, changed weights; options reach the runtime
(threads=1), unknown ones are a ValueError; a second process finds the libraries in the cache.

Uses the backend by its name "aotc" when the torch_dynamo_backends entry point is installed,
else the function aotc._dynamo.aotc_backend. Every library goes to WORKDIR/cache.

    PYTHONPATH=python .venv/bin/python tests/python/test_dynamo.py --workdir /tmp/aotc_dyn
"""
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from importlib.metadata import entry_points

import torch
import torch.nn as nn

from aotc import _dynamo
from aotc._dynamo import AotcFallbackWarning, aotc_backend

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import arg_parser, expect, finish, same  # noqa: E402


class LogCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def count(self, word):
        return sum(word in m for m in self.messages)

    def reset(self):
        self.messages = []


def backend_and_name():
    names = {ep.name for ep in entry_points(group="torch_dynamo_backends")}
    if "aotc" in names:
        return "aotc", "aotc (entry point)"
    return aotc_backend, "aotc._dynamo.aotc_backend (entry point not installed)"


# ---- models ----

class Encoder(nn.Module):
    """BERT-style: token + position embeddings, a TransformerEncoder, a pooled head."""

    def __init__(self, vocab=211, d=48, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d + 5, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 3)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.norm(self.tok(ids) + self.pos(positions))
        h = self.encoder(h)
        return self.head(h[:, 0]), h


class GraphBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(6, 5, 3, stride=2), nn.Flatten(), nn.LazyLinear(4))

    def forward(self, x):
        y = self.a(x)
        torch._dynamo.graph_break()
        return self.b(y)


class Unsupported(nn.Module):
    """torch.linalg.inv: not among aotc's ops."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(5, 5)
        self.l2 = nn.Linear(5, 3)

    def forward(self, x):
        m = self.l1(x)
        m = m @ m.transpose(-1, -2) + 5 * torch.eye(x.shape[-2])
        return self.l2(torch.linalg.inv(m) @ x)


class IntsAndBools(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 6)
        self.lin = nn.Linear(6, 2)
        self.register_buffer("offset", torch.tensor([3, -1, 4], dtype=torch.int64))

    def forward(self, ids, mask, x):
        e = self.emb(ids) * mask.unsqueeze(-1)
        counts = mask.sum(-1)
        shifted = ids[:, :3] + self.offset
        return self.lin(e).mean(1) + x, counts, shifted, mask & (ids > 20), e.max()


def bn_with_stats(model):
    """Random running statistics, so that BatchNorm's buffers matter."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model


CHILD = textwrap.dedent("""
    import logging, sys, torch
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    from aotc._dynamo import aotc_backend
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 7, 3), torch.nn.BatchNorm2d(7), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(7, 4)).eval()
    x = torch.randn(2, 3, 13, 11)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend=aotc_backend)(x)
    err = ((got - want).norm() / want.norm()).item()
    print("relative L2", err)
    sys.exit(0 if err <= 1e-4 else 3)
""")


def main():
    args = arg_parser(aotc=False).parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    cache = os.path.join(args.workdir, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["AOTC_CACHE_DIR"] = cache  # nothing below may touch the user's cache
    torch.manual_seed(0)
    torch.set_num_threads(2)
    backend, how = backend_and_name()
    print(f"backend: {how}")

    log = LogCounter()
    logging.getLogger("aotc").addHandler(log)
    logging.getLogger("aotc").setLevel(logging.INFO)

    def compiled(model, **kw):
        torch._dynamo.reset()
        kw.setdefault("options", {"cache_dir": cache, "threads": 2})
        return torch.compile(model, backend=backend, **kw)

    # resnet18: BatchNorm buffers and conv/linear parameters become the library's constants
    import torchvision
    resnet = bn_with_stats(torchvision.models.resnet18(weights=None).eval())
    x = torch.randn(1, 3, 224, 224)
    log.reset()
    with torch.no_grad():
        want = resnet(x)
        f = compiled(resnet)
        got = f(x)
        got2 = f(torch.randn(1, 3, 224, 224) * 0 + x)
    ok, detail = same(got, want)
    expect("resnet18 matches eager", ok, detail)
    expect("resnet18 again", same(got2, want)[0], same(got2, want)[1])
    expect("resnet18: one graph, compiled once", log.count("compiled") == 1, log.messages)
    # which placeholders became constants (the function itself, to see what it returned)
    graphs = []

    def spy(gm, example_inputs, **kw):
        graphs.append(aotc_backend(gm, example_inputs, **kw))
        return graphs[-1]

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(resnet, backend=spy, options={"cache_dir": cache})(x)
    expect("resnet18: one graph", len(graphs) == 1, graphs)
    if graphs:
        g = graphs[-1]
        n_params = len(list(resnet.parameters())) + sum(1 for n, _ in resnet.named_buffers()
                                                         if "num_batches" not in n)
        expect("resnet18: parameters and buffers frozen, x the only input",
               len(g.input_idx) == 1 and len(g.const_idx) == n_params,
               (len(g.input_idx), len(g.const_idx), n_params))

    # the BERT-style encoder on int64 token ids, under no_grad (torch's fused encoder layer)
    # and with autograd on (the layer's plain ops)
    enc = Encoder().eval()
    ids = torch.randint(0, 211, (3, 37))
    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            want = enc(ids)
            got = compiled(enc)(ids)
        ok, detail = same(got, want)
        expect(f"encoder (int64 ids, grad {'on' if grad else 'off'}) matches eager", ok, detail)
        expect(f"encoder (grad {'on' if grad else 'off'}): outputs carry no autograd history",
               all(not t.requires_grad for t in got), [t.requires_grad for t in got])

    # a graph break: two graphs, each compiled by aotc
    gb = bn_with_stats(GraphBreak()).eval()
    x = torch.randn(2, 3, 17, 15)
    gb(x)  # materialises the LazyLinear
    log.reset()
    with torch.no_grad():
        want = gb(x)
        got = compiled(gb)(x)
    expect("graph break: matches eager", *same(got, want))
    expect("graph break: two graphs compiled", log.count("compiled") == 2, log.messages)

    # an op aotc lacks: one warning naming it, eager results
    un = Unsupported().eval()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = compiled(un)
        outs = []
        for _ in range(3):
            x = torch.randn(2, 7, 5)
            outs.append((f(x), un(x)))
    ours = [w for w in caught if issubclass(w.category, AotcFallbackWarning)]
    expect("unsupported op: matches eager", all(same(g, w)[0] for g, w in outs), [same(g, w)[1] for g, w in outs])
    expect("unsupported op: one warning", len(ours) == 1, [str(w.message) for w in caught])
    expect("unsupported op: a UserWarning naming the op",
           bool(ours) and issubclass(ours[0].category, UserWarning) and "linalg_inv" in str(ours[0].message),
           [str(w.message) for w in ours])

    # training mode: BatchNorm would update its running statistics; the graph runs eagerly
    import copy
    train = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6)).train()
    twin = copy.deepcopy(train)
    x = torch.randn(7, 5)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(train)(x)
        want = twin(x)
    ours = [str(w.message) for w in caught if issubclass(w.category, AotcFallbackWarning)]
    expect("training mode: runs eagerly, one warning naming BatchNorm",
           len(ours) == 1 and "training mode" in ours[0], ours)
    expect("training mode: matches eager, running statistics updated",
           same(got, want)[0] and torch.allclose(train[1].running_mean, twin[1].running_mean),
           same(got, want)[1])

    # int64 and bool inputs, several outputs of several dtypes, a 0-d output
    ib = IntsAndBools().eval()
    ids = torch.randint(0, 50, (3, 9))
    mask = torch.rand(3, 9) > 0.4
    x = torch.randn(3, 2)
    with torch.no_grad():
        want = ib(ids, mask, x)
        got = compiled(ib)(ids, mask, x)
    ok, detail = same(got, want)
    expect("int64 + bool inputs, five outputs: matches eager", ok, detail)

    # dynamic shapes: one library per signature met, each right
    dyn = nn.Sequential(nn.Linear(11, 13), nn.GELU(), nn.Linear(13, 3)).eval()
    with torch.no_grad():
        f = compiled(dyn, dynamic=True)
        results = []
        for rows in (5, 9, 5, 2):
            x = torch.randn(rows, 11)
            results.append(same(f(x), dyn(x)))
    expect("dynamic=True: every shape matches eager", all(r[0] for r in results), results)

    # weights frozen at compile time; a changed weight is seen at the next call
    lin = nn.Sequential(nn.Linear(6, 4)).eval()
    x = torch.randn(2, 6)
    with torch.no_grad():
        f = compiled(lin)
        first = same(f(x), lin(x))
        lin[0].weight.mul_(-2.0)
        second = same(f(x), lin(x))
    expect("changed weights: recompiled and right", first[0] and second[0], (first, second))

    # options: threads reaches the runtime; unknown options are a ValueError naming them
    small = nn.Sequential(nn.Linear(4, 3)).eval()
    with torch.no_grad():
        compiled(small, options={"threads": 1, "cache_dir": cache})(torch.randn(2, 4))
    threads = sorted({(m.threads) for (path, t), m in _dynamo._LOADED.items() if t == 1})
    expect("options: threads=1 loads the library with 1 thread", threads == [1], threads)
    try:
        aotc_backend(torch.fx.symbolic_trace(small), [torch.randn(2, 4)], options={"threads": 1, "bogus": 2})
        expect("unknown option is a ValueError", False, "no error")
    except ValueError as e:
        expect("unknown option is a ValueError naming it", "bogus" in str(e), str(e))
    try:
        with torch.no_grad():
            compiled(small, options={"nonsense": True})(torch.randn(2, 4))
        expect("unknown option through torch.compile", False, "no error")
    except Exception as e:  # noqa: BLE001 (dynamo wraps the backend's error)
        expect("unknown option through torch.compile names it", "nonsense" in str(e), str(e)[:300])

    # a second process finds the library in the cache ($AOTC_CACHE_DIR)
    child_cache = os.path.join(args.workdir, "child_cache")
    shutil.rmtree(child_cache, ignore_errors=True)
    env = dict(os.environ, AOTC_CACHE_DIR=child_cache)
    runs = [subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True) for _ in range(2)]
    for i, r in enumerate(runs):
        expect(f"process {i + 1} matches eager", r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:]))
    first, second = runs[0].stderr, runs[1].stderr
    expect("process 1 compiles", "compiled" in first and "cache hit" not in first, first[-1500:])
    expect("process 2 takes the cache", "cache hit" in second and "compiled" not in second, second[-1500:])
    libraries = [n for n in os.listdir(child_cache) if n.endswith(".so")] if os.path.isdir(child_cache) else []
    leftovers = [n for n in os.listdir(child_cache) if ".tmp" in n] if os.path.isdir(child_cache) else []
    expect("the cache holds one library and no temporary files", len(libraries) == 1 and not leftovers,
           os.listdir(child_cache) if os.path.isdir(child_cache) else None)

    # two processes compiling the same graph at once into an empty cache: both right, one library
    both_cache = os.path.join(args.workdir, "concurrent_cache")
    shutil.rmtree(both_cache, ignore_errors=True)
    env = dict(os.environ, AOTC_CACHE_DIR=both_cache)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate() + (p.returncode,) for p in procs]
    expect("two processes at once: both match eager", all(o[2] == 0 for o in outs), [o[1][-800:] for o in outs])
    names = sorted(os.listdir(both_cache)) if os.path.isdir(both_cache) else []
    expect("two processes at once: one library, no temporary files",
           len([n for n in names if n.endswith(".so")]) == 1 and not [n for n in names if ".tmp" in n], names)

    return finish("torch.compile(backend='aotc') matches eager")


if __name__ == "__main__":
    sys.exit(main())
