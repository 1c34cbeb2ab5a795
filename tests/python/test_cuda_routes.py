"""The Python routes on a GPU (the GPU machine; skipped, exit 77, without CUDA): aotc.load of
a --target cuda library with CUDA tensors in and out on torch's current stream, and the
TorchScript backend with target "cuda", each compared with eager torch on the same GPU
(relative L2 <= 1e-4 in fp32)."""
import os
import subprocess
import sys

import torch

import aotc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import SKIP, arg_parser, expect, finish  # noqa: E402
from test_torchscript_backend import Encoder, check_close  # noqa: E402


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 24, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(24, 7)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


def main():
    args = arg_parser(aotc=False).parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        return SKIP
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cnn = SmallCnn().eval()
    encoder = Encoder().eval()
    x = torch.randn(3, 3, 33, 31)
    ids = torch.randint(0, 101, (2, 37))
    mask = torch.zeros(2, 37, dtype=torch.bool)
    mask[0, 30:] = True

    # aotc.load of CUDA libraries: CUDA tensors in, CUDA tensors out, on torch's stream.
    so = os.path.join(args.workdir, "cnn_cuda.so")
    aotc.compile(cnn, (x,), so, target="cuda")
    model = aotc.load(so)
    expect("the CUDA library says so", model.device == "cuda", model.device)
    with torch.no_grad():
        want = cnn.cuda()(x.cuda())
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            got = model(x.cuda())
        stream.synchronize()
    expect("outputs are CUDA tensors", got.is_cuda, got.device)
    check_close("aotc.load small CNN on CUDA (torch side stream)", got, want)
    try:
        model(x)
        expect("a CPU tensor given to a CUDA library is refused", False, "no error")
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        expect("a CPU tensor given to a CUDA library is refused", "cuda" in str(e).lower(), str(e))

    so = os.path.join(args.workdir, "encoder_cuda.so")
    aotc.compile(encoder, (ids, mask), so, target="cuda")
    model = aotc.load(so)
    with torch.no_grad():
        check_close("aotc.load BERT-style encoder on CUDA (int64, bool in; two outputs)",
                    model(ids.cuda(), mask.cuda()), encoder.cuda()(ids.cuda(), mask.cuda()))

    # The TorchScript backend with target "cuda".
    cnn_cpu, encoder_cpu = SmallCnn().eval(), Encoder().eval()
    lowered = aotc.to_backend(torch.jit.script(cnn_cpu), {"forward": ["x:3x3x33x31"]}, target="cuda")
    with torch.no_grad():
        check_close("to_backend small CNN, target cuda", lowered(x.cuda()), cnn_cpu.cuda()(x.cuda()))
    lowered = aotc.to_backend(torch.jit.script(encoder_cpu),
                              {"forward": {"inputs": ["ids:2x37:int64", "mask:2x37:bool"], "target": "cuda"}})
    with torch.no_grad():
        check_close("to_backend BERT-style encoder, target cuda", lowered(ids.cuda(), mask.cuda()),
                    encoder_cpu.cuda()(ids.cuda(), mask.cuda()))
    path = os.path.join(args.workdir, "encoder_cuda_lowered.pt")
    torch.jit.save(lowered, path)
    script = (f"import torch, aotc; torch.ops.load_library(aotc.torch_backend_library()); "
              f"m = torch.jit.load({path!r}); ids = torch.randint(0, 101, (2, 37)).cuda(); "
              f"mask = torch.zeros(2, 37, dtype=torch.bool).cuda(); h, p = m(ids, mask); "
              f"torch.cuda.synchronize(); print(h.device, tuple(h.shape), bool(torch.isfinite(h).all()))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    expect("the saved CUDA lowering runs in a fresh process", run.returncode == 0 and "cuda:0 (2, 37, 64) True"
           in run.stdout, run.stdout + run.stderr[-1500:])
    return finish("the CUDA routes match torch")


if __name__ == "__main__":
    sys.exit(main())
