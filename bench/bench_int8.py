"""int8 CPU benchmark: aotc's library of a quantized model against torch's own quantized
execution, ONNX Runtime on the same network quantized in QDQ form, and aotc's float32
library of the float model, on this machine, in one process.

    .venv/bin/python bench/bench_int8.py                       # resnet18 and mobilenet_v2
    .venv/bin/python bench/bench_int8.py --models resnet18 --threads 2 --rounds 5 --per-round 10

The models: torchvision's quantizable classifier, quantized in eager mode (torch.ao,
engine "fbgemm", the default qconfig, random calibration data, seeded), at 224x224.
  - aotc int8: that TorchScript file compiled by aotc, loaded with ctypes (its C ABI);
  - torch int8: the same TorchScript module, frozen, torch.set_num_threads(N);
  - ORT int8 (QDQ): the float model exported to ONNX, quantized by onnxruntime's
    quantize_static (QDQ, per-channel int8 weights, uint8 activations, the same random
    calibration images), CPU provider, intra_op_num_threads=N;
  - aotc f32: the float model (the same weights before quantization) compiled by aotc.
Rounds alternate the runtimes (each gets one untimed run, then --per-round timed runs), so
they all see the same machine state; the table gives the median over rounds and the spread
(min-max of the round medians), and the ratios the targets are judged by. It checks first
that aotc's int8 output equals torch's (in quantization steps) and that ORT's agrees with
torch's top-1 class.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from bench_cpu import AotcModel  # noqa: E402
from models_quantized import _calibrate, _randomize_norms, aotc_engine_args  # noqa: E402


def quantized_and_float(name, seed, size):
    """(float module, quantized scripted module): the same weights, eager-mode quantized."""
    import copy

    from torch.ao import quantization as tq
    from torchvision.models import quantization as qmodels
    torch.backends.quantized.engine = "fbgemm"
    torch.manual_seed(seed)
    model = getattr(qmodels, name)(weights=None, quantize=False)
    with torch.no_grad():
        _randomize_norms(model, seed)
    model.eval()
    float_model = copy.deepcopy(model)
    model.fuse_model()
    model.qconfig = tq.get_default_qconfig("fbgemm")
    tq.prepare(model, inplace=True)
    _calibrate(model, (1, 3, size, size), seed, batches=8)
    tq.convert(model, inplace=True)
    return float_model, torch.jit.script(model)


def time_rounds(runners, rounds, per_round):
    """{name: [median ms of each round]}: the runners alternate, forward then backward, each
    with one untimed run and per_round timed runs per round."""
    times = {k: [] for k in runners}
    with torch.no_grad():
        for r in range(rounds):
            order = list(runners) if r % 2 == 0 else list(reversed(runners))
            for key in order:
                runners[key]()
                runs = []
                for _ in range(per_round):
                    start = time.perf_counter()
                    runners[key]()
                    runs.append((time.perf_counter() - start) * 1e3)
                times[key].append(statistics.median(runs))
    return times


def median_ratio(rounds, key, over):
    """The median over rounds of key's time over the fastest of `over` in the same round."""
    return statistics.median(v / min(rounds[o][r] for o in over) for r, v in enumerate(rounds[key]))


def compile_aotc(aotc, pt, so, size):
    start = time.monotonic()
    # The rounding of the engine torch runs here (fbgemm, set above).
    subprocess.run([aotc, pt, "--input", f"x:1x3x{size}x{size}", "-o", so] + aotc_engine_args(), check=True)
    return time.monotonic() - start


