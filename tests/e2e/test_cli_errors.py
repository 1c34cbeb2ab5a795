"""Every documented error path of the aotc command line: each must exit with status 1
(2 for usage mistakes), print one clear 'aotc: error:' message that names the problem,
and leave no output file behind (an existing file at the -o path stays untouched)."""
import inspect
import os
import subprocess
import sys
import zipfile

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, expect, failures, finish  # noqa: E402


def check(name, cmd, want_status, *needles, out=None, keep=None, env=None):
    if out and os.path.exists(out) and keep is None:
        os.remove(out)
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    problems = []
    if result.returncode != want_status:
        problems.append(f"exit status {result.returncode}, want {want_status}")
    if "aotc: error:" not in result.stderr:
        problems.append("no 'aotc: error:' line")
    for needle in needles:
        if needle not in result.stderr:
            problems.append(f"message lacks {needle!r}")
    if out and keep is None and os.path.exists(out):
        problems.append("an output file was left behind")
    if out and keep is not None and open(out, "rb").read() != keep:
        problems.append("the existing output file was changed")
    leftovers = [f for f in os.listdir(os.path.dirname(out) or ".") if ".tmp." in f] if out else []
    if leftovers:
        problems.append(f"temporary files left: {leftovers}")
    status = "FAIL" if problems else "ok"
    print(f"{status:4} {name}: {result.stderr.strip().splitlines()[0] if result.stderr.strip() else ''}")
    if problems:
        failures.append(name)
        print("     " + "; ".join(problems))
        print("     stderr: " + result.stderr.strip()[:800].replace("\n", "\n             "))


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class Unsupported(nn.Module):
    """Three ops that aotc has no lowering for (and none is planned: an inverse and
    determinants, which need a factorization), at several lines, one of them in an unrolled
    loop."""

    def forward(self, x):
        a = torch.inverse(x)
        b = torch.inverse(a)
        for i in range(x.size(0)):  # unrolled by aotc: 4 uses of one line
            b = b + torch.det(b)
        return b * torch.logdet(x).sum()


class ManyProblems(nn.Module):
    """An unsupported op, an if on a tensor's value and a loop whose trip count comes from
    the data: all three are reported at once."""

    def forward(self, x):
        y = torch.inverse(x) + x
        if x.sum() > 0:
            y = y * 2.0
        n = int(x.max().item())
        for i in range(n):
            y = y + 1.0
        return y


class DataDependentWhile(nn.Module):
    def forward(self, x):
        while bool((x * x).mean() > 1.0):
            x = x * 0.5
        return x


class DataDependentLoop(nn.Module):
    def forward(self, x):
        for i in range(int(x.sum())):
            x = x + 1.0
        return x


class ItemFeedsShape(nn.Module):
    def forward(self, x):
        n = int(x.abs().max().item())
        return x.view(n, -1)


class InPlaceExpandedView(nn.Module):
    def forward(self, x):
        y = x * 1.0
        e = y.expand(3, 4, 5)
        e.add_(1.0)
        return y


def line_of(cls, text):
    """The line of this file where text occurs inside cls: what aotc must point at."""
    lines, start = inspect.getsourcelines(cls)
    for i, line in enumerate(lines):
        if text in line:
            return f"test_cli_errors.py:{start + i}"
    raise ValueError(f"{text!r} not in {cls.__name__}")


class TakesInt(nn.Module):
    def forward(self, x, n: int):
        return x * n


class DataDependentIf(nn.Module):
    def forward(self, x):
        if bool(x.mean()):
            return x + 1
        return x - 1


class Checks(nn.Module):
    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("expected a 4-d input")
        return x * 2


