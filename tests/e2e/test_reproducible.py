"""Byte-identical rebuilds: compiling the same .pt again gives the same .so.

Each model is compiled four times, varying everything that should not matter:
  A: from working directory cwd_a, TMPDIR tmp_a, the model given by its absolute path;
  B: from another working directory, another TMPDIR (a longer path), the model given by a
     relative path, another output name, -v, another locale and SOURCE_DATE_EPOCH;
  C: with --emit-source DIR;
  D: with --emit-source into another directory (a space in its name), from another
     working directory;
  E: (first model only) with --emit-source into a directory that last built another model.
All these .so files (and the model.so left in both --emit-source directories) must be
byte-identical, and so must the generated sources of C and D. When they differ the test
says which ELF sections differ and shows the start of the `readelf -a` and `objdump -s`
differences, to find the non-deterministic input (a path, a time stamp, a build id, an
unordered container...)."""
import difflib
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import aotc_command, arg_parser, failures, finish  # noqa: E402
from models import MODELS  # noqa: E402

GENERATED = ["model.cpp", "weights.S", "weights.bin", "exports.map", "build.ninja"]


class ManyConstants(nn.Module):
    """Many weights, tied ones and scalars used in scattered order: weight layout or naming
    that depended on pointer values or hash order would show up here."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(12)])
        self.shared = nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        y = x
        a = x
        b = x
        for i, layer in enumerate(self.layers):
            y = torch.tanh(layer(y)) * (0.5 + 0.01 * i) + torch.matmul(y, self.shared)
            if i == 4:
                a = y - 1.5
            if i == 8:
                b = y * 2.0
        return {"a": a, "b": b, "last": torch.matmul(y, self.shared.t()) + self.layers[0].bias}


def many_constants():
    torch.manual_seed(7)
    return torch.jit.script(ManyConstants().eval()), [("x", torch.randn(3, 8))]


def elf_sections(path):
    """name -> (offset, size) of the sections that have bytes in the file."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    sections = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("[") or "]" not in line:
            continue
        fields = line[line.index("]") + 1:].split()
        if len(fields) < 5 or fields[0] == "Name":
            continue
        name, kind, _addr, off, size = fields[:5]
        if kind != "NOBITS":
            sections[name] = (int(off, 16), int(size, 16))
    return sections


def explain_difference(a, b):
    """Prints which sections differ and the start of the readelf/objdump differences."""
    da, db = open(a, "rb").read(), open(b, "rb").read()
    print(f"     sizes: {len(da)} vs {len(db)} bytes")
    first = next((i for i in range(min(len(da), len(db))) if da[i] != db[i]), min(len(da), len(db)))
    print(f"     first differing byte at file offset {first:#x}")
    sa, sb = elf_sections(a), elf_sections(b)
    differing = []
    for name in sorted(set(sa) | set(sb)):
        if name not in sa or name not in sb:
            differing.append(f"{name} (only in one)")
            continue
        (oa, na), (ob, nb) = sa[name], sb[name]
        if da[oa:oa + na] != db[ob:ob + nb]:
            differing.append(f"{name} ({na} vs {nb} bytes)")
    print(f"     sections whose contents differ: {differing or 'none (headers or padding only)'}")
    for tool in (["readelf", "-aW"], ["objdump", "-s"]):
        ta = subprocess.run(tool + [a], capture_output=True, text=True).stdout.replace(a, "X.so").splitlines()
        tb = subprocess.run(tool + [b], capture_output=True, text=True).stdout.replace(b, "X.so").splitlines()
        diff = [line for line in difflib.unified_diff(ta, tb, lineterm="", n=0) if not line.startswith("@@")]
        print(f"     {' '.join(tool)} differences ({max(0, len(diff) - 2)} lines), first 30:")
        for line in diff[2:32]:
            print("       " + line[:160])