def ort_qdq(float_model, work, name, size, seed, threads):
    """An ONNX Runtime session of the float model quantized by quantize_static (QDQ)."""
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    onnx_path = os.path.join(work, f"{name}_f32.onnx")
    torch.onnx.export(float_model, (torch.randn(1, 3, size, size),), onnx_path, input_names=["x"], opset_version=17,
                      dynamo=False)
    pre = os.path.join(work, f"{name}_pre.onnx")
    quant_pre_process(onnx_path, pre)

    class Images(CalibrationDataReader):
        def __init__(self):
            gen = torch.Generator().manual_seed(seed)
            self.batches = iter([{"x": torch.randn(1, 3, size, size, generator=gen).numpy()} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    qdq = os.path.join(work, f"{name}_qdq.onnx")
    quantize_static(pre, qdq, Images(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(qdq, options, providers=["CPUExecutionProvider"])
    return session, os.path.getsize(qdq)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=10)
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build", "compiler", "aotc"))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench_int8"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(args.threads)
    rows = []
    for i, name in enumerate(args.models):
        seed = 90 + i
        float_model, qmodel = quantized_and_float(name, seed, args.size)
        q_pt = os.path.join(args.workdir, f"{name}_int8.pt")
        f_pt = os.path.join(args.workdir, f"{name}_f32.pt")
        qmodel.save(q_pt)
        x = torch.randn(1, 3, args.size, args.size, generator=torch.Generator().manual_seed(seed + 1))
        torch.jit.trace(float_model, x).save(f_pt)
        q_so, f_so = q_pt[:-3] + ".so", f_pt[:-3] + ".so"
        q_compile = compile_aotc(args.aotc, q_pt, q_so, args.size)
        compile_aotc(args.aotc, f_pt, f_so, args.size)
        frozen = torch.jit.freeze(torch.jit.load(q_pt).eval())
        aotc_q = AotcModel(q_so, [x], args.threads)
        aotc_f = AotcModel(f_so, [x], args.threads)
        session, qdq_bytes = ort_qdq(float_model, args.workdir, name, args.size, seed, args.threads)
        feed = {"x": x.numpy()}
        with torch.no_grad():
            want = frozen(x).numpy()
        got = np.asarray(aotc_q.run()[0]).reshape(want.shape)
        levels = np.unique(want)
        step = float(np.diff(levels).min()) if levels.size > 1 else 1.0
        off = int(np.count_nonzero(np.abs(got - want) > 1e-3 * step))
        ort_top1 = int(np.argmax(session.run(None, feed)[0])) == int(np.argmax(want))
        runners = {
            "aotc int8": lambda: aotc_q.run(),
            "torch int8": lambda: frozen(x),
            "ORT int8 QDQ": lambda: session.run(None, feed),
            "aotc f32": lambda: aotc_f.run(),
        }
        rounds = time_rounds(runners, args.rounds, args.per_round)
        med = {k: statistics.median(v) for k, v in rounds.items()}
        rows.append((name, rounds, med, median_ratio(rounds, "aotc int8", ["torch int8", "ORT int8 QDQ"]),
                     median_ratio(rounds, "aotc int8", ["aotc f32"]),
                     off, want.size, ort_top1, os.path.getsize(q_so), os.path.getsize(f_so), qdq_bytes, q_compile))
        aotc_q.close()
        aotc_f.close()

    print(f"\nint8, batch 1, {args.threads} threads, {args.size}x{args.size}, {args.rounds} rounds x "
          f"{args.per_round} runs; ms: median of the round medians [min-max]")
    print("| model | aotc int8 | torch int8 (fbgemm) | ORT int8 QDQ | aotc f32 | aotc / best int8 peer | aotc int8 / "
          "aotc f32 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rounds, med, vs_peer, vs_f32, *_ in rows:
        cells = [f"{med[k]:.2f} [{min(rounds[k]):.2f}-{max(rounds[k]):.2f}]" for k in
                 ("aotc int8", "torch int8", "ORT int8 QDQ", "aotc f32")]
        print(f"| {name} | " + " | ".join(cells) + f" | {vs_peer:.2f} | {vs_f32:.2f} |")
    print()
    for name, _, _, _, _, off, size, ort_top1, q_bytes, f_bytes, qdq_bytes, q_compile in rows:
        print(f"{name}: aotc int8 vs torch: {off} of {size} outputs differ; ORT QDQ top-1 "
              f"{'agrees' if ort_top1 else 'DIFFERS'} with torch's; library {q_bytes / 1e6:.1f} MB (f32 "
              f"{f_bytes / 1e6:.1f} MB, ORT QDQ file {qdq_bytes / 1e6:.1f} MB); aotc int8 compile {q_compile:.1f} s")


if __name__ == "__main__":
    main()
