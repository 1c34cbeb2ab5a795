"""Every documented error path of the aotc command line: each must exit with status 1
(2 for usage mistakes), print one clear 'aotc: error:' message that names the problem,
and leave no output file behind (an existing file at the -o path stays untouched)."""
import argparse
import os
import subprocess
import sys
import zipfile

import torch
import torch.nn as nn

failures = []


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
    def forward(self, x):
        a = torch.lgamma(x)
        b = torch.lgamma(a)
        return torch.flip(b, [0]) + torch.erfinv(x)


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
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotc", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
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
    check("unsupported ops listed at once", [aotc, unsupported, "-o", out, "--input", "x:4x5"], 1,
          "aten::lgamma", "x2", "aten::flip", "aten::erfinv", "test_cli_errors.py:", out=out)
    check("data-dependent if", [aotc, dyn_if, "-o", out, "--input", "x:4"], 1, "run time",
          "test_cli_errors.py:", out=out)
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
    check("existing output untouched", [aotc, unsupported, "-o", out, "--input", "x:4x5"], 1, "aten::lgamma",
          out=out, keep=b"precious")
    os.remove(out)

    # And the success path writes the file.
    ok = subprocess.run([aotc, add, "-o", out] + good, capture_output=True, text=True)
    if ok.returncode != 0 or not os.path.exists(out):
        failures.append("success path")
        print("FAIL success path:", ok.stderr[-2000:])
    else:
        print("ok   success path")

    print(f"{len(failures)} failure(s)" if failures else "all CLI error paths behave")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
