"""torch.compile(model, backend="aotc", options={"target": "cuda"}) on CUDA tensors: a small CNN
with BatchNorm and a BERT-style encoder on int64 token ids match eager on the GPU (relative L2
error at most 1e-4 in float32, with TF32 off in torch; 5e-3 with precision "tf32"), outputs
are CUDA tensors, the graphs are compiled by aotc (no eager fallback), a side stream works,
and the target is taken from the inputs when not given. aotc.compile(..., target="cuda") of a
module on the GPU (plain and scripted) gives a library that matches it. Exits 77 (skipped)
without a GPU.

    PYTHONPATH=python .venv/bin/python tests/python/test_dynamo_cuda.py --workdir /tmp/aotc_dyn_cuda
"""
import logging
import os
import shutil
import sys
import warnings
from importlib.metadata import entry_points

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import SKIP, arg_parser, expect, finish, same  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 24, 3, stride=2, padding=1), nn.BatchNorm2d(24), nn.ReLU(),
            nn.Conv2d(24, 24, 1), nn.BatchNorm2d(24), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        return self.fc(self.features(x))


class Encoder(nn.Module):
    def __init__(self, vocab=307, d=64, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(128, d)
        layer = nn.TransformerEncoderLayer(d, heads, 3 * d, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 5)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        h = self.encoder(h)
        return self.head(h[:, 0]), h


class Log(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main():
    args = arg_parser(aotc=False).parse_args()
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA GPU")
        return SKIP
    from aotc._dynamo import AotcFallbackWarning, aotc_backend

    os.makedirs(args.workdir, exist_ok=True)
    cache = os.path.join(args.workdir, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["AOTC_CACHE_DIR"] = cache
    backend = "aotc" if "aotc" in {ep.name for ep in entry_points(group="torch_dynamo_backends")} else aotc_backend
    print(f"backend: {backend if isinstance(backend, str) else 'aotc._dynamo.aotc_backend'}; "
          f"GPU: {torch.cuda.get_device_name()}")
    # the reference in exact float32: aotc's default precision
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    log = Log()
    logging.getLogger("aotc").addHandler(log)
    logging.getLogger("aotc").setLevel(logging.INFO)

    cnn = SmallCNN().cuda().eval()
    with torch.no_grad():
        for m in cnn.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    enc = Encoder().cuda().eval()
    x = torch.randn(3, 3, 29, 31, device="cuda")
    ids = torch.randint(0, 307, (2, 45), device="cuda")

    cases = [
        ("small CNN, target cuda", cnn, (x,), {"target": "cuda"}, 1e-4),
        ("encoder (int64 ids), target cuda", enc, (ids,), {"target": "cuda"}, 1e-4),
        ("small CNN, target from the inputs", cnn, (x,), {}, 1e-4),
        ("small CNN, precision tf32", cnn, (x,), {"target": "cuda", "precision": "tf32"}, 5e-3),
    ]
    for name, model, inputs, options, tol in cases:
        torch._dynamo.reset()
        log.messages.clear()
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            want = model(*inputs)
            f = torch.compile(model, backend=backend, options=dict(options, cache_dir=cache))
            got = f(*inputs)
            again = f(*inputs)
            torch.cuda.synchronize()
        fallbacks = [str(w.message) for w in caught if issubclass(w.category, AotcFallbackWarning)]
        expect(f"{name}: compiled by aotc, no eager fallback",
               not fallbacks and any("compiled" in m or "cache hit" in m for m in log.messages),
               (fallbacks, log.messages))
        expect(f"{name}: matches eager", *same(got, want, tol))
        expect(f"{name}: second call matches eager", *same(again, want, tol))

    # on a side stream: the library runs on torch's current stream
    torch._dynamo.reset()
    with torch.no_grad():
        f = torch.compile(cnn, backend=backend, options={"target": "cuda", "cache_dir": cache})
        f(x)
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = x * 2.0
            got = f(y)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        want = cnn(x * 2.0)
    expect("side stream: matches eager", *same(got, want, 1e-4))

    # aotc.compile of a module on the GPU, for target cuda: traced from a CPU copy, run on CUDA tensors
    import aotc
    for what, model, inputs in [("plain module", cnn, (x,)), ("scripted module", torch.jit.script(enc), (ids,))]:
        so = os.path.join(args.workdir, f"{what.replace(' ', '_')}.so")
        with torch.no_grad():
            lib = aotc.load(aotc.compile(model, inputs, so, target="cuda"))
            got = lib(*inputs)
            want = model(*inputs)
            torch.cuda.synchronize()
        expect(f"aotc.compile, {what} on the GPU: a cuda library", lib.device == "cuda", lib.device)
        expect(f"aotc.compile, {what} on the GPU: matches eager", *same(got, want, 1e-4))
        expect(f"aotc.compile, {what}: the module stays on the GPU",
               all(p.is_cuda for p in model.parameters()), None)

    return finish("torch.compile(backend='aotc') on CUDA matches eager")


if __name__ == "__main__":
    sys.exit(main())
