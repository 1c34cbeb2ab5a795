"""aotc --check MODEL.pt --input ...: prints the model's op census (every op reached for
these input shapes, its count, supported or not; what was evaluated at compile time
separately), exits 0 when the model can be compiled and 1 when not, and writes no file."""
import inspect
import os
import re
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, expect, finish  # noqa: E402


class Supported(nn.Module):
    """Shape arithmetic, an if on a size and an unrolled loop around supported ops."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        for _ in range(x.size(0) // 2):  # unrolled by aotc: twice for 4 rows
            x = F.relu(self.fc(x))
        if x.size(0) > 1:
            x = x + 1.0
        return x.view(x.size(0), -1)


class Mixed(nn.Module):
    """Supported ops and two unsupported ones, one of them used twice."""

    def forward(self, x):
        y = torch.relu(x)
        y = torch.inverse(y) + torch.inverse(x)
        return torch.logdet(y) + y.sum()


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, mask):
        return self.attention(x, x, x, key_padding_mask=mask)[0]


def census_rows(text, section):
    """{op: (count, status)} of the run-time table, or {op: count} of the compile-time one."""
    rows = {}
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(section))
    for line in lines[start + 1:]:
        if not line.startswith("  ") or not line.strip():
            break
        parts = line.split(None, 2)
        if parts[0] == "uses":
            continue
        rows[parts[1]] = (int(parts[0]), parts[2] if len(parts) > 2 else "")
    return rows


def main():
    args = arg_parser().parse_args()
    w = args.workdir
    os.makedirs(w, exist_ok=True)
    before = set(os.listdir(w))

    supported = os.path.join(w, "supported.pt")
    torch.jit.save(torch.jit.script(Supported()), supported)
    r = subprocess.run([args.aotc, "--check", supported, "--input", "x:4x6"], capture_output=True, text=True)
    print(r.stdout)
    expect("supported model exits 0", r.returncode == 0, f"status {r.returncode}: {r.stderr}")
    runtime = census_rows(r.stdout, "run-time ops")
    compile_time = census_rows(r.stdout, "evaluated at compile time")
    expect("linear counted per unrolled use", runtime.get("aten::linear") == (2, "supported"), runtime)
    expect("relu, add and view listed", all(op in runtime for op in ("aten::relu", "aten::add", "aten::view")),
           runtime)
    expect("shape arithmetic evaluated at compile time",
           "aten::size" in compile_time and "prim::If" in compile_time and "prim::Loop" in compile_time,
           compile_time)
    expect("verdict line", "the model can be compiled" in r.stdout, r.stdout[-300:])

    mixed = os.path.join(w, "mixed.pt")
    torch.jit.save(torch.jit.script(Mixed()), mixed)
    r = subprocess.run([args.aotc, "--check", mixed, "--input", "x:3x3"], capture_output=True, text=True)
    print(r.stdout)
    expect("unsupported model exits 1", r.returncode == 1, f"status {r.returncode}: {r.stderr}")
    runtime = census_rows(r.stdout, "run-time ops")
    expect("unsupported op counted", runtime.get("aten::linalg_inv") == (2, "UNSUPPORTED"), runtime)
    expect("second unsupported op", runtime.get("aten::logdet") == (1, "UNSUPPORTED"), runtime)
    expect("supported ops beside them", runtime.get("aten::relu") == (1, "supported"), runtime)
    lines, start = inspect.getsourcelines(Mixed)
    inverse_line = start + next(i for i, line in enumerate(lines) if "torch.inverse(y)" in line)
    expect("source lines of unsupported uses", f"test_check_census.py:{inverse_line}" in r.stdout, r.stdout)
    expect("schemas of unsupported ops", "aten::logdet(Tensor self) -> Tensor" in r.stdout, r.stdout)
    expect("verdict line", re.search(r"2 not compilable.*cannot be compiled", r.stdout) is not None, r.stdout[-300:])

    # An op whose output shape depends on its input's values says so where it is reported.
    class Nonzero(nn.Module):
        def forward(self, x):
            return torch.nonzero(x > 0)

    nonzero = os.path.join(w, "nonzero.pt")
    torch.jit.save(torch.jit.script(Nonzero()), nonzero)
    r = subprocess.run([args.aotc, nonzero, "-o", os.path.join(w, "nonzero.so"), "--input", "x:3x3"],
                       capture_output=True, text=True)
    expect("data-dependent shape named", r.returncode == 1 and "aten::nonzero" in r.stderr
           and "why: its output's shape depends on its input's values" in r.stderr, r.stderr)

    # A lowering that refuses a use (shapes that do not broadcast) makes the model fail too.
    class Bad(nn.Module):
        def forward(self, x, y):
            return x + y

    bad = os.path.join(w, "bad.pt")
    torch.jit.save(torch.jit.script(Bad()), bad)
    r = subprocess.run([args.aotc, "--check", bad, "--input", "x:2x3", "--input", "y:4x3"],
                       capture_output=True, text=True)
    runtime = census_rows(r.stdout, "run-time ops")
    expect("refused use", r.returncode == 1 and "refused" in runtime.get("aten::add", (0, ""))[1]
           and "cannot be broadcast" in r.stdout, r.stdout)

    # Errors before the census (a missing file) are errors, with status 1.
    r = subprocess.run([args.aotc, "--check", os.path.join(w, "nope.pt"), "--input", "x:1"],
                       capture_output=True, text=True)
    expect("missing file", r.returncode == 1 and "no such file" in r.stderr, r.stderr)

    # Scripted nn modules that stress the frontend reach their core op, whether or not it is
    # supported yet, with no other problem: nn.LSTM (forward is overloaded: forward__0,
    # forward__1), nn.MultiheadAttention (attributes that freezing keeps, `query is key`),
    # nn.TransformerEncoder (arguments left to their defaults: mask=None, ...).
    torch.manual_seed(0)
    modules = {
        "lstm": (nn.LSTM(8, 16, 2, bidirectional=True, batch_first=True), ["input:2x5x8"], "aten::lstm"),
        "mha": (MHA(), ["x:2x5x16", "mask:2x5:bool"], "aten::_native_multi_head_attention"),
        "encoder": (nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2,
                                          enable_nested_tensor=False), ["src:2x5x16"],
                    "aten::_transformer_encoder_layer_fwd"),
    }
    for name, (module, inputs, core_op) in modules.items():
        path = os.path.join(w, name + ".pt")
        torch.jit.save(torch.jit.script(module.eval()), path)
        cmd = [args.aotc, "--check", path]
        for spec in inputs:
            cmd += ["--input", spec]
        r = subprocess.run(cmd, capture_output=True, text=True)
        runtime = census_rows(r.stdout, "run-time ops") if "run-time ops" in r.stdout else {}
        expect(f"scripted {name} reaches {core_op}",
               r.returncode in (0, 1) and core_op in runtime and "problem" not in r.stdout,
               r.stdout[-1500:] + r.stderr[-1500:])

    left = set(os.listdir(w)) - before - {f"{n}.pt" for n in ("supported", "mixed", "nonzero", "bad", "lstm", "mha",
                                                              "encoder")}
    expect("no file written", not left, left)
    return finish("aotc --check behaves")


if __name__ == "__main__":
    sys.exit(main())
