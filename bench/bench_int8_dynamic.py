"""Dynamic int8 CPU benchmark: a BERT-base-shaped encoder quantized with torch's
quantize_dynamic (every nn.Linear to quantized::linear_dynamic) through aotc, against torch
running the same scripted module, ONNX Runtime on the float model quantized by its own
quantize_dynamic, and aotc's float32 library of the float model, in one process.
    .venv/bin/python bench/bench_int8_dynamic.py                  # 12 layers, seq 128, batch 1
    .venv/bin/python bench/bench_int8_dynamic.py --layers 4 --rounds 3 --per-round 5
The encoder: tests/e2e/models_quantized.py's AttentionBlock at hidden 768, 12 heads, feed-forward
3072 (BERT-base's linear layers; torch's nn.TransformerEncoderLayer cannot run once
quantize_dynamic has replaced its linear layers), random weights, seeded.
Rounds alternate the runtimes (one untimed run each, then --per-round timed runs); the table
gives the median over rounds and the spread (min-max of the round medians).
Accuracy: each int8 output against the float32 model's (relative L2), and aotc's against
torch's int8. Dynamic quantization scales each activation by its own extremes, so a one-ulp
difference in an upstream float result (layer norm, softmax) can move a whole tensor's scale:
in a deep stack aotc's int8 output then differs from torch's by quantization noise, not by
less (the program prints how far torch's own output moves when every input moves by one ulp). The check is that aotc's int8 is as close to float32 as torch's (within 1.25x).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from bench_cpu import AotcModel  # noqa: E402
from bench_int8 import median_ratio, time_rounds  # noqa: E402
from models_quantized import AttentionBlock, aotc_engine_args  # noqa: E402


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.blocks = nn.Sequential(*[AttentionBlock(768, 12, 3072) for _ in range(layers)])

    def forward(self, x):
        return self.blocks(x)


def rel_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def ort_dynamic(model, x, work, threads):
    """An ONNX Runtime session of the float model quantized by quantize_dynamic (int8 weights)."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    f32_path, q_path = os.path.join(work, "encoder_f32.onnx"), os.path.join(work, "encoder_dynamic.onnx")
    torch.onnx.export(model, (x,), f32_path, input_names=["x"], opset_version=17, dynamo=False)
    quantize_dynamic(f32_path, q_path, weight_type=QuantType.QInt8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(q_path, opts, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", default="x86", choices=["x86", "fbgemm"], help="torch's quantized engine")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build", "compiler", "aotc"))
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench_int8_dynamic"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = args.engine
    torch.manual_seed(95)
    model = Encoder(args.layers).eval()
    x = torch.randn(1, args.seq, 768, generator=torch.Generator().manual_seed(96))
    qmodel = torch.jit.script(torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8))
    q_pt, f_pt = os.path.join(args.workdir, "encoder_int8.pt"), os.path.join(args.workdir, "encoder_f32.pt")
    qmodel.save(q_pt)
    torch.jit.script(model).save(f_pt)
    shape = f"x:1x{args.seq}x768"
    sos = {}
    for pt in (q_pt, f_pt):
        so = pt[:-3] + ".so"
        start = time.monotonic()
        subprocess.run([args.aotc, pt, "--input", shape, "-o", so] + aotc_engine_args(), check=True)
        sos[pt] = (so, time.monotonic() - start)
    aotc_q = AotcModel(sos[q_pt][0], [x], args.threads)
    aotc_f = AotcModel(sos[f_pt][0], [x], args.threads)
    torch_q = torch.jit.load(q_pt)
    session = ort_dynamic(model, x, args.workdir, args.threads)
    feed = {"x": x.numpy()}
    with torch.no_grad():
        want = torch_q(x).numpy()
        want_f32 = model(x).numpy()
    got = np.asarray(aotc_q.run()[0]).reshape(want.shape)
    err_aotc = rel_l2(got, want_f32)
    err_torch = rel_l2(want, want_f32)
    err_ort = rel_l2(session.run(None, feed)[0], want_f32)
    aotc_vs_torch = rel_l2(got, want)
    # How far torch's own int8 output moves when every input value moves by one ulp.
    with torch.no_grad():
        nudged = torch.from_numpy(np.nextafter(x.numpy(), np.float32(np.inf)))
        torch_vs_nudged = rel_l2(torch_q(nudged).numpy(), want)
    runners = {
        "aotc int8": lambda: aotc_q.run(),
        "torch int8": lambda: torch_q(x),
        "ORT int8 dynamic": lambda: session.run(None, feed),
        "aotc f32": lambda: aotc_f.run(),
    }
    rounds = time_rounds(runners, args.rounds, args.per_round)
    med = {k: statistics.median(v) for k, v in rounds.items()}
    vs_peer = median_ratio(rounds, "aotc int8", ["torch int8", "ORT int8 dynamic"])
    vs_f32 = median_ratio(rounds, "aotc int8", ["aotc f32"])
    print(f"\ndynamic int8, {args.layers} BERT-base layers, batch 1, seq {args.seq}, {args.threads} threads, "
          f"{args.rounds} rounds x {args.per_round} runs; ms: median of the round medians [min-max]")
    print("| aotc int8 | torch int8 | ORT int8 dynamic | aotc f32 | aotc / best int8 peer | aotc int8 / aotc f32 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    cells = [f"{med[k]:.2f} [{min(rounds[k]):.2f}-{max(rounds[k]):.2f}]" for k in runners]
    print("| " + " | ".join(cells) + f" | {vs_peer:.2f} | {vs_f32:.2f} |")
    print(f"\nrelative L2 against the float32 model: aotc int8 {err_aotc:.2e}, torch int8 {err_torch:.2e}, "
          f"ORT int8 {err_ort:.2e}; aotc int8 against torch int8 {aotc_vs_torch:.2e} (torch int8 against itself "
          f"with every input moved by one ulp: {torch_vs_nudged:.2e}); library "
          f"{os.path.getsize(sos[q_pt][0]) / 1e6:.1f} MB (f32 {os.path.getsize(sos[f_pt][0]) / 1e6:.1f} MB); "
          f"aotc int8 compile {sos[q_pt][1]:.1f} s")
    aotc_q.close()
    aotc_f.close()
    if err_aotc > 1.25 * err_torch + 1e-6:
        print("FAIL: aotc's int8 output is further from float32 than torch's int8")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