def compile_model(aotc, pt, inputs, out, cwd, tmpdir, extra=(), env_extra=None):
    os.makedirs(cwd, exist_ok=True)
    os.makedirs(tmpdir, exist_ok=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    env = dict(os.environ, TMPDIR=tmpdir)
    env.pop("AOTC_KEEP_BUILD", None)
    env.update(env_extra or {})
    cmd = aotc_command(aotc, pt, out, inputs, extra=extra)
    start = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if result.returncode != 0 or not os.path.exists(out):
        print(result.stderr[-3000:])
        raise RuntimeError(f"aotc exited with {result.returncode}: {' '.join(cmd)}")
    return time.monotonic() - start


def check_model(aotc, w, name, builder, other=None):
    module, inputs = builder()
    base = os.path.join(w, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    pt = os.path.join(base, "model.pt")
    torch.jit.save(module, pt)

    so = {
        "A": os.path.join(base, "out_a", "model.so"),
        "B": os.path.join(base, "out_b", "another-name.so"),
        "C": os.path.join(base, "out_c", "model.so"),
        "D": os.path.join(base, "out_d", "model.so"),
    }
    emit_c = os.path.join(base, "emit_c")
    emit_d = os.path.join(base, "emit dir d", "nested")
    cwd_b = os.path.join(base, "cwd_b", "deeper")
    seconds = [
        compile_model(aotc, pt, inputs, so["A"], os.path.join(base, "cwd_a"), os.path.join(base, "tmp_a")),
        compile_model(aotc, os.path.relpath(pt, cwd_b), inputs, so["B"], cwd_b,
                      os.path.join(base, "a much longer temporary directory name for run B"), ["-v"],
                      {"LC_ALL": "C", "LANG": "C", "SOURCE_DATE_EPOCH": "1", "TZ": "Pacific/Kiritimati"}),
        compile_model(aotc, pt, inputs, so["C"], os.path.join(base, "cwd_c"), os.path.join(base, "tmp_c"),
                      ["--emit-source", emit_c]),
        compile_model(aotc, pt, inputs, so["D"], os.path.join(base, "cwd_d"), os.path.join(base, "tmp_d"),
                      ["--emit-source", emit_d], {"SOURCE_DATE_EPOCH": "2000000000"}),
    ]
    so["C (model.so in the --emit-source dir)"] = os.path.join(emit_c, "model.so")
    so["D (model.so in the --emit-source dir)"] = os.path.join(emit_d, "model.so")
    # E: a reused --emit-source directory, which last built another model: nothing stale
    # may leak into the rebuild (ninja must rebuild what changed).
    if other is not None:
        other_module, other_inputs = other
        other_pt = os.path.join(base, "other.pt")
        torch.jit.save(other_module, other_pt)
        emit_e = os.path.join(base, "emit_e")
        compile_model(aotc, other_pt, other_inputs, os.path.join(base, "out_e", "other.so"),
                      os.path.join(base, "cwd_e"), os.path.join(base, "tmp_e"), ["--emit-source", emit_e])
        so["E (--emit-source dir reused after another model)"] = os.path.join(base, "out_e", "model.so")
        seconds.append(compile_model(aotc, pt, inputs, so["E (--emit-source dir reused after another model)"],
                                     os.path.join(base, "cwd_e"), os.path.join(base, "tmp_e"),
                                     ["--emit-source", emit_e]))

    reference = open(so["A"], "rb").read()
    ok = True
    for label, path in so.items():
        if label == "A":
            continue
        same = os.path.exists(path) and open(path, "rb").read() == reference
        if not same:
            ok = False
            failures.append(f"{name}: {label}")
            print(f"FAIL {name}: the .so of compile {label} differs from compile A")
            explain_difference(so["A"], path)
    for f in GENERATED:
        a, b = os.path.join(emit_c, f), os.path.join(emit_d, f)
        if not (os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()):
            ok = False
            failures.append(f"{name}: generated {f}")
            print(f"FAIL {name}: the generated {f} differs between the two --emit-source directories")
    if ok:
        print(f"ok   {name}: {len(so)} .so files byte-identical ({len(reference)} bytes), "
              f"generated sources identical; compiles took {', '.join(f'{s:.1f}' for s in seconds)} s")


def main():
    args = arg_parser().parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    aotc = os.path.abspath(args.aotc) if os.sep in args.aotc else args.aotc
    w = os.path.abspath(args.workdir)
    os.makedirs(w, exist_ok=True)
    start = time.monotonic()

    models = [("many_constants", many_constants)]
    models += [(n, MODELS[n]) for n in ("small_cnn", "two_inputs", "mobilenet_v2")]
    for name, builder in models:
        try:
            check_model(aotc, w, name, builder, MODELS["mlp"]() if name == "many_constants" else None)
        except ImportError as e:  # torchvision missing: mobilenet_v2 cannot be made
            print(f"skip {name}: {e}")
        except RuntimeError as e:
            failures.append(f"{name}: {e}")
            print(f"FAIL {name}: {e}")

    return finish(f"all rebuilds byte-identical ({time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    sys.exit(main())
