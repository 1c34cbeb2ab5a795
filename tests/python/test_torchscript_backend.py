"""The TorchScript backend "aotc" (aotc.to_backend): whole modules and one submodule lowered
(partial lowering), compared with eager torch; saved lowered modules run in a fresh Python
process and in the C++ sample (samples/run_lowered.cpp, LibTorch and the backend library
only); unsupported ops and bad specs give clear errors."""
import os
import subprocess
import sys
import textwrap

import torch
import torchvision

import aotc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import TOLERANCE, arg_parser, expect, finish, rel_l2  # noqa: E402


def outputs_of(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def check_close(name, got, want, tol=TOLERANCE):
    got, want = outputs_of(got), outputs_of(want)
    if len(got) != len(want):
        expect(name, False, f"{len(got)} outputs, eager has {len(want)}")
        return
    errors = []
    for g, w in zip(got, want):
        if g.dtype != w.dtype or g.shape != w.shape:
            expect(name, False, f"got {g.dtype} {list(g.shape)}, eager {w.dtype} {list(w.shape)}")
            return
        errors.append(rel_l2(g, w) if w.is_floating_point() else float((g != w).sum()))
    expect(f"{name} (relative L2 {max(errors):.2e})", max(errors) <= tol, errors)


class Encoder(torch.nn.Module):
    """A BERT-style encoder: token ids (int64) and a padding mask (bool) in, hidden states
    and a pooled vector out."""

    def __init__(self, vocab=101, d=64, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(1, 37, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pool = torch.nn.Linear(d, d)

    def forward(self, ids, mask):
        h = self.embed(ids) + self.pos[:, : ids.shape[1]]
        h = self.encoder(h, src_key_padding_mask=mask)
        return h, torch.tanh(self.pool(h[:, 0]))


class Backbone(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 5, 3, stride=2)

    def forward(self, x):
        return self.conv2(torch.relu(self.bn(self.conv1(x))))


class WithFftHead(torch.nn.Module):
    """A backbone aotc compiles and a head it cannot (torch.fft): lowering the backbone
    alone keeps the head in TorchScript."""

    def __init__(self):
        super().__init__()
        self.backbone = Backbone()

    def forward(self, x):
        features = self.backbone(x)
        return torch.fft.rfft(features, dim=-1).abs().sum(dim=(2, 3))


def main():
    ap = arg_parser(aotc=False)
    ap.add_argument("--run-lowered", help="the C++ sample samples/run_lowered")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)

    # resnet18, whole module.
    resnet = torchvision.models.resnet18(weights=None).eval()
    lowered = aotc.to_backend(torch.jit.script(resnet), {"forward": ["x:1x3x224x224"]}, threads=2)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        check_close("resnet18 lowered whole", lowered(x), resnet(x))
    path = os.path.join(args.workdir, "resnet18_lowered.pt")
    torch.jit.save(lowered, path)

    # The saved module in a fresh process, with only the backend library loaded.
    expected = os.path.join(args.workdir, "resnet18_expected.pt")
    with torch.no_grad():
        torch.save({"x": x, "y": resnet(x)}, expected)
    script = textwrap.dedent(f"""
        import torch, aotc
        torch.ops.load_library(aotc.torch_backend_library())
        m = torch.jit.load({path!r})
        data = torch.load({expected!r})
        y = m(data["x"])
        err = ((y - data["y"]).norm() / data["y"].norm()).item()
        print(err)
        raise SystemExit(0 if err <= 1e-4 else 1)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    expect("saved lowered resnet18 runs in a fresh Python process", run.returncode == 0,
           run.stdout + run.stderr[-2000:])
    without = subprocess.run([sys.executable, "-c", f"import torch; torch.jit.load({path!r})"],
                             capture_output=True, text=True)
    expect("without the backend library, loading names what is missing", without.returncode != 0 and
           "aotc" in without.stderr, without.stderr[-500:])

    # BERT-style encoder: int64 and bool inputs, two outputs.
    encoder = Encoder().eval()
    ids = torch.randint(0, 101, (2, 37))
    mask = torch.zeros(2, 37, dtype=torch.bool)
    mask[1, 29:] = True
    lowered_encoder = aotc.to_backend(torch.jit.script(encoder),
                                      {"forward": {"inputs": ["ids:2x37:int64", "mask:2x37:bool"]}})
    with torch.no_grad():
        check_close("BERT-style encoder (int64 ids, bool mask, two outputs)", lowered_encoder(ids, mask),
                    encoder(ids, mask))

    # Partial lowering: the backbone only; the fft head stays TorchScript.
    model = WithFftHead().eval()
    scripted = torch.jit.script(model)
    try:
        aotc.to_backend(scripted, {"forward": ["x:2x3x17x19"]})
        expect("lowering the whole fft model fails", False, "no error")
    except aotc.CompileError as e:
        message = str(e)
        expect("lowering the whole fft model names the unsupported op and its line",
               "aten::fft_rfft" in message and "test_torchscript_backend.py" in message, message)
    partial = aotc.to_backend(scripted, {"forward": ["x:2x3x17x19"]}, submodule="backbone")
    x = torch.randn(2, 3, 17, 19)
    with torch.no_grad():
        check_close("partial lowering (backbone on aotc, fft head in TorchScript)", partial(x), model(x))
    expect("the head stays TorchScript", "fft_rfft" in partial.code, partial.code)
    many = aotc.to_backend(scripted, {"forward": {"inputs": ["x:2x3x17x19"], "threads": 16}}, submodule="backbone")
    with torch.no_grad():
        check_close("threads 16 in the spec (built and run for 16 threads)", many(x), model(x))
    partial_path = os.path.join(args.workdir, "partial_lowered.pt")
    torch.jit.save(partial, partial_path)
    reloaded = torch.jit.load(partial_path)
    with torch.no_grad():
        check_close("saved partial lowering reloads", reloaded(x), model(x))

    # The C++ sample: LibTorch and the backend library only.
    if args.run_lowered:
        run = subprocess.run([args.run_lowered, path, "1x3x224x224"], capture_output=True, text=True)
        ok = run.returncode == 0
        expect("run_lowered (C++) runs the saved resnet18", ok, run.stderr[-1000:])
        if ok:
            lines = run.stdout.splitlines()
            values = torch.tensor([float(v) for v in lines[1:]], dtype=torch.float64)
            count = 3 * 224 * 224
            sample_input = torch.linspace(-1.0, 1.0, count).reshape(1, 3, 224, 224)
            with torch.no_grad():
                want = resnet(sample_input).double().flatten()
            expect("run_lowered prints the output shape", lines[0] == "output 0: [1, 1000]", lines[0])
            err = rel_l2(values, want)
            expect(f"run_lowered matches eager (relative L2 {err:.2e})", err <= 1e-4, err)

    # Errors.
    with torch.no_grad():
        for bad, words in [(torch.randn(1, 3, 224, 225), ["'x'", "[1, 3, 224, 224]", "[1, 3, 224, 225]"]),
                           (torch.randn(1, 3, 224, 224).double(), ["'x'", "Float", "Double"])]:
            try:
                lowered(bad)
                expect(f"a wrong input is refused ({words[-1]})", False, "no error")
            except RuntimeError as e:
                expect(f"a wrong input is refused ({words[-1]})", all(w in str(e) for w in words), str(e)[-400:])
    for spec, kind, words in [({"forward": ["x:1x3x224"]}, aotc.CompileError, ["aten::conv2d", "input channels"]),
                              ({"forward": ["x:1y3"]}, aotc.CompileError, ["'1y3'"]),
                              ({"forward": {"inputs": ["x:2x3x17x19"], "colour": "red"}}, ValueError, ["colour"]),
                              ({"backward": ["x:2x3x17x19"]}, ValueError, ["backward"])]:
        try:
            aotc.to_backend(torch.jit.script(Backbone().eval()), spec)
            expect(f"bad spec {spec} is refused", False, "no error")
        except kind as e:
            expect(f"bad spec {spec} is refused with {kind.__name__}", all(w in str(e) for w in words), str(e))
        except Exception as e:  # noqa: BLE001 - the wrong kind is a failure to report
            expect(f"bad spec {spec} is refused with {kind.__name__}", False, f"{type(e).__name__}: {e}")
    try:
        aotc.to_backend(scripted, {"forward": ["x:2x3x17x19"]}, submodule="neck")
        expect("an unknown submodule is refused", False, "no error")
    except ValueError as e:
        expect("an unknown submodule is refused", "neck" in str(e), str(e))

    return finish("the TorchScript backend matches torch")


if __name__ == "__main__":
    sys.exit(main())
