"""Edge deployment, end to end: models compiled with aotc --weights file (the weights in
MODEL.weights beside a .so that holds none) run through aotc-run and through noalloc_run,
which proves with malloc hooks that a run makes no heap allocation (1 and 2 threads;
weights mapped from the file or in a caller's buffer; the context's own arena or the
caller's). Every output must match torch within a relative L2 error of 1e-4. Also: the
.so and .weights are published together and atomically, a failed compile leaves an
earlier pair untouched, and wrong or missing weights are clear errors.

usage: test_weights_file.py --aotc AOTC --aotc-run AOTC_RUN [--noalloc-run NOALLOC_RUN]
                            --workdir DIR [--models mlp,small_cnn,resnet18]
(without --noalloc-run, e.g. in a sanitizer build, the allocation checks are skipped)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (GLIBC_LIBRARIES, TOLERANCE, arg_parser, expect, finish, flatten, needed_libraries,  # noqa: E402
                    read_outputs, rel_l2, run_aotc, write_inputs)
from models import MODELS  # noqa: E402


def check(condition, what, detail=""):
    """expect(what, condition, detail) with the condition first, and detail's last 3000 characters."""
    return expect(what, condition, str(detail)[-3000:] if detail else "")


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)


def compare(what, outputs, expected):
    """outputs: list of numpy arrays in model order."""
    ok = check(len(outputs) == len(expected), f"{what}: {len(expected)} outputs", len(outputs))
    for i, (got, want) in enumerate(zip(outputs, expected)):
        want = want.detach().numpy()
        got = got.reshape(want.shape) if got.size == want.size else got
        if not check(got.shape == want.shape, f"{what}: output {i} shape", (got.shape, want.shape)):
            ok = False
            continue
        err = rel_l2(got, want)
        ok &= check(err <= TOLERANCE, f"{what}: output {i} relative L2 error {err:.3e} <= {TOLERANCE}")
    return ok


def compile_model(aotc, pt, so, inputs, extra=()):
    return run_aotc(aotc, pt, so, inputs, extra=extra, timeout=600)


def leftovers(directory):
    """Temporary files an interrupted or failed publish could leave."""
    return sorted(n for n in os.listdir(directory) if ".tmp." in n or ".old." in n)


