#!/usr/bin/env python3
"""Single blocks and layers of the CNN benchmark models, aotc against ONNX Runtime, in one
process: where a whole model is slower than ORT, which blocks are.

Each block (torchvision's own modules, random batch-norm statistics) is scripted and
compiled by aotc, exported to ONNX for ORT, checked against torch, then timed the way
bench/bench_cpu.py times models: rounds that alternate the runtimes, each turn after a
pause (--settle-ms: ORT's intra-op workers spin for tens of ms after its runs, and slow
whoever runs next) and one untimed run, then --per-round timed runs; medians.

    .venv/bin/python bench/blocks_vs_ort.py --threads 2 --rounds 15
    .venv/bin/python bench/blocks_vs_ort.py --blocks ds7,b7,conv512_2048_7 --threads 1

ORT's time for a block includes its two layout reorders (NCHW to NCHWc and back), which it
pays once per model, not per block; aotc has nothing of the kind. Run it alone: the
machine's other load moves these numbers by more than the gaps it looks for.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
from torchvision.models.mobilenetv2 import InvertedResidual
from torchvision.models.resnet import Bottleneck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Stem(torch.nn.Module):
    """resnet's stem: 7x7/2 convolution, batch norm, relu, 3x3/2 max pooling."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(64)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)

    def forward(self, x):
        return self.pool(torch.relu(self.bn(self.conv(x))))


class ConvRelu(torch.nn.Module):
    def __init__(self, c_in, c_out, kernel=1, stride=1, relu=True):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2)
        self.relu = relu

    def forward(self, x):
        y = self.conv(x)
        return torch.relu(y) if self.relu else y


def downsampling(inplanes, planes, stride):
    """A bottleneck whose shortcut is a strided 1x1 convolution (each resnet50 stage's first)."""
    shortcut = torch.nn.Sequential(torch.nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                   torch.nn.BatchNorm2d(planes * 4))
    return Bottleneck(inplanes, planes, stride, shortcut)


# name: (module factory, input channels, input size)
BLOCKS = {
    "stem": (Stem, 3, 224),
    "ds56": (lambda: downsampling(64, 64, 1), 64, 56),
    "ds28": (lambda: downsampling(256, 128, 2), 256, 56),
    "ds14": (lambda: downsampling(512, 256, 2), 512, 28),
    "ds7": (lambda: downsampling(1024, 512, 2), 1024, 14),
    "b56": (lambda: Bottleneck(256, 64), 256, 56),
    "b28": (lambda: Bottleneck(512, 128), 512, 28),
    "b14": (lambda: Bottleneck(1024, 256), 1024, 14),
    "b7": (lambda: Bottleneck(2048, 512), 2048, 7),
    "ir24": (lambda: InvertedResidual(24, 24, 1, 6), 24, 56),
    "ir32": (lambda: InvertedResidual(32, 32, 1, 6), 32, 28),
    "ir64": (lambda: InvertedResidual(64, 64, 1, 6), 64, 14),
    "ir96": (lambda: InvertedResidual(96, 96, 1, 6), 96, 14),
    "ir160": (lambda: InvertedResidual(160, 160, 1, 6), 160, 7),
    "ir16_24s2": (lambda: InvertedResidual(16, 24, 2, 6), 16, 112),
    "conv512_2048_7": (lambda: ConvRelu(512, 2048), 512, 7),
    "conv2048_512_7": (lambda: ConvRelu(2048, 512), 2048, 7),
    "conv1024_256_14": (lambda: ConvRelu(1024, 256), 1024, 14),
    "conv256_1024_14": (lambda: ConvRelu(256, 1024), 256, 14),
    "conv3x3s2_512_7": (lambda: ConvRelu(512, 512, 3, 2), 512, 14),
    "conv3x3s2_256_14": (lambda: ConvRelu(256, 256, 3, 2), 256, 28),
}
# mobilenet_v2's projections (1x1, no activation) and its last 1x1: "proj<in>_<out>_<size>"
for c_in, c_out, size in [(32, 16, 112), (96, 24, 56), (144, 24, 56), (144, 32, 28), (192, 32, 28),
                          (192, 64, 14), (384, 64, 14), (384, 96, 14), (576, 96, 14), (576, 160, 7),
                          (960, 160, 7), (960, 320, 7), (320, 1280, 7)]:
    BLOCKS[f"proj{c_in}_{c_out}_{size}"] = (lambda i=c_in, o=c_out: ConvRelu(i, o, relu=False), c_in, size)
