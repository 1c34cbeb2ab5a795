#!/usr/bin/env python3
"""Checks that a refactor of aotc changes nothing it generates: emits the sources of every
model of the e2e tables with one aotc, again with another, and compares them byte for byte.

  check_generated_sources.py emit --aotc PATH/TO/aotc --out DIR [--models a,b,c] [--jobs N]
  check_generated_sources.py compare DIR_A DIR_B

emit compiles each model with `aotc --emit-source DIR/<model>/<variant> --no-build` for the
variants
  cpu    every model of tests/e2e/models.py (and the tables it imports);
  cuda   (--target cuda) those that tests/cuda/gpu_models.py also lists, and its own small
         CUDA models (gpu_*); needs no GPU and no nvcc;
  cpu, cuda for a few --dim builds (dyn_*: tests/e2e/test_dynamic_shapes.py's modules).
The TorchScript files are made once (torch.manual_seed before each model) into a cache beside
DIR (--pt-cache, default DIR/../pt-cache) and reused: both sides of a comparison must compile
the very same files, by the same path (model.cpp names it). Delete the cache after changing a
model table. A model that fails to compile is reported and its aotc messages are kept as
aotc-failed.txt, which is compared like any output. weights.bin is replaced by its SHA-256
(weights.bin.sha256) unless --keep-weights: the blobs take gigabytes. DIR/emit-info.json
records the aotc used. An aotc older than --no-build builds each model (nvcc needed for CUDA),
and emit removes all but the sources again.

compare prints every file that differs with its first differing line, and ends with
"N files identical, M differ, K only in one side"; exit status 1 if M or K is not 0. Before
comparing it normalises what differs between two builds of aotc by design: the aotc version
(`aotc --version`: model.cpp's header line and the version literal in its ModelDesc, the first
line of build.ninja) and, in build.ninja only, the two builds' source and build directories.
Emit both sides on the same machine with the same AOTC_* environment: the CPU passes pick
AVX-512 kernels by the compiling host.

A whole run (125 models, 158 compiles) on a 2-core VM: about 2 minutes to make the TorchScript
files once (1.9 GB), then 1.5 minutes per emit with --jobs 2 (10 MB). --models picks some (the
names as in DIR, e.g. mlp,resnet18,dyn_bert,gpu_mlp_gelu)."""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests", "e2e"), os.path.join(ROOT, "tests", "cuda")]
from common import aotc_command, input_spec, save_module  # noqa: E402  (standard library only: no torch)

INFO = "emit-info.json"  # written by emit, describes the run: never compared
FAILED = "aotc-failed.txt"
SOURCES = {"model.cpp", "model.cu", "weights.S", "weights.bin", "exports.map", "build.ninja"}  # what aotc emits

# The small models of the GPU suite that the e2e tables lack: the CUDA-only fusions (the
# GELU epilogue, the encoder layer's fused op). Its large ones (bert_base, vit_b_16_64,
# resnet50_b32) are left out: larger forms of e2e models, for their time and size.
GPU_ONLY = ["mlp_gelu", "encoder_post_relu", "encoder_pre_gelu"]


# ---- the models ----

def dynamic_models():
    """name: (builder returning an nn.Module, --input specs, --dim ranges, targets), as
    tests/e2e/test_dynamic_shapes.py compiles them (the LSTM: CPU only, as there)."""
    import torchvision
    from test_dynamic_shapes import BertStyle, Lstm, Quads

    def mobilenet_v2():
        return torchvision.models.mobilenet_v2(weights=None).eval()

    return {
        "dyn_bert": (lambda: BertStyle().eval(), ["ids:BxS:int64", "mask:BxS:bool"], ["B=1..32", "S=1..512"],
                     ["cpu", "cuda"]),
        "dyn_quads": (lambda: Quads().eval(), ["x:BxSx8"], ["B=1..4", "S=1..64"], ["cpu", "cuda"]),
        "dyn_lstm": (lambda: Lstm().eval(), ["x:2xTx16"], ["T=1..40"], ["cpu"]),
        "dyn_mobilenet_v2": (mobilenet_v2, ["x:Nx3x112x112"], ["N=1..64"], ["cpu", "cuda"]),
    }


def model_table():
    """name: (build, targets) for every model emit knows; build() returns (TorchScript
    module or nn.Module, --input specs, --dim ranges)."""
    from gpu_models import GPU_MODELS
    from models import MODELS

    def static(builder):
        def build():
            module, inputs = builder()[:2]
            return module, [input_spec(name, tensor) for name, tensor in inputs], []
        return build

    table = {name: (static(builder), ["cpu", "cuda"] if name in GPU_MODELS else ["cpu"])
             for name, builder in MODELS.items()}
    for name in GPU_ONLY:
        table["gpu_" + name] = (static(GPU_MODELS[name]), ["cuda"])
    for name, (builder, inputs, dims, targets) in dynamic_models().items():
        table[name] = ((lambda b=builder, i=inputs, d=dims: (b(), i, d)), targets)
    return table