def test_model(args, name):
    work = os.path.join(args.workdir, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    module, inputs = MODELS[name]()
    pt = os.path.join(work, "model.pt")
    torch.jit.save(module, pt)
    with torch.no_grad():
        expected = flatten(torch.jit.load(pt)(*[t for _, t in inputs]), [])

    # ---- compile both ways ----
    so = os.path.join(work, "model.so")
    weights = os.path.join(work, "model.weights")
    result = compile_model(args.aotc, pt, so, inputs, ["--weights", "file"])
    if not check(result.returncode == 0, f"{name}: aotc --weights file", result.stderr):
        return
    check(os.path.isfile(so) and os.path.isfile(weights), f"{name}: model.so and model.weights written",
          os.listdir(work))
    check(not leftovers(work), f"{name}: no temporary files left", leftovers(work))
    embedded_so = os.path.join(work, "embedded.so")
    result = compile_model(args.aotc, pt, embedded_so, inputs, ["--weights", "embed"])
    check(result.returncode == 0, f"{name}: aotc --weights embed", result.stderr)
    check(not os.path.exists(os.path.join(work, "embedded.weights")), f"{name}: embed writes no .weights")

    # The .so holds no weights: it is smaller than the embedded one by (at least nearly)
    # the whole weights file.
    weights_size = os.path.getsize(weights)
    info = json.loads(run([args.aotc_run, so, "--info", "--json"]).stdout or "{}")
    w = info.get("weights", {})
    check(w.get("location") == "file" and w.get("path") == weights and w.get("size_bytes") == weights_size,
          f"{name}: --info reports the weights file", info)
    text = run([args.aotc_run, so, "--info"]).stdout
    check(f"weights: file {weights} ({weights_size} bytes" in text, f"{name}: --info text", text)
    embedded_info = json.loads(run([args.aotc_run, embedded_so, "--info", "--json"]).stdout or "{}")
    check(embedded_info.get("weights", {}).get("location") == "embedded"
          and embedded_info["weights"].get("size_bytes") == weights_size
          and embedded_info["weights"].get("checksum") == w.get("checksum"),
          f"{name}: both builds record the same weights size and checksum", (embedded_info, info))
    shrink = os.path.getsize(embedded_so) - os.path.getsize(so)
    check(shrink >= weights_size - 4096, f"{name}: the .so holds no weights",
          f"embedded .so {os.path.getsize(embedded_so)}, file .so {os.path.getsize(so)}, weights {weights_size}")
    needed = needed_libraries(so)
    check(needed and not [lib for lib in needed if lib not in GLIBC_LIBRARIES], f"{name}: NEEDED only glibc",
          needed)

    # ---- aotc-run: the sibling weights file by default, or --weights FILE ----
    run_args = write_inputs(inputs, work)
    raw_inputs = []
    for input_name, t in inputs:
        raw = os.path.join(work, f"in_{input_name}.raw")
        t.numpy().tofile(raw)
        raw_inputs.append(raw)

    def aotc_run_outputs(out_dir, *extra):
        result = run([args.aotc_run, so, *run_args, "--output-dir", out_dir, *extra])
        if not check(result.returncode == 0, f"{name}: aotc-run {' '.join(extra)}", result.stderr):
            return None
        return read_outputs(out_dir, len(expected))

    for threads in ["1", "2"]:
        outputs = aotc_run_outputs(os.path.join(work, f"out-run-{threads}"), "--threads", threads)
        if outputs is not None:
            compare(f"{name}: aotc-run, weights beside the .so, {threads} threads", outputs, expected)
    moved = os.path.join(work, "elsewhere.weights")
    shutil.copy(weights, moved)
    outputs = aotc_run_outputs(os.path.join(work, "out-run-moved"), "--weights", moved)
    if outputs is not None:
        compare(f"{name}: aotc-run --weights FILE", outputs, expected)

    # ---- no allocation during runs ----
    if args.noalloc_run:
        for threads in [1, 2]:
            for weights_kind, weights_args in [("file", ["--weights", weights]),
                                               ("buffer", ["--weights-buffer", weights])]:
                for arena in ["own", "caller"]:
                    what = f"{name}: noalloc_run, {threads} threads, weights {weights_kind}, {arena} arena"
                    out_dir = os.path.join(work, f"out-noalloc-{threads}-{weights_kind}-{arena}")
                    os.makedirs(out_dir)
                    cmd = [args.noalloc_run, so, *weights_args, "--threads", threads, "--runs", 3,
                           "--output-dir", out_dir]
                    for raw in raw_inputs:
                        cmd += ["--input", raw]
                    if arena == "caller":
                        cmd.append("--caller-arena")
                    result = run(cmd)
                    check(result.returncode == 0 and "allocations during 3 runs: 0 " in result.stdout,
                          f"{what}: no allocation", result.stdout + result.stderr)
                    if result.returncode == 0:
                        outputs = [np.fromfile(os.path.join(out_dir, f"out{i}.raw"), dtype=np.float32)
                                   for i in range(len(expected))]
                        compare(what, outputs, expected)
        # The embedded build allocates nothing during a run either.
        for threads in [1, 2]:
            out_dir = os.path.join(work, f"out-noalloc-embedded-{threads}")
            os.makedirs(out_dir)
            cmd = [args.noalloc_run, embedded_so, "--threads", threads, "--runs", 3, "--output-dir", out_dir]
            for raw in raw_inputs:
                cmd += ["--input", raw]
            result = run(cmd)
            what = f"{name}: noalloc_run, embedded weights, {threads} threads"
            check(result.returncode == 0 and "allocations during 3 runs: 0 " in result.stdout,
                  f"{what}: no allocation", result.stdout + result.stderr)
            if result.returncode == 0:
                compare(what, [np.fromfile(os.path.join(out_dir, f"out{i}.raw"), dtype=np.float32)
                               for i in range(len(expected))], expected)
        # aotc_model_create refuses a model with external weights, and says what to use.
        result = run([args.noalloc_run, so, "--create-v1"])
        check(result.returncode == 0 and "AOTC_ERR_INVALID_ARGUMENT" in result.stdout
              and "aotc_model_create_v2" in result.stdout and "weights_path" in result.stdout,
              f"{name}: aotc_model_create on external weights names create_v2", result.stdout + result.stderr)

    # ---- --winograd off: the smallest footprint, the same results ----
    # Winograd's transformed weights are 16/9 or 36/9 the size of a 3x3 layer's: off, the weights
    # file is the model's own size (smaller where the model has such layers, else equal).
    plain = os.path.join(work, "plain.so")
    plain_weights = os.path.join(work, "plain.weights")
    result = compile_model(args.aotc, pt, plain, inputs, ["--weights", "file", "--winograd", "off"])
    if check(result.returncode == 0, f"{name}: aotc --winograd off", result.stderr):
        tensors = [t for t in module.state_dict().values() if t.is_floating_point()]
        # At most the model's own bytes, with a linear layer's weight (out x in) packed in
        # 16-column panels (out rounded up to 16) and each constant padded to 64 bytes.
        params = sum((t.shape[1] * -(-t.shape[0] // 16) * 16 if t.dim() == 2 else t.numel()) * t.element_size()
                     for t in tensors) + 64 * len(tensors)
        plain_size = os.path.getsize(plain_weights)
        check(plain_size <= weights_size and plain_size <= params,
              f"{name}: --winograd off keeps the weights at the model's size",
              f"winograd off {plain_size}, default {weights_size}, model parameters and buffers {params}")
        if name == "resnet18":  # 3x3 layers with 16+ input channels: the default transforms them
            check(weights_size > plain_size * 1.3, f"{name}: the default build holds Winograd's larger weights",
                  f"default {weights_size}, --winograd off {plain_size}")
        out_dir = os.path.join(work, "out-plain")
        result = run([args.aotc_run, plain, *run_args, "--output-dir", out_dir])
        if check(result.returncode == 0, f"{name}: aotc-run of the --winograd off build", result.stderr):
            compare(f"{name}: --winograd off", read_outputs(out_dir, len(expected)), expected)

    # ---- wrong, missing and mismatched weights ----
    out_dir = os.path.join(work, "out-bad")
    corrupt = os.path.join(work, "corrupt.weights")
    with open(weights, "rb") as f:
        blob = bytearray(f.read())
    if blob:
        blob[len(blob) // 2] ^= 0x40
    with open(corrupt, "wb") as f:
        f.write(blob)
    result = run([args.aotc_run, so, *run_args, "--output-dir", out_dir, "--weights", corrupt])
    check(result.returncode == 1 and corrupt in result.stderr and "checksum mismatch" in result.stderr
          and f"expected {w.get('checksum')}" in result.stderr,
          f"{name}: corrupted weights: checksum error naming the file", result.stderr)
    truncated = os.path.join(work, "truncated.weights")
    with open(truncated, "wb") as f:
        f.write(blob[:len(blob) // 2])
    result = run([args.aotc_run, so, "--info", "--weights", truncated])
    check(result.returncode == 1 and truncated in result.stderr
          and f"expected {weights_size} bytes" in result.stderr and f"got {len(blob) // 2}" in result.stderr,
          f"{name}: truncated weights: size error naming the file", result.stderr)
    os.rename(weights, weights + ".away")
    result = run([args.aotc_run, so, *run_args, "--output-dir", out_dir])
    check(result.returncode == 1 and weights in result.stderr and "--weights" in result.stderr,
          f"{name}: missing sibling weights: error naming where they were expected", result.stderr)
    os.rename(weights + ".away", weights)
    check(not os.path.exists(out_dir) or not os.listdir(out_dir), f"{name}: failed runs wrote nothing")


def test_publishing(args):
    """The pair is replaced together; a failed compile leaves the earlier pair as it was."""
    work = os.path.join(args.workdir, "publish")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    module, inputs = MODELS["mlp"]()
    pt = os.path.join(work, "mlp.pt")
    torch.jit.save(module, pt)
    so = os.path.join(work, "net.so")
    weights = os.path.join(work, "net.weights")
    result = compile_model(args.aotc, pt, so, inputs, ["--weights", "file"])
    check(result.returncode == 0, "publish: first compile", result.stderr)
    with open(so, "rb") as f:
        so_bytes = f.read()
    with open(weights, "rb") as f:
        weights_bytes = f.read()
    # A compile that fails (an input shape the model cannot take) leaves both untouched.
    bad = [(n, torch.zeros(5, 36)) for n, _ in inputs]
    result = compile_model(args.aotc, pt, so, bad, ["--weights", "file"])
    check(result.returncode == 1, "publish: a compile that fails exits 1", result.stderr)
    with open(so, "rb") as f:
        same_so = f.read() == so_bytes
    with open(weights, "rb") as f:
        same_weights = f.read() == weights_bytes
    check(same_so and same_weights, "publish: a failed compile leaves the earlier .so and .weights")
    check(not leftovers(work), "publish: no temporary files after a failed compile", leftovers(work))
    # Recompiling replaces both (here with a different model: the weights change).
    torch.manual_seed(123)
    module2 = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(37, 19)).eval())
    pt2 = os.path.join(work, "other.pt")
    torch.jit.save(module2, pt2)
    result = compile_model(args.aotc, pt2, so, [("input", inputs[0][1])], ["--weights", "file"])
    check(result.returncode == 0, "publish: recompile over the pair", result.stderr)
    with open(weights, "rb") as f:
        check(f.read() != weights_bytes, "publish: the weights file was replaced")
    check(not leftovers(work), "publish: no temporary files after a recompile", leftovers(work))
    result = run([args.aotc_run, so, "--info"])
    check(result.returncode == 0 and f"weights: file {weights}" in result.stdout,
          "publish: the new pair loads together", result.stdout + result.stderr)
    # Output names without .so get .weights appended.
    odd = os.path.join(work, "model.bin")
    result = compile_model(args.aotc, pt, odd, inputs, ["--weights", "file"])
    check(result.returncode == 0 and os.path.isfile(odd + ".weights"),
          "publish: OUTPUT.weights appended when OUTPUT does not end in .so", os.listdir(work))
    # A directory where the weights file would go: an error, and no .so either.
    blocked = os.path.join(work, "blocked.so")
    os.makedirs(os.path.join(work, "blocked.weights"))
    result = compile_model(args.aotc, pt, blocked, inputs, ["--weights", "file"])
    check(result.returncode == 1 and "blocked.weights" in result.stderr and not os.path.exists(blocked),
          "publish: weights path is a directory: error, no .so", result.stderr)
    check(not leftovers(work), "publish: no temporary files after a blocked publish", leftovers(work))


def main():
    ap = arg_parser(aotc_run=True)
    ap.add_argument("--noalloc-run")
    ap.add_argument("--models", default="mlp,small_cnn,resnet18")
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    for name in args.models.split(","):
        print(f"--- {name}")
        test_model(args, name)
    print("--- publishing")
    test_publishing(args)
    return finish("every model runs with its weights in a file, allocating nothing")


if __name__ == "__main__":
    sys.exit(main())