def main():
    args = arg_parser().parse_args()
    aotc = args.aotc
    w = args.workdir
    os.makedirs(w, exist_ok=True)
    out = os.path.join(w, "out.so")

    add = os.path.join(w, "add.pt")
    torch.jit.save(torch.jit.script(Add()), add)
    unsupported = os.path.join(w, "unsupported.pt")
    torch.jit.save(torch.jit.script(Unsupported()), unsupported)
    takes_int = os.path.join(w, "takes_int.pt")
    torch.jit.save(torch.jit.script(TakesInt()), takes_int)
    dyn_if = os.path.join(w, "dyn_if.pt")
    torch.jit.save(torch.jit.script(DataDependentIf()), dyn_if)
    checks = os.path.join(w, "checks.pt")
    torch.jit.save(torch.jit.script(Checks()), checks)
    pickle = os.path.join(w, "state_dict.pt")
    torch.save({"w": torch.randn(3)}, pickle)
    empty = os.path.join(w, "empty.pt")
    open(empty, "wb").close()
    garbage = os.path.join(w, "garbage.pt")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    truncated = os.path.join(w, "truncated.pt")
    with open(add, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[: len(data) // 2])
    no_code = os.path.join(w, "no_code.pt")
    with zipfile.ZipFile(add) as src, zipfile.ZipFile(no_code, "w") as dst:
        for item in src.infolist():
            if "/code/" not in item.filename:
                dst.writestr(item, src.read(item.filename))

    good = ["--input", "x:2x3", "--input", "y:2x3"]
    check("usage: no arguments", [aotc], 2, "no model file")
    check("usage: no -o", [aotc, add] + good, 2, "no output file")
    check("usage: unknown option", [aotc, add, "-o", out, "--frobnicate"] + good, 2, "--frobnicate", out=out)
    check("usage: bad dims", [aotc, add, "-o", out, "--input", "x:2xq", "--input", "y:2x3"], 2, "2xq", out=out)
    check("usage: bad dtype", [aotc, add, "-o", out, "--input", "x:2x3:float64", "--input", "y:2x3"], 2,
          "float64", out=out)
    check("usage: zero size", [aotc, add, "-o", out, "--input", "x:0x3", "--input", "y:2x3"], 2, "positive", out=out)
    check("usage: bad --winograd", [aotc, add, "-o", out, "--winograd", "maybe"] + good, 2, "--winograd",
          "'maybe'", out=out)
    check("usage: bad --cpu-threads", [aotc, add, "-o", out, "--cpu-threads", "0"] + good, 2, "--cpu-threads",
          "'0'", out=out)
    check("usage: bad --quantized-engine", [aotc, add, "-o", out, "--quantized-engine", "qnnpack"] + good, 2,
          "--quantized-engine", "'qnnpack'", out=out)
    check("usage: duplicate input", [aotc, add, "-o", out, "--input", "x:2x3", "--input", "x:2x3"], 2, "twice",
          out=out)
    check("missing file", [aotc, os.path.join(w, "nope.pt"), "-o", out] + good, 1, "no such file", out=out)
    check("directory", [aotc, w, "-o", out] + good, 1, "directory", out=out)
    check("empty file", [aotc, empty, "-o", out] + good, 1, "not a TorchScript file", out=out)
    check("random bytes", [aotc, garbage, "-o", out] + good, 1, "not a TorchScript file", out=out)
    check("truncated archive", [aotc, truncated, "-o", out] + good, 1, truncated, out=out)
    check("zip without code", [aotc, no_code, "-o", out] + good, 1, no_code, out=out)
    check("torch.save pickle", [aotc, pickle, "-o", out] + good, 1, "torch.jit.save", out=out)
    check("too few --input", [aotc, add, "-o", out, "--input", "x:2x3"], 1, "takes 2 argument", out=out)
    check("wrong input name", [aotc, add, "-o", out, "--input", "x:2x3", "--input", "z:2x3"], 1, "'y'", out=out)
    check("non-tensor argument", [aotc, takes_int, "-o", out, "--input", "x:2", "--input", "n:1"], 1,
          "has type int", out=out)
    check("shapes that do not broadcast", [aotc, add, "-o", out, "--input", "x:2x3", "--input", "y:4x3"], 1,
          "aten::add", "cannot be broadcast", out=out)
    # Every unsupported op once, with its schema, its count and every line that uses it
    # (the loop's four uses of one line counted there).
    check("unsupported ops listed at once", [aotc, unsupported, "-o", out, "--input", "x:4x4"], 1,
          "3 unsupported op(s), 7 use(s)",
          "aten::linalg_inv  x2", "schema: aten::linalg_inv(Tensor A) -> Tensor",
          line_of(Unsupported, "a = torch.inverse(x)") + ":  a = torch.inverse(x)",
          line_of(Unsupported, "b = torch.inverse(a)"),
          "aten::linalg_det  x4", line_of(Unsupported, "torch.det(b)") + " (x4)",
          "aten::logdet  x1", "schema: aten::logdet(Tensor self) -> Tensor", line_of(Unsupported, "torch.logdet"),
          out=out)
    check("data-dependent if", [aotc, dyn_if, "-o", out, "--input", "x:4"], 1, "run time",
          line_of(DataDependentIf, "if bool(x.mean())"), out=out)
    many = os.path.join(w, "many.pt")
    torch.jit.save(torch.jit.script(ManyProblems()), many)
    check("every problem at once", [aotc, many, "-o", out, "--input", "x:4"], 1,
          "aten::linalg_inv  x1", line_of(ManyProblems, "torch.inverse"),
          line_of(ManyProblems, "if x.sum() > 0"), line_of(ManyProblems, "x.max().item()"),
          "tensor computed at run time into a Python value", out=out)
    dyn_while = os.path.join(w, "dyn_while.pt")
    torch.jit.save(torch.jit.script(DataDependentWhile()), dyn_while)
    check("data-dependent while", [aotc, dyn_while, "-o", out, "--input", "x:4"], 1, "run time",
          line_of(DataDependentWhile, "while bool("), out=out)
    dyn_loop = os.path.join(w, "dyn_loop.pt")
    torch.jit.save(torch.jit.script(DataDependentLoop()), dyn_loop)
    check("loop over a tensor's value", [aotc, dyn_loop, "-o", out, "--input", "x:4"], 1, "Python value",
          line_of(DataDependentLoop, "range(int(x.sum()))"), out=out)
    item_shape = os.path.join(w, "item_shape.pt")
    torch.jit.save(torch.jit.script(ItemFeedsShape()), item_shape)
    check(".item() feeding a shape", [aotc, item_shape, "-o", out, "--input", "x:4x2"], 1, "Python value",
          line_of(ItemFeedsShape, ".item()"), out=out)
    expanded = os.path.join(w, "expanded.pt")
    torch.jit.save(torch.jit.script(InPlaceExpandedView()), expanded)
    # Writing through an expanded view is refused (its elements alias each other); while
    # aten::expand has no lowering, that is what gets reported instead.
    lowered = subprocess.run([aotc, "--list-ops"], capture_output=True, text=True).stdout.split()
    if "aten::expand" in lowered:
        check("in-place update through expand", [aotc, expanded, "-o", out, "--input", "x:4x5"], 1,
              "through a view made by aten::expand is not supported", line_of(InPlaceExpandedView, "e.add_(1.0)"),
              out=out)
    else:
        check("in-place update through expand", [aotc, expanded, "-o", out, "--input", "x:4x5"], 1,
              "aten::expand  x1", line_of(InPlaceExpandedView, "y.expand("), out=out)
    check("usage: --check with -o", [aotc, "--check", add, "-o", out] + good, 2, "--check writes no file", out=out)
    check("usage: --markdown alone", [aotc, "--markdown"], 2, "--list-ops")
    check("usage: --no-build without --emit-source", [aotc, add, "-o", out, "--no-build"] + good, 2,
          "--no-build goes with --emit-source", out=out)
    check("model raises for the shapes", [aotc, checks, "-o", out, "--input", "x:4x4"], 1,
          "expected a 4-d input", out=out)
    check("unknown method", [aotc, add, "-o", out, "--method", "nope"] + good, 1, "no method 'nope'", out=out)
    check("unknown target triple", [aotc, add, "-o", out, "--target-triple", "riscv64-linux-gnu"] + good, 1,
          "unknown target triple 'riscv64-linux-gnu'", "aarch64-linux-gnu", out=out)
    no_runtime = dict(os.environ, AOTC_RUNTIME_LIB_AARCH64_LINUX_GNU=os.path.join(w, "nope.a"))
    check("target runtime not built", [aotc, add, "-o", out, "--target-triple", "aarch64-linux-gnu"] + good, 1,
          "no aotc runtime for aarch64-linux-gnu", "nope.a", out=out, env=no_runtime)
    check("output directory missing", [aotc, add, "-o", os.path.join(w, "no", "dir", "m.so")] + good, 1,
          "does not exist")
    # An existing file at -o survives a failed compile byte for byte.
    with open(out, "wb") as f:
        f.write(b"precious")
    check("existing output untouched", [aotc, unsupported, "-o", out, "--input", "x:4x4"], 1, "aten::linalg_inv",
          out=out, keep=b"precious")
    os.remove(out)

    # And the success path writes the file.
    ok = subprocess.run([aotc, add, "-o", out] + good, capture_output=True, text=True)
    expect("success path", ok.returncode == 0 and os.path.exists(out), ok.stderr[-2000:])

    # --no-build (scripts/check_generated_sources.py): the sources and build.ninja in the
    # --emit-source directory, no .so even where -o names one; with --dim too; and for
    # --target cuda without the CUDA toolchain (a runtime that is not there): model.cu, and
    # a note instead of build.ninja.
    sources = ["model.cpp", "weights.S", "weights.bin", "exports.map", "build.ninja"]
    for name, extra, files in [
            ("--no-build", ["-o", out] + good, sources),
            ("--no-build without -o", good, sources),
            ("--no-build with --dim", ["-o", out, "--input", "x:Bx3", "--input", "y:Bx3", "--dim", "B=1..8"],
             sources),
            ("--no-build --target cuda", ["-o", out, "--target", "cuda"] + good, ["model.cu", "weights.bin"])]:
        emit = os.path.join(w, "emit_" + name.replace(" ", "_").replace("-", ""))
        if os.path.exists(out):
            os.remove(out)
        env = dict(os.environ, AOTC_CUDA_RUNTIME_LIB=os.path.join(w, "nope.a"))
        result = subprocess.run([aotc, add, "--emit-source", emit, "--no-build"] + extra, capture_output=True,
                                text=True, env=env)
        written = sorted(os.listdir(emit)) if os.path.isdir(emit) else []
        cuda_note = "--target" not in extra or ("no build.ninja written" in result.stderr and
                                                "build.ninja" not in written)
        expect(f"{name} writes the sources and no .so",
               result.returncode == 0 and all(f in written for f in files) and not os.path.exists(out) and
               cuda_note, (result.returncode, written, result.stderr[-2000:]))
    return finish("all CLI error paths behave")


if __name__ == "__main__":
    sys.exit(main())
