"""aotc.compile(model, example_inputs, output): scripted, traced and plain nn.Modules compile
into libraries that aotc.load runs like torch (relative L2 error at most 1e-4, ints and bools
exactly); int64 and bool inputs, several outputs, 0-d inputs, input_names, another method,
weights="file"; resnet18 and a BERT-style encoder (int64 ids, bool mask, two outputs) through
compile and load with numpy and torch; a plain module's training flags are restored; an unsupported op raises
CompileError naming it, with no temporary path in the message and nothing written; the
temporary directory is always removed.

    PYTHONPATH=python .venv/bin/python tests/python/test_compile.py --workdir /tmp/aotc_compile
"""
import os
import shutil
import sys
import tempfile
import warnings
from typing import Tuple

import torch
import torch.nn as nn

import aotc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import arg_parser, expect, finish, same  # noqa: E402


class Net(nn.Module):
    """Conv, BatchNorm (buffers), dropout (train/eval matters), a shape-dependent branch."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(8, 5)

    def forward(self, image):
        y = torch.relu(self.bn(self.conv(image)))
        if y.shape[-1] > 4:
            y = y * 0.5
        return self.fc(self.drop(y.mean((2, 3))))


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 6)
        self.proj = nn.Linear(6, 4)

    def forward(self, ids, mask) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.emb(ids) * mask.unsqueeze(-1).to(torch.float32)
        return self.proj(h).sum(1), mask.sum(1), (ids > 7) & mask

    def pooled(self, ids):
        return self.emb(ids).mean(1)


class Scaled(nn.Module):
    def forward(self, x, scale):
        return x * scale + scale


class Unsupported(nn.Module):
    def forward(self, x):
        return torch.linalg.inv(x @ x.transpose(0, 1) + torch.eye(x.shape[0])) + x.sum()


def randomise_bn(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    return model


def main():
    args = arg_parser(aotc=False).parse_args()
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    tempfile.tempdir = tmp  # aotc.compile's temporary directories go here: they must not stay
    torch.manual_seed(0)

    def path(name):
        return os.path.join(work, name)

    # scripted (the branch stays a branch; aotc decides it at compile time)
    net = randomise_bn(Net()).eval()
    x = torch.randn(2, 3, 11, 7)
    want = net(x)
    written = aotc.compile(torch.jit.script(net), (x,), path("scripted.so"))
    expect("scripted: returns the path", written == path("scripted.so") and os.path.isfile(written), written)
    m = aotc.load(written, threads=2)
    expect("scripted: input named after the argument", [s.name for s in m.inputs] == ["image"], m.inputs)
    expect("scripted: matches torch", *same(m(x), want))

    # traced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # the shape branch: known
        traced = torch.jit.trace(net, (x,))
    m = aotc.load(aotc.compile(traced, x, path("traced.so")), threads=2)
    expect("traced: input named after the argument", [s.name for s in m.inputs] == ["image"], m.inputs)
    expect("traced: matches torch", *same(m(x), want))

    # a plain module in training mode: traced in eval mode, its flags restored afterwards
    net.train()
    net.bn.eval()  # mixed flags must come back as they were
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        m = aotc.load(aotc.compile(net, (x,), path("plain.so")), threads=2)
    flags = (net.training, net.conv.training, net.bn.training, net.drop.training)
    expect("plain module: training flags restored", flags == (True, True, False, True), flags)
    net.eval()
    expect("plain module: compiled in eval mode, matches torch", *same(m(x), net(x)))

    # int64 and bool inputs, three outputs (a tuple from the model)
    tok = Tokens().eval()
    ids = torch.randint(0, 40, (3, 13))
    mask = torch.rand(3, 13) > 0.3
    m = aotc.load(aotc.compile(torch.jit.script(tok), (ids, mask), path("tokens.so")), threads=2)
    expect("int64 + bool inputs: specs", [(s.name, s.dtype, s.shape) for s in m.inputs]
           == [("ids", "int64", (3, 13)), ("mask", "bool", (3, 13))], m.inputs)
    got = m(ids, mask)
    expect("several outputs: a tuple of three", isinstance(got, tuple) and len(got) == 3, type(got))
    expect("int64 + bool inputs, three outputs: match torch", *same(got, tok(ids, mask)))
    expect("several outputs: run() gives a list", isinstance(m.run([ids, mask]), list), None)

    # another method, traced from a plain module
    m = aotc.load(aotc.compile(tok, (ids,), path("pooled.so"), method="pooled"), threads=2)
    expect("method='pooled' of a plain module: matches torch", *same(m(ids), tok.pooled(ids)))

    # input_names
    m = aotc.load(aotc.compile(torch.jit.script(tok), (ids, mask), path("named.so"), input_names=["tokens", "keep"]),
                  threads=2)
    expect("input_names: the library's names", [s.name for s in m.inputs] == ["tokens", "keep"], m.inputs)
    expect("input_names: matches torch", *same(m(ids, mask), tok(ids, mask)))

    # a 0-d input: the library takes it with shape (1,)
    scale = torch.tensor(1.75)
    xs = torch.randn(4, 5)
    m = aotc.load(aotc.compile(Scaled(), (xs, scale), path("scalar.so")), threads=2)
    expect("0-d input: shape (1,) in the library", [s.shape for s in m.inputs] == [(4, 5), (1,)], m.inputs)
    expect("0-d input: matches torch", *same(m(xs, scale.reshape(1)), Scaled()(xs, scale)))

    # weights in a file beside the library
    aotc.compile(torch.jit.script(net), (x,), path("wfile.so"), weights="file")
    expect("weights='file' writes wfile.weights", os.path.isfile(path("wfile.weights")), os.listdir(work))
    expect("weights='file': matches torch", *same(aotc.load(path("wfile.so"), threads=2)(x), net(x)))
    # cpu_threads: built for 16 threads (aotc --cpu-threads 16), right on 16 and on 2
    m = aotc.load(aotc.compile(net, (x,), path("many.so"), cpu_threads=16), threads=16)
    expect("cpu_threads=16: matches torch on 16 threads", *same(m(x), net(x)))
    expect("cpu_threads=16: matches torch on 2 threads", *same(aotc.load(path("many.so"), threads=2)(x), net(x)))

    # an unsupported op: CompileError naming it, nothing written
    try:
        aotc.compile(Unsupported(), torch.randn(4, 4), path("unsupported.so"))
        expect("unsupported op raises CompileError", False, "no error")
    except aotc.CompileError as e:
        expect("unsupported op: CompileError names aten::linalg_inv", "aten::linalg_inv" in e.message, e.message)
        expect("unsupported op: the source line", "test_compile.py:" in e.message, e.message)
        expect("unsupported op: nothing written", not os.path.exists(path("unsupported.so")), os.listdir(work))
    # a message about the model file names the module, not the temporary file
    try:
        aotc.compile(torch.jit.script(Scaled()), (xs,), path("short.so"))
        expect("too few inputs raises CompileError", False, "no error")
    except aotc.CompileError as e:
        expect("the message names the module, not the temporary file",
               "Scaled" in e.message and tmp not in e.message and ".pt" not in e.message, e.message)
    # what aotc cannot take is refused before it runs
    for what, call in [
        ("a float64 input", lambda: aotc.compile(Scaled(), (xs.double(), scale), path("f64.so"))),
        ("precision without target cuda", lambda: aotc.compile(Scaled(), (xs, scale), path("p.so"), precision="fp16")),
        ("an unknown target", lambda: aotc.compile(Scaled(), (xs, scale), path("t.so"), target="tpu")),
        ("two names for one input", lambda: aotc.compile(Scaled(), (xs, scale), path("n.so"), input_names=["a"])),
        ("cpu_threads=0", lambda: aotc.compile(Scaled(), (xs, scale), path("c.so"), cpu_threads=0)),
        ("cpu_threads='16'", lambda: aotc.compile(Scaled(), (xs, scale), path("c.so"), cpu_threads="16")),
    ]:
        try:
            call()
            expect(f"{what} is a ValueError", False, "no error")
        except ValueError as e:
            expect(f"{what} is a ValueError", True, str(e))
    # The models every route is checked on: resnet18 and a BERT-style encoder, through
    # aotc.compile and aotc.load with torch tensors and numpy arrays.
    import numpy as np
    import torchvision
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_torchscript_backend import Encoder

    resnet = randomise_bn(torchvision.models.resnet18(weights=None)).eval()
    image = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        want = resnet(image)
    m = aotc.load(aotc.compile(resnet, (image,), path("resnet18.so")), threads=2)
    expect("resnet18 (plain module, traced): matches torch", *same(m(image), want))
    got = m(image.numpy())
    expect("resnet18 with numpy: a numpy array that matches", isinstance(got, np.ndarray) and
           same(torch.from_numpy(got), want)[0], type(got))
    encoder = Encoder().eval()
    ids = torch.randint(0, 101, (2, 37))
    mask = torch.zeros(2, 37, dtype=torch.bool)
    mask[1, 23:] = True
    with torch.no_grad():
        want = encoder(ids, mask)
    m = aotc.load(aotc.compile(torch.jit.script(encoder), (ids, mask), path("encoder.so")))
    expect("BERT-style encoder (scripted; int64, bool in; two outputs): matches torch", *same(m(ids, mask), want))
    got = m(ids=ids.numpy(), mask=mask.numpy())
    expect("BERT-style encoder with numpy, by name: matches torch",
           same(tuple(torch.from_numpy(g) for g in got), want)[0], type(got))

    left = [name for name in os.listdir(tmp) if not name.startswith("torchinductor_")]  # torch's own cache
    expect("temporary directories removed", left == [], left)

    return finish("aotc.compile compiles what torch runs")


if __name__ == "__main__":
    sys.exit(main())