DEFAULT = "stem,ds56,ds28,ds14,ds7,b56,b28,b14,b7"


class Prefix(torch.nn.Module):
    """A Sequential under a forward whose argument is named x, as the other blocks'."""

    def __init__(self, seq):
        super().__init__()
        self.seq = seq

    def forward(self, x):
        return self.seq(x)


def prefix_block(name):
    """"<model>:<k>": the model's first k stages (torchvision's features[:k] for mobilenet_v2
    and efficientnet_b0; stem, pooling and layer1.. for resnet18/50), so that the differences
    between consecutive prefixes say where a whole model gains or loses, with ORT's layout
    reorders paid once per prefix as in the model, not once per layer."""
    model, _, k = name.partition(":")
    if not k.isdigit():
        return None
    import torchvision
    if model in ("mobilenet_v2", "efficientnet_b0"):
        return (lambda: Prefix(getattr(torchvision.models, model)().features[:int(k)]), 3, 224)
    if model in ("resnet18", "resnet50"):
        def resnet_prefix():
            net = getattr(torchvision.models, model)()
            stages = [torch.nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool),
                      net.layer1, net.layer2, net.layer3, net.layer4]
            return Prefix(torch.nn.Sequential(*stages[:int(k)]))
        return (resnet_prefix, 3, 224)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", default=DEFAULT, help=f"comma-separated, of: {','.join(BLOCKS)}")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--per-round", type=int, default=6)
    ap.add_argument("--settle-ms", type=float, default=100)
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build/compiler/aotc"))
    ap.add_argument("--workdir", default="")
    args = ap.parse_args()
    names = [b for b in args.blocks.split(",") if b]
    unknown = [b for b in names if b not in BLOCKS and not prefix_block(b)]
    if unknown:
        sys.exit(f"blocks_vs_ort.py: unknown blocks {unknown}; known: {', '.join(BLOCKS)}")
    import onnxruntime as ort

    workdir = args.workdir or tempfile.mkdtemp(prefix="aotc-blocks-")
    print(f"{args.threads} threads, {args.rounds} rounds x {args.per_round} runs, medians (ms)")
    for name in names:
        factory, channels, size = BLOCKS.get(name) or prefix_block(name)
        torch.manual_seed(0)
        module = factory().eval()
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        x = torch.randn(1, channels, size, size)
        base = os.path.join(workdir, name.replace(":", "_"))
        torch.jit.save(torch.jit.script(module), base + ".pt")
        torch.onnx.export(module, (x,), base + ".onnx", input_names=["x"], dynamo=False)
        bench_cpu.compile_with_aotc(args.aotc, base + ".pt", base + ".so", [("x", x)])
        aotc_model = bench_cpu.AotcModel(base + ".so", [x], args.threads)
        with torch.no_grad():
            want = module(x)
        err = bench_cpu.rel_l2(aotc_model.run()[0], want)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(base + ".onnx", opts, providers=["CPUExecutionProvider"])
        feeds = {"x": x.numpy()}
        runners = {"aotc": aotc_model.run, "ort": lambda s=session, f=feeds: s.run(None, f)}
        times = {k: [] for k in runners}
        for run in runners.values():
            for _ in range(5):
                run()
        for _ in range(args.rounds):
            for k, run in runners.items():
                time.sleep(args.settle_ms / 1e3)
                run()
                for _ in range(args.per_round):
                    start = time.perf_counter()
                    run()
                    times[k].append((time.perf_counter() - start) * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name:18s} aotc {med['aotc']:8.3f}  ORT {med['ort']:8.3f}  aotc/ORT {med['aotc'] / med['ort']:5.2f}"
              f"  (aotc vs torch: relative L2 {err:.1e})", flush=True)
        aotc_model.close()


if __name__ == "__main__":
    main()
