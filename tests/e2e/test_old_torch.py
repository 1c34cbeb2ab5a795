"""Models saved by older torch versions (tests/data/old_torch/torch-<VERSION>/, made by
tests/data/old_torch/make_models.py with that torch) compile and match both the outputs
the old torch computed and what this torch computes from the same file. Also: a file whose
format version is newer than aotc's LibTorch reads, and a model calling an op that this
LibTorch does not know, fail with messages that say so."""
import glob
import io
import os
import re
import sys
import zipfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (TOLERANCE, arg_parser, failures, finish, rel_l2, run_aotc, run_aotc_run,  # noqa: E402
                    write_inputs)


def check_model(aotc, aotc_run, pt, work):
    name = os.path.relpath(pt, os.path.dirname(os.path.dirname(pt)))
    stem = pt[: -len(".pt")]
    base = re.sub(r"_v\d+$", "", os.path.basename(stem))  # tensor_div_v3 shares tensor_div's data
    data = os.path.join(os.path.dirname(pt), base)
    inputs = [np.load(p) for p in sorted(glob.glob(data + ".in*.npy"))]
    expected = [np.load(p) for p in sorted(glob.glob(data + ".out*.npy"))]
    module = torch.jit.load(pt)
    arg_names = [a.name.split(".")[0] for a in module.forward.schema.arguments[1:]]
    with torch.no_grad():
        now = module(*[torch.from_numpy(a) for a in inputs])
    now = list(now) if isinstance(now, (tuple, list)) else [now]
    out_dir = os.path.join(work, name.replace("/", "_"))
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, "model.so")
    named = list(zip(arg_names, inputs))  # float32 arrays
    result = run_aotc(aotc, pt, so, named)
    if result.returncode != 0:
        failures.append(name)
        print(f"FAIL {name}: aotc exited with {result.returncode}\n{result.stderr[-3000:]}")
        return
    result = run_aotc_run(aotc_run, so, "--output-dir", out_dir, *write_inputs(named, out_dir, prefix=""))
    if result.returncode != 0:
        failures.append(name)
        print(f"FAIL {name}: aotc-run exited with {result.returncode}\n{result.stderr[-2000:]}")
        return
    worst = 0.0
    for i, (want_old, want_now) in enumerate(zip(expected, now)):
        got = np.load(os.path.join(out_dir, f"out{i}.npy"))
        if got.shape != want_old.shape:
            failures.append(name)
            print(f"FAIL {name}: output {i} has shape {got.shape}, torch gave {want_old.shape}")
            return
        worst = max(worst, rel_l2(got, want_old), rel_l2(got, want_now.numpy()))
    if len(expected) != len(now) or worst > TOLERANCE:
        failures.append(name)
        print(f"FAIL {name}: relative L2 error {worst:.3e} ({len(expected)} outputs saved, {len(now)} now)")
        return
    version = file_format_version(pt)
    print(f"ok   {name} (file format version {version}): {len(expected)} output(s), "
          f"relative L2 error {worst:.3e} against the old torch and this one")


def file_format_version(pt):
    """The version record LibTorch reads: .data/version where present, else version."""
    names = zipfile.ZipFile(pt).namelist()
    record = next((n for n in names if n.endswith("/.data/version")), None) or \
        next(n for n in names if n.endswith("/version"))
    return zipfile.ZipFile(pt).read(record).decode().strip()


def rewrite(src, dst, edit):
    """Copies a TorchScript zip, passing each (name, bytes) through edit (None drops it)."""
    with zipfile.ZipFile(src) as zin:
        items = [(info, zin.read(info.filename)) for info in zin.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zout:
        for info, data in items:
            data = edit(info.filename, data)
            if data is not None:
                zout.writestr(info, data)
    with open(dst, "wb") as f:
        f.write(buffer.getvalue())


def check_error(aotc, name, pt, inputs, *needles):
    so = pt + ".so"
    result = run_aotc(aotc, pt, so, inputs)
    problems = []
    if result.returncode != 1:
        problems.append(f"exit status {result.returncode}, want 1")
    for needle in needles:
        if needle not in result.stderr:
            problems.append(f"message lacks {needle!r}")
    if os.path.exists(so):
        problems.append("an output file was written")
    first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else ""
    if problems:
        failures.append(name)
        print(f"FAIL {name}: {'; '.join(problems)}\n     stderr: {result.stderr[:1500]}")
    else:
        print(f"ok   {name}: {first}")


class Add(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)


def main():
    ap = arg_parser(aotc_run=True)
    ap.add_argument("--data", required=True, help="tests/data/old_torch")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    files = sorted(glob.glob(os.path.join(args.data, "torch-*", "*.pt")))
    if not files:
        print(f"FAIL: no model files under {args.data}")
        return 1
    for pt in files:
        check_model(args.aotc, args.aotc_run, pt, args.workdir)

    # Files that this LibTorch cannot read, as a newer torch would write them.
    add = os.path.join(args.workdir, "add.pt")
    torch.jit.save(torch.jit.script(Add()), add)
    two = ["x:2x3", "y:2x3"]
    future_format = os.path.join(args.workdir, "future_format.pt")
    rewrite(add, future_format,
            lambda n, d: b"99\n" if n.endswith("/version") else d)
    check_error(args.aotc, "file format newer than LibTorch's", future_format, two,
                "newer torch", "file format version is 99", "torch 2.")
    ancient_format = os.path.join(args.workdir, "ancient_format.pt")
    rewrite(add, ancient_format, lambda n, d: b"0\n" if n.endswith("/version") else d)
    check_error(args.aotc, "file format older than LibTorch reads", ancient_format, two,
                "too old", "file format version is 0")
    # A newer torch's op: the serialized code calls aten::add_from_the_future (the debug
    # records, which hold offsets into the code, are dropped as they no longer match).
    future_op = os.path.join(args.workdir, "future_op.pt")
    rewrite(add, future_op,
            lambda n, d: None if n.endswith(".debug_pkl") else
            d.replace(b"torch.add(", b"torch.add_from_the_future(") if n.endswith(".py") else d)
    check_error(args.aotc, "op newer than LibTorch's", future_op, two,
                "aten::add_from_the_future", "newer torch", "code/__torch__.py")
    # An existing op called with an argument that a newer torch added.
    future_arg = os.path.join(args.workdir, "future_arg.pt")
    rewrite(add, future_arg,
            lambda n, d: None if n.endswith(".debug_pkl") else
            d.replace(b"torch.add(x, y)", b"torch.add(x, y, future_flag=True)") if n.endswith(".py") else d)
    check_error(args.aotc, "argument newer than LibTorch's", future_arg, two,
                "aten::add", "newer torch", "code/__torch__.py")

    # An op of another library's extension (torchvision::nms, as in every detection model's
    # post-processing): not LibTorch's, so not a newer torch's either; the message says so.
    import torchvision

    class Nms(torch.nn.Module):
        def forward(self, boxes, scores):
            return torchvision.ops.nms(boxes, scores, 0.5)

    nms = os.path.join(args.workdir, "nms.pt")
    torch.jit.save(torch.jit.script(Nms()), nms)
    check_error(args.aotc, "an op of the torchvision extension", nms, ["boxes:5x4", "scores:5"],
                "torchvision::nms", "torchvision extension", "not of LibTorch")

    return finish(f"all {len(files)} old-torch files compile and match")


if __name__ == "__main__":
    sys.exit(main())
