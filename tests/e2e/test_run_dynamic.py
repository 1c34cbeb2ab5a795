"""aotc-run on models with dynamic dims (aotc --input x:BxSx16 --dim B=1..4 --dim S=1..32):
--info names the dims with their ranges (and "multiple of N" where an op needs it) and shows
the outputs' sizes in them; a run takes .npy inputs of any shape the model accepts, matches
torch there (at size 1, the largest and between) and writes outputs of the run's shape,
scalars included; a shape out of range, off its multiple or a dim name with two sizes fails
(exit status 1) with a message that names the dim and writes nothing; --bench times a
shape given with --shape and asks for one when it is missing.

Exit status 77 (meson's skip) without numpy, which the .npy files need."""
import json
import os
import sys

import torch

try:
    import numpy as np
except ImportError:
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (SKIP, TOLERANCE, aotc_command, arg_parser, compile_module, expect, finish, rel_l2,  # noqa: E402
                    run_aotc_run, save_module, write_inputs)


class LinearRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Masked(torch.nn.Module):
    """Two inputs that share the dims B and S; outputs [B, S, 8], [B*S, 8] and a scalar."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x, mask):
        y = torch.relu(self.fc(x)) * mask.unsqueeze(-1)
        return y, y.reshape(-1, 8), y.sum()


class Pairs(torch.nn.Module):
    """A view that takes the S rows of 4 two at a time: S must be even."""

    def forward(self, x):
        return torch.relu(x.view(x.size(0), -1, 8))


class Runner:
    def __init__(self, args):
        self.aotc = args.aotc
        self.aotc_run = args.aotc_run
        self.workdir = args.workdir
        self.target = getattr(args, "target", "cpu")  # --target of every compile

    def path(self, name):
        return os.path.join(self.workdir, name)

    def aotc_command(self, name, module, inputs, dims):
        """Scripts and saves module as NAME.pt; the aotc command that compiles it to NAME.so."""
        pt = save_module(module, self.path(name + ".pt"))
        return aotc_command(self.aotc, pt, self.path(name + ".so"), inputs, dims, self.target)

    def compile(self, name, module, inputs, dims):
        """Scripts module and compiles it to NAME.so (raises when aotc fails)."""
        return compile_module(self.aotc, module, self.path(name + ".so"), inputs, dims, self.target)

    def run(self, so, *args):
        return run_aotc_run(self.aotc_run, so, *args)

    def info(self, so):
        result = self.run(so, "--info")
        print(result.stdout)
        expect(f"{os.path.basename(so)} --info exits 0", result.returncode == 0, result.stderr)
        return result.stdout

    def check_run(self, name, so, module, arrays, tag, extra=()):
        """Runs so on arrays ({input: ndarray}) and compares every output with module's;
        extra: more aotc-run arguments."""
        out = self.path(f"out_{tag}")
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(out):
            os.remove(os.path.join(out, f))
        result = self.run(so, "--output-dir", out, *write_inputs(arrays, self.workdir, f"{tag}_"), *extra)
        if result.returncode != 0:
            expect(name, False, result.stderr)
            return
        with torch.no_grad():
            want = module(*[torch.from_numpy(a) for a in arrays.values()])
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        problems = []
        for i, w in enumerate(want):
            got = np.load(os.path.join(out, f"out{i}.npy"))
            w = w.numpy()
            if got.shape != w.shape:
                problems.append(f"out{i}: shape {got.shape}, torch {w.shape}")
            elif rel_l2(got, w) > TOLERANCE:
                problems.append(f"out{i}: relative L2 {rel_l2(got, w):.2e}")
            elif f"wrote {os.path.join(out, f'out{i}.npy')} (" not in result.stdout or \
                    f"[{', '.join(map(str, w.shape))}])" not in result.stdout:
                problems.append(f"out{i}: not reported with its shape: {result.stdout}")
        expect(name, not problems, problems)

    def check_fails(self, name, so, arrays, words, tag, extra=()):
        """A run on arrays fails with exit status 1, a message holding words, and no output."""
        out = self.path(f"out_{tag}")
        result = self.run(so, "--output-dir", out, *write_inputs(arrays, self.workdir, f"{tag}_"), *extra)
        ok = result.returncode == 1 and all(w in result.stderr for w in words) and \
            not (os.path.isdir(out) and os.listdir(out))
        expect(name, ok, (result.returncode, result.stderr))


def main():
    args = arg_parser(aotc_run=True).parse_args()
    if np is None:
        print("numpy is not importable: skipped")
        return SKIP
    os.makedirs(args.workdir, exist_ok=True)
    r = Runner(args)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    def floats(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def mask(*shape):
        return (rng.random(shape) < 0.7).astype(np.float32)

    # ---- one input: Linear + ReLU over x [B, S, 16] ----
    linear = LinearRelu()
    so = r.compile("linear", linear, ["x:BxSx16"], ["B=1..4", "S=1..32"])
    text = r.info(so)
    expect("--info: an input's dims by name with their ranges",
           "\n  0 x: float32 [B, S, 16] with B in 1..4, S in 1..32 (at most 8192 bytes)\n" in text, text)
    expect("--info: an output's dims by name",
           "\n  0 output0: float32 [B, S, 8] (at most 4096 bytes)\n" in text, text)
    result = r.run(so, "--info", "--json")
    info = json.loads(result.stdout) if result.returncode == 0 else {}
    x_info = (info.get("inputs") or [{}])[0]
    expect("--info --json: -1 for a dynamic dim, the largest size in bytes",
           (x_info.get("shape"), x_info.get("size_bytes")) == ([-1, -1, 16], 8192), x_info)
    expect("--info --json: every dim's range",
           x_info.get("dims") == [{"name": "B", "min": 1, "max": 4, "multiple_of": 1},
                                  {"name": "S", "min": 1, "max": 32, "multiple_of": 1},
                                  {"name": None, "min": 16, "max": 16, "multiple_of": 1}], x_info)
    for b, s in [(1, 1), (4, 32), (2, 7), (4, 1), (1, 32)]:
        r.check_run(f"linear at B={b}, S={s} matches torch", so, linear, {"x": floats(b, s, 16)},
                    f"linear_{b}_{s}")
    r.check_fails("S above its range", so, {"x": floats(2, 33, 16)}, ["S = 33", "1..32"], "linear_s33")
    r.check_fails("B above its range", so, {"x": floats(5, 3, 16)}, ["B = 5", "1..4"], "linear_b5")
    r.check_fails("a fixed dim of another size", so, {"x": floats(2, 3, 15)}, ["dim 2", "x"], "linear_c15")
    r.check_fails("another rank", so, {"x": floats(2, 3)}, ["rank 2", "[B, S, 16]"], "linear_rank")
    r.check_fails("another dtype", so, {"x": floats(2, 3, 16).astype(np.float64)},
                  ["expected float32 [B, S, 16]", "float64"], "linear_f64")

    # ---- two inputs sharing B and S; an output of B*S rows and a scalar ----
    masked = Masked()
    so = r.compile("masked", masked, ["x:BxSx16", "mask:BxS"], ["B=1..4", "S=1..32"])
    text = r.info(so)
    expect("--info: the second input's shared dims",
           "\n  1 mask: float32 [B, S] with B in 1..4, S in 1..32 (at most 512 bytes)\n" in text, text)
    expect("--info: an output's size in the dims",
           "\n  1 output1: float32 [B*S, 8] (at most 4096 bytes)\n" in text, text)
    expect("--info: a scalar output", "\n  2 output2: float32 [] (a scalar, 4 bytes)\n" in text, text)
    for b, s in [(1, 1), (4, 32), (3, 5)]:
        r.check_run(f"two inputs at B={b}, S={s} match torch", so, masked,
                    {"x": floats(b, s, 16), "mask": mask(b, s)}, f"masked_{b}_{s}")
    r.check_fails("a dim name with two sizes", so, {"x": floats(2, 5, 16), "mask": mask(2, 6)},
                  ["S = 6", "S = 5", "mask"], "masked_mismatch")
    r.check_fails("a dim name with two sizes (B)", so, {"x": floats(2, 5, 16), "mask": mask(3, 5)},
                  ["B = 3", "B = 2"], "masked_mismatch_b")

    # ---- --bench at a --shape ----
    result = r.run(so, "--bench", "--shape", "x=2x7x16", "--shape", "mask=2x7", "--iters", "3",
                   "--warmup", "1")
    expect("--bench at --shape",
           result.returncode == 0 and " at x=2x7x16, mask=2x7: 3 runs after 1 warm-up" in result.stdout,
           (result.returncode, result.stdout, result.stderr))
    result = r.run(so, "--bench", "--json", "--shape", "x=4x32x16", "--shape", "mask=4x32", "--iters", "2")
    bench = json.loads(result.stdout) if result.returncode == 0 else {}
    expect("--bench --json names the shapes", bench.get("shapes") == {"x": [4, 32, 16], "mask": [4, 32]}
           and bench.get("iters") == 2, (result.stdout, result.stderr))
    x_file = r.path("bench_x.npy")
    np.save(x_file, floats(1, 3, 16))
    result = r.run(so, "--bench", "--input", f"x={x_file}", "--shape", "mask=1x3", "--iters", "2")
    expect("--bench: one input from a file, one at --shape", result.returncode == 0, result.stderr)
    result = r.run(so, "--bench", "--shape", "x=2x7x16", "--iters", "2")
    expect("--bench without a shape for a dynamic input", result.returncode == 1
           and "--shape mask=" in result.stderr, (result.returncode, result.stderr))
    result = r.run(so, "--bench", "--shape", "x=2x7x16", "--shape", "mask=2x8", "--iters", "2")
    expect("--bench: --shape with a dim name of two sizes",
           result.returncode == 1 and "S = 8" in result.stderr, (result.returncode, result.stderr))
    result = r.run(so, "--bench", "--shape", "x=9x7x16", "--shape", "mask=9x7", "--iters", "2")
    expect("--bench: --shape out of range", result.returncode == 1 and "B = 9" in result.stderr,
           (result.returncode, result.stderr))
    for bad in ["x=2x", "x=", "x=2xSx16", "x=-2x3x16"]:
        result = r.run(so, "--bench", "--shape", bad)
        expect(f"--shape {bad}: a usage error", result.returncode == 2 and "--shape" in result.stderr,
               (result.returncode, result.stderr))
    result = r.run(so, "--shape", "x=2x7x16", "--output-dir", r.path("out_shape"))
    expect("--shape without --bench: a usage error", result.returncode == 2 and "--bench" in result.stderr,
           (result.returncode, result.stderr))

    # ---- a dim that an op needs even ----
    pairs = Pairs()
    so = r.compile("pairs", pairs, ["x:BxSx4"], ["B=1..3", "S=2..16"])
    text = r.info(so)
    expect("--info: a dim's multiple",
           "\n  0 x: float32 [B, S, 4] with B in 1..3, S in 2..16 (multiple of 2) (" in text, text)
    for b, s in [(1, 2), (3, 16), (2, 6)]:
        r.check_run(f"pairs at B={b}, S={s} matches torch", so, pairs, {"x": floats(b, s, 4)},
                    f"pairs_{b}_{s}")
    r.check_fails("S off its multiple", so, {"x": floats(2, 5, 4)}, ["S = 5", "multiple of 2"], "pairs_s5")

    return finish("aotc-run runs models with dynamic dims")


if __name__ == "__main__":
    sys.exit(main())