def make_pt(name, build, cache):
    """The model's TorchScript file and its --input/--dim in the cache, made unless there."""
    import torch
    pt, spec = os.path.join(cache, name + ".pt"), os.path.join(cache, name + ".json")
    if os.path.exists(pt) and os.path.exists(spec):
        with open(spec) as f:
            return pt, json.load(f)
    torch.manual_seed(0)  # the builders seed themselves; this covers any that does not
    module, inputs, dims = build()
    # Written under temporary names and renamed: neither an interrupted run nor a second emit
    # making the same file at once (old and new aotc side by side) leaves a half file.
    tmp = f".tmp{os.getpid()}"
    save_module(module, pt + tmp)
    with open(spec + tmp, "w") as f:
        json.dump({"inputs": inputs, "dims": dims}, f)
    os.replace(pt + tmp, pt)
    os.replace(spec + tmp, spec)
    return pt, {"inputs": inputs, "dims": dims}


def compile_one(aotc, pt, spec, target, out, keep_weights, no_build):
    """aotc --emit-source OUT --no-build; returns (ok, seconds, message). An aotc older than
    --no-build (no_build False) builds the .so, and all but the sources is removed again."""
    shutil.rmtree(out, ignore_errors=True)  # no file of an earlier run may survive in OUT
    os.makedirs(out)
    so = os.path.join(out, "model.so")  # -o given to check that --no-build writes no .so
    cmd = aotc_command(aotc, pt, so, spec["inputs"], spec["dims"], None if target == "cpu" else target,
                       ["--emit-source", out] + (["--no-build"] if no_build else []))
    start = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        with open(os.path.join(out, FAILED), "w") as f:
            f.write(f"exit status {result.returncode}\n{result.stderr}")
        last = result.stderr.strip().splitlines()[-1:] or [""]
        return False, seconds, last[0][:300]
    if no_build and os.path.exists(so):
        return False, seconds, "--no-build wrote the .so"
    if not no_build:  # the build's objects, .so and ninja logs are no sources
        for name in os.listdir(out):
            if name not in SOURCES:
                os.remove(os.path.join(out, name))
    weights = os.path.join(out, "weights.bin")
    if not keep_weights and os.path.exists(weights):
        with open(weights, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(weights + ".sha256", "w") as f:
            f.write(f"{digest}  {os.path.getsize(weights)} bytes\n")
        os.remove(weights)
    return True, seconds, result.stderr.strip()


def build_dirs(aotc):
    """The source and build directories of aotc's meson build tree (meson-info), or None."""
    build = os.path.dirname(os.path.dirname(os.path.realpath(aotc)))  # BUILD/compiler/aotc
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
            dirs = json.load(f)["directories"]
        return {"source": dirs["source"], "build": dirs["build"]}
    except (OSError, KeyError, ValueError):
        return None


def emit(args):
    aotc = os.path.abspath(args.aotc)
    out = os.path.abspath(args.out)
    cache = os.path.abspath(args.pt_cache or os.path.join(out, "..", "pt-cache"))
    version = subprocess.run([aotc, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    no_build = "--no-build" in subprocess.run([aotc, "--help"], capture_output=True, text=True).stdout
    dirs = build_dirs(aotc)
    if dirs is None:
        print(f"{aotc} is not BUILD/compiler/aotc of a meson build: compare cannot normalise its paths in build.ninja")
    if not no_build:
        print(f"{aotc} has no --no-build (older than it): building each model, then removing all but the sources")
    table = model_table()
    names = args.models.split(",") if args.models else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        sys.exit(f"unknown model(s): {', '.join(unknown)} (known: {', '.join(table)})")
    os.makedirs(out, exist_ok=True)
    os.makedirs(cache, exist_ok=True)
    start = time.monotonic()

    # The TorchScript files, one after another (torch in this process), then the compiles.
    jobs, failed = [], []  # failed: "NAME (TorchScript)" or "NAME/VARIANT"
    for name in names:
        build, targets = table[name]
        try:
            pt, spec = make_pt(name, build, cache)
        except Exception as e:  # noqa: BLE001 (a builder that fails is reported like a compile)
            print(f"FAIL {name}: making the TorchScript file: {type(e).__name__}: {e}", flush=True)
            failed.append(f"{name} (TorchScript)")
            continue
        jobs += [(name, target, pt, spec) for target in targets]
    made = time.monotonic() - start
    print(f"{len(names)} models' TorchScript files ready in {made:.0f} s ({cache}); {len(jobs)} compiles", flush=True)

    def run(job):
        name, target, pt, spec = job
        return job, compile_one(aotc, pt, spec, target, os.path.join(out, name, target), args.keep_weights, no_build)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for (name, target, _, _), (ok, seconds, message) in pool.map(run, jobs):
            print(f"{'ok  ' if ok else 'FAIL'} {name}/{target} ({seconds:.1f} s){': ' + message if message else ''}",
                  flush=True)
            if not ok:
                failed.append(f"{name}/{target}")
    total = time.monotonic() - start
    with open(os.path.join(out, INFO), "w") as f:
        json.dump({"aotc": aotc, "version": version.removeprefix("aotc ").strip(), "dirs": dirs,
                   "pt_cache": cache, "environment": {k: v for k, v in os.environ.items() if k.startswith("AOTC_")},
                   "failed": failed, "seconds": round(total, 1)}, f, indent=1)
    files = sum(len(f) for _, _, f in os.walk(out)) - 1  # not emit-info.json
    print(f"{len(names)} models, {len(jobs)} compiles, {files} files in {out} in {total:.0f} s; "
          f"failed: {', '.join(failed) or 'none'}")
    return 0


# ---- compare ----

def read_info(root):
    path = os.path.join(root, INFO)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def normalised(path, info):
    """The file's bytes, with what differs between two aotc builds by design replaced: the
    version string in the generated sources and build.ninja, the build's directories in
    build.ninja (its compiler, runtime library and headers)."""
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    if name not in ("model.cpp", "model.cu", "build.ninja"):
        return data
    version = info.get("version", "")
    if version:
        data = data.replace(version.encode(), b"<aotc version>")
    if name == "build.ninja":
        # Its first line names the semantic version alone ("# Generated by aotc 0.1.0: ...").
        first, _, rest = data.partition(b"\n")
        if version and first.startswith(b"# Generated by aotc "):
            first = first.replace(version.split()[0].encode(), b"<aotc version>", 1)
        data = first + b"\n" + rest
        dirs = info.get("dirs") or {}
        # The longer first: a build directory is often inside the source directory.
        for key in sorted(dirs, key=lambda k: -len(dirs[k])):
            data = data.replace(dirs[key].encode(), f"<{key} dir>".encode())
    return data


def first_difference(a, b):
    """Where two byte strings first differ: (line number, line of a, line of b), or for
    binary files (byte offset, None, None)."""
    try:
        lines_a, lines_b = a.decode().splitlines(), b.decode().splitlines()
    except UnicodeDecodeError:
        offset = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return offset, None, None
    for i in range(max(len(lines_a), len(lines_b))):
        line_a = lines_a[i] if i < len(lines_a) else "<end of file>"
        line_b = lines_b[i] if i < len(lines_b) else "<end of file>"
        if line_a != line_b:
            return i + 1, line_a, line_b
    return len(lines_a) + 1, "<end of file>", "<end of file>"  # only line endings differ


def files_under(root):
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            rel = os.path.relpath(os.path.join(directory, name), root)
            if rel != INFO:
                found.add(rel)
    return found


def compare(args):
    a, b = args.dir_a, args.dir_b
    info_a, info_b = read_info(a), read_info(b)
    for key in ["environment", "pt_cache"]:
        if info_a.get(key) != info_b.get(key):
            print(f"warning: the two runs differ in {key}: {info_a.get(key)} vs {info_b.get(key)}")
    files_a, files_b = files_under(a), files_under(b)
    identical = differ = 0
    for rel in sorted(files_a & files_b):
        data_a, data_b = normalised(os.path.join(a, rel), info_a), normalised(os.path.join(b, rel), info_b)
        if data_a == data_b:
            identical += 1
            continue
        differ += 1
        where, line_a, line_b = first_difference(data_a, data_b)
        if line_a is None:
            print(f"DIFFER {rel}: first at byte {where} ({len(data_a)} vs {len(data_b)} bytes)")
        else:
            print(f"DIFFER {rel}: first at line {where}\n  A: {line_a[:300]}\n  B: {line_b[:300]}")
    only = sorted(files_a ^ files_b)
    missing_dirs = {}  # (side, MODEL/VARIANT) the other side lacks altogether: one line for all its files
    for rel in only:
        side, other = (a, b) if rel in files_a else (b, a)
        directory = os.path.dirname(rel)
        if directory and not os.path.isdir(os.path.join(other, directory)):
            missing_dirs[side, directory] = missing_dirs.get((side, directory), 0) + 1
        else:
            print(f"ONLY in {side}: {rel}")
    for (side, directory), count in sorted(missing_dirs.items()):
        print(f"ONLY in {side}: {directory}/ ({count} files)")
    print(f"{identical} files identical, {differ} differ, {len(only)} only in one side")
    return 1 if differ or only else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    e = sub.add_parser("emit", help="emit the generated sources of every model")
    e.add_argument("--aotc", required=True, help="BUILD/compiler/aotc of a meson build")
    e.add_argument("--out", required=True, help="DIR: DIR/<model>/<variant>/ per compile")
    e.add_argument("--models", default="", help="comma-separated names (default: all)")
    e.add_argument("--jobs", type=int, default=1, help="compiles at once (default 1)")
    e.add_argument("--pt-cache", default="", help="the TorchScript files (default: DIR/../pt-cache)")
    e.add_argument("--keep-weights", action="store_true", help="keep weights.bin, not its SHA-256")
    c = sub.add_parser("compare", help="compare two emit directories")
    c.add_argument("dir_a")
    c.add_argument("dir_b")
    args = ap.parse_args()
    return emit(args) if args.command == "emit" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
