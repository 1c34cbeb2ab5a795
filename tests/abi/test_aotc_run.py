#!/usr/bin/env python3
"""End-to-end tests of aotc-run on the fixture model (tests/abi/fixture_model.cpp).

usage: test_aotc_run.py AOTC_RUN FIXTURE_MODEL_SO [FIXTURE_MODEL_EXTERNAL_SO]

The fixture: inputs x float32 [2, 3], ids int64 [4]; outputs y = x * 2 + 1 float32 [2, 3],
s = float(sum(ids)) float32 [1]. Inputs are written with a small stdlib .npy writer (so
that hostile files can be made byte by byte) and, when numpy is importable, also with
numpy, which then checks the outputs too.
"""
import ast
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy
except ImportError:  # the stdlib reader below is enough; numpy adds cross-checks
    numpy = None

AOTC_RUN = os.path.abspath(sys.argv[1])
MODEL = os.path.abspath(sys.argv[2])
# The fixture with external weights (its weights file is written here: {2, 1, 0...}).
MODEL_EXTERNAL = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None

passed = 0
failed = 0


def check(condition, what, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))


# ---- .npy files ------------------------------------------------------------------------

def npy_image(descr, shape, data, fortran=False, major=1, header_text=None):
    """An .npy file image, header padded so that the data is 64-byte aligned."""
    if header_text is None:
        shape_text = f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"
        header_text = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
                       f"'shape': {shape_text}, }}")
    length_format = "<H" if major == 1 else "<I"
    preamble = 8 + struct.calcsize(length_format)
    padded = -(-(preamble + len(header_text) + 1) // 64) * 64 - preamble
    header = header_text + " " * (padded - len(header_text) - 1) + "\n"
    return (b"\x93NUMPY" + bytes([major, 0]) + struct.pack(length_format, len(header))
            + header.encode("ascii") + data)


FORMATS = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i", "<f2": "e", "|b1": "?"}


def write_npy(path, descr, shape, values, **kwargs):
    data = struct.pack("<" + FORMATS[descr] * len(values), *values)
    with open(path, "wb") as f:
        f.write(npy_image(descr, shape, data, **kwargs))
    return path


def read_npy(path):
    """(descr, shape, values, data_offset) of a file, checking the format as we go."""
    with open(path, "rb") as f:
        blob = f.read()
    assert blob[:6] == b"\x93NUMPY", "bad magic"
    assert blob[6:8] == b"\x01\x00", "aotc-run should write format 1.0"
    (length,) = struct.unpack("<H", blob[8:10])
    header = ast.literal_eval(blob[10:10 + length].decode("latin1"))
    offset = 10 + length
    count = 1
    for d in header["shape"]:
        count *= d
    values = struct.unpack("<" + FORMATS[header["descr"]] * count, blob[offset:])
    return header["descr"], tuple(header["shape"]), list(values), offset, header


# ---- running aotc-run ------------------------------------------------------------------

def aotc_run(*args):
    return subprocess.run([AOTC_RUN, *map(str, args)], capture_output=True, text=True, timeout=60)


def expect_error(what, args, status, message_parts, out_dir=None):
    """aotc-run must exit with status, print exactly one 'aotc-run: error:' line that
    contains every part, and leave no file in out_dir."""
    result = aotc_run(*args)
    lines = result.stderr.splitlines()
    detail = f"status {result.returncode}, stderr: {result.stderr!r}"
    check(result.returncode == status, f"{what}: exit status {status}", detail)
    check(len(lines) == 1 and lines[0].startswith("aotc-run: error: "),
          f"{what}: one 'aotc-run: error:' line", detail)
    for part in message_parts:
        check(part in result.stderr, f"{what}: message mentions {part!r}", detail)
    if out_dir is not None and os.path.isdir(out_dir):
        left = os.listdir(out_dir)
        check(not left, f"{what}: no output files left", f"found {left}")


def main():
    work = tempfile.mkdtemp(prefix="aotc-run-test-")
    try:
        run_tests(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run_tests(work):
    def path(name):
        return os.path.join(work, name)

    x_values = [0.5, -1.0, 2.0, 3.25, -4.5, 100.0]
    ids_values = [1, 2, 3, -10]
    x = write_npy(path("x.npy"), "<f4", (2, 3), x_values)
    ids = write_npy(path("ids.npy"), "<i8", (4,), ids_values)
    want_y = [v * 2 + 1 for v in x_values]
    want_s = [float(sum(ids_values))]

    # ---- help, version, info ----
    result = aotc_run("--help")
    check(result.returncode == 0 and "usage: aotc-run" in result.stdout, "--help", result.stdout)
    result = aotc_run("--version")
    check(result.returncode == 0 and result.stdout.startswith("aotc-run "), "--version", result.stdout)

    result = aotc_run(MODEL, "--info")
    check(result.returncode == 0, "--info exits 0", result.stderr)
    for part in ["abi version: 1", "arena bytes: 256", "0 x: float32 [2, 3] (24 bytes)",
                 "1 ids: int64 [4] (32 bytes)", "0 y: float32 [2, 3] (24 bytes)",
                 "1 s: float32 [1] (4 bytes)", "aotc version: 0.1.0 (fixture)\n", "runtime version: "]:
        check(part in result.stdout, f"--info shows {part!r}", result.stdout)

    result = aotc_run(MODEL, "--info", "--json")
    check(result.returncode == 0, "--info --json exits 0", result.stderr)
    try:
        info = json.loads(result.stdout)
    except ValueError as e:
        info = None
        check(False, "--info --json prints JSON", f"{e}: {result.stdout!r}")
    if info is not None:
        check(info["abi_version"] == 1 and info["arena_bytes"] == 256, "json: abi and arena", info)
        check(info["model"] == MODEL, "json: model path", info)
        check(info["aotc_version"] == "0.1.0 (fixture)" and isinstance(info["runtime_version"], str),
              "json: versions", info)
        check(info["inputs"] == [
            {"name": "x", "dtype": "float32", "shape": [2, 3], "size_bytes": 24},
            {"name": "ids", "dtype": "int64", "shape": [4], "size_bytes": 32}], "json: inputs", info)
        check(info["outputs"] == [
            {"name": "y", "dtype": "float32", "shape": [2, 3], "size_bytes": 24},
            {"name": "s", "dtype": "float32", "shape": [1], "size_bytes": 4}], "json: outputs", info)

    # ---- correct runs ----
    def check_outputs(out_dir, what):
        names = sorted(os.listdir(out_dir))
        check(names == ["out0.npy", "out1.npy"], f"{what}: exactly out0.npy and out1.npy", names)
        if names != ["out0.npy", "out1.npy"]:
            return
        descr, shape, values, offset, header = read_npy(os.path.join(out_dir, "out0.npy"))
        check((descr, shape, values) == ("<f4", (2, 3), want_y), f"{what}: out0 = y",
              (descr, shape, values))
        check(offset % 64 == 0 and header["fortran_order"] is False, f"{what}: out0 header", offset)
        descr, shape, values, offset, _ = read_npy(os.path.join(out_dir, "out1.npy"))
        check((descr, shape, values) == ("<f4", (1,), want_s), f"{what}: out1 = s",
              (descr, shape, values))
        if numpy is not None:
            y = numpy.load(os.path.join(out_dir, "out0.npy"))
            s = numpy.load(os.path.join(out_dir, "out1.npy"))
            check(y.dtype == numpy.float32 and y.shape == (2, 3) and y.flatten().tolist() == want_y,
                  f"{what}: numpy reads out0", y)
            check(s.dtype == numpy.float32 and s.tolist() == want_s, f"{what}: numpy reads out1", s)

    out = path("out-a/nested")  # created, parents included
    result = aotc_run(MODEL, "--input", f"x={x}", "--input", f"ids={ids}", "--output-dir", out)
    check(result.returncode == 0 and result.stderr == "", "run exits 0 quietly on stderr",
          result.stderr)
    check("out0.npy (y: float32 [2, 3])" in result.stdout, "run reports what it wrote", result.stdout)
    check_outputs(out, "run")

    # Inputs in another order, --flag=value forms, 2 threads, overwriting earlier outputs.
    result = aotc_run(MODEL, f"--input=ids={ids}", f"--input=x={x}", f"--output-dir={out}",
                      "--threads", "2")
    check(result.returncode == 0, "run with --threads 2 and reordered inputs", result.stderr)
    check_outputs(out, "second run")

    # Files with a format 2.0 header, and files written by numpy itself.
    x2 = write_npy(path("x2.npy"), "<f4", (2, 3), x_values, major=2)
    out = path("out-b")
    result = aotc_run(MODEL, "--input", f"x={x2}", "--input", f"ids={ids}", "--output-dir", out)
    check(result.returncode == 0, "run with a format 2.0 input", result.stderr)
    check_outputs(out, "format 2.0 input")
    if numpy is not None:
        numpy.save(path("xn.npy"), numpy.array(x_values, dtype=numpy.float32).reshape(2, 3))
        numpy.save(path("idsn.npy"), numpy.array(ids_values, dtype=numpy.int64))
        out = path("out-c")
        result = aotc_run(MODEL, "--input", f"x={path('xn.npy')}", "--input",
                          f"ids={path('idsn.npy')}", "--output-dir", out)
        check(result.returncode == 0, "run with numpy-written inputs", result.stderr)
        check_outputs(out, "numpy inputs")

    # ---- errors: status 1 ----
    out = path("out-err")
    good = ["--input", f"x={x}", "--input", f"ids={ids}"]

    def expect_input_error(what, inputs, parts):
        expect_error(what, [MODEL, *inputs, "--output-dir", out], 1, parts, out)

    expect_input_error("unknown input name", [*good, "--input", f"z={x}"],
                       ["unknown input 'z'", "x, ids"])
    expect_input_error("missing input", ["--input", f"x={x}"],
                       ["missing input 'ids'", "int64 [4]"])
    expect_input_error("duplicate input", [*good, "--input", f"x={x}"], ["'x'", "twice"])
    x64 = write_npy(path("x64.npy"), "<f8", (2, 3), x_values)
    expect_input_error("wrong dtype", ["--input", f"x={x64}", "--input", f"ids={ids}"],
                       [f"input 'x': expected float32 [2, 3], got float64 [2, 3] in {x64}"])
    ids32 = write_npy(path("ids32.npy"), "<i4", (4,), ids_values)
    expect_input_error("wrong dtype of ids", ["--input", f"x={x}", "--input", f"ids={ids32}"],
                       ["input 'ids': expected int64 [4], got int32 [4]"])
    x32 = write_npy(path("x32.npy"), "<f4", (3, 2), x_values)
    expect_input_error("wrong shape", ["--input", f"x={x32}", "--input", f"ids={ids}"],
                       [f"input 'x': expected float32 [2, 3], got float32 [3, 2] in {x32}"])
    x_flat = write_npy(path("xflat.npy"), "<f4", (6,), x_values)
    expect_input_error("wrong rank", ["--input", f"x={x_flat}", "--input", f"ids={ids}"],
                       ["expected float32 [2, 3], got float32 [6]"])
    xf = write_npy(path("xf.npy"), "<f4", (2, 3), x_values, fortran=True)
    expect_input_error("fortran order", ["--input", f"x={xf}", "--input", f"ids={ids}"],
                       ["input 'x'", xf, "fortran_order"])
    with open(x, "rb") as f:
        x_bytes = f.read()
    truncated = path("truncated.npy")
    with open(truncated, "wb") as f:
        f.write(x_bytes[:-5])
    expect_input_error("truncated data", ["--input", f"x={truncated}", "--input", f"ids={ids}"],
                       ["input 'x'", truncated, "truncated"])
    with open(truncated, "wb") as f:
        f.write(x_bytes[:40])
    expect_input_error("truncated header", ["--input", f"x={truncated}", "--input", f"ids={ids}"],
                       [truncated, "truncated header"])
    bad_magic = path("bad-magic.npy")
    with open(bad_magic, "wb") as f:
        f.write(b"PK\x03\x04" + x_bytes[4:])
    expect_input_error("bad magic", ["--input", f"x={bad_magic}", "--input", f"ids={ids}"],
                       [bad_magic, "bad magic"])
    malformed = path("malformed.npy")
    with open(malformed, "wb") as f:
        f.write(npy_image("", (), b"", header_text="{'descr': '<f4', 'shape': (2, 3)}"))
    expect_input_error("malformed header", ["--input", f"x={malformed}", "--input", f"ids={ids}"],
                       [malformed, "missing key 'fortran_order'"])
    negative = path("negative.npy")
    with open(negative, "wb") as f:
        f.write(npy_image("", (), b"", header_text="{'descr': '<f4', 'fortran_order': False, "
                                                   "'shape': (-2, 3), }"))
    expect_input_error("negative dims", ["--input", f"x={negative}", "--input", f"ids={ids}"],
                       [negative, "negative dimension"])
    expect_input_error("missing input file", ["--input", f"x={path('nope.npy')}", "--input",
                                              f"ids={ids}"], ["input 'x'", "nope.npy", "cannot open"])
    expect_input_error("input file is a directory", ["--input", f"x={work}", "--input", f"ids={ids}"],
                       ["is a directory"])

    # The fixture throws inside its run for ids[0] == -777: the ABI turns it into a status.
    poison = write_npy(path("poison.npy"), "<i8", (4,), [-777, 0, 0, 0])
    expect_input_error("the model's run fails", ["--input", f"x={x}", "--input", f"ids={poison}"],
                       ["aotc_run failed", "AOTC_ERR_INTERNAL", "exception"])

    expect_error("non-existent model", [path("nope.so"), "--info"], 1,
                 ["cannot open model", "nope.so", "No such file"])
    not_a_library = path("model.so")
    with open(not_a_library, "w") as f:
        f.write("this is not an ELF file\n")
    expect_error("not a shared library", [not_a_library, "--info"], 1,
                 ["cannot load model", "not a shared library"])
    expect_error("not a shared library, run", [not_a_library, *good, "--output-dir", out], 1,
                 ["cannot load model"], out)
    libc = None
    ldd = subprocess.run(["ldd", AOTC_RUN], capture_output=True, text=True)
    for line in ldd.stdout.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libc.so") and len(parts) >= 3 and parts[2].startswith("/"):
            libc = parts[2]
    if libc:
        expect_error("a library that is not a model", [libc, "--info"], 1,
                     ["is not an aotc model", "aotc_abi_version"])
    expect_error("model is a directory", [work, "--info"], 1, ["is a directory"])

    blocker = path("a-file")
    with open(blocker, "w") as f:
        f.write("x")
    expect_error("output dir is a file", [MODEL, *good, "--output-dir", os.path.join(blocker, "sub")],
                 1, ["cannot create output directory"])

    # ---- usage errors: status 2 ----
    expect_error("missing --output-dir", [MODEL, *good], 2, ["--output-dir"], out)
    expect_error("unknown flag", [MODEL, "--info", "--frobnicate"], 2, ["unknown option '--frobnicate'"])
    expect_error("no model", ["--info"], 2, ["no model"])
    expect_error("flag without value", [MODEL, *good, "--output-dir"], 2, ["needs a value"])
    expect_error("--input without NAME=", [MODEL, "--input", x, "--output-dir", out], 2, ["NAME=FILE"],
                 out)
    for bad in ["0", "-1", "abc", "1025", ""]:
        expect_error(f"--threads {bad!r}", [MODEL, *good, "--output-dir", out, "--threads", bad], 2,
                     ["--threads"], out)
    expect_error("--json without --info or --bench", [MODEL, "--json"], 2, ["--json"])
    expect_error("--info with inputs", [MODEL, "--info", *good], 2, ["--info"])
    expect_error("two models", [MODEL, MODEL, "--info"], 2, ["unexpected argument"])
    expect_error("--weights without a file", [MODEL, "--info", "--weights="], 2, ["--weights"])

    # ---- --bench ----
    result = aotc_run(MODEL, "--bench", "--iters", "7", "--warmup", "1", "--threads", "2")
    check(result.returncode == 0 and "7 runs after 1 warm-up, 2 threads: min " in result.stdout
          and "median" in result.stdout and "p90" in result.stdout and "peak RSS" in result.stdout,
          "--bench with synthetic inputs", result.stdout + result.stderr)
    result = aotc_run(MODEL, "--bench", "--json", "--iters", "5", *good)
    bench = json.loads(result.stdout) if result.returncode == 0 else {}
    check(bench.get("iters") == 5 and bench.get("warmup") == 5 and bench.get("threads") == 1
          and 0 <= bench["min_ms"] <= bench["median_ms"] <= bench["p90_ms"] <= bench["max_ms"]
          and bench["min_ms"] <= bench["mean_ms"] <= bench["max_ms"] and bench["peak_rss_kb"] > 0,
          "--bench --json with given inputs: ordered statistics", result.stdout + result.stderr)
    # Given inputs are still checked; the poison input makes the fixture's run fail.
    expect_error("--bench with a wrong input", [MODEL, "--bench", "--input", f"x={x32}"], 1,
                 ["input 'x': expected float32 [2, 3]"])
    expect_error("--bench whose run fails", [MODEL, "--bench", "--input", f"ids={poison}"], 1,
                 ["aotc_run failed"])
    expect_error("--bench with --output-dir", [MODEL, "--bench", "--output-dir", out], 2, ["--bench"], out)
    expect_error("--bench with --info", [MODEL, "--bench", "--info"], 2, ["--info", "--bench"])
    for flag, bad in [("--iters", "0"), ("--iters", "x"), ("--warmup", "-1"), ("--warmup", "")]:
        expect_error(f"{flag} {bad!r}", [MODEL, "--bench", flag, bad], 2, [flag])

    # ---- external weights (aotc --weights file) ----
    expect_error("--weights for a model with embedded weights", [MODEL, "--info", "--weights", x], 1,
                 ["embedded", "--weights"])
    if MODEL_EXTERNAL is None:
        return
    weights_bytes = struct.pack("<16f", 2.0, 1.0, *([0.0] * 14))
    model_dir = path("external")
    os.makedirs(model_dir)
    model_so = os.path.join(model_dir, "net.so")
    shutil.copy(MODEL_EXTERNAL, model_so)
    sibling = os.path.join(model_dir, "net.weights")
    expect_error("external weights, no file beside the model", [model_so, "--info"], 1,
                 ["separate file", sibling, "--weights"])
    out = path("out-ext")
    expect_error("external weights, no file beside the model, run", [model_so, *good, "--output-dir", out], 1,
                 ["separate file", sibling], out)
    with open(sibling, "wb") as f:
        f.write(weights_bytes)
    result = aotc_run(model_so, "--info")
    check(result.returncode == 0 and f"weights: file {sibling} (64 bytes, checksum 0x" in result.stdout,
          "--info shows the weights file beside the model", result.stdout + result.stderr)
    result = aotc_run(model_so, "--info", "--json")
    info = json.loads(result.stdout) if result.returncode == 0 else {}
    check(info.get("weights", {}).get("location") == "file" and info["weights"]["path"] == sibling
          and info["weights"]["size_bytes"] == 64, "--info --json shows the weights file", result.stdout)
    for threads in ["1", "2"]:
        result = aotc_run(model_so, *good, "--output-dir", out, "--threads", threads)
        check(result.returncode == 0, f"run with the weights file beside the model, {threads} threads",
              result.stderr)
        check_outputs(out, f"external weights, {threads} threads")
    elsewhere = path("elsewhere.weights")
    shutil.move(sibling, elsewhere)
    out = path("out-ext2")
    result = aotc_run(model_so, *good, "--output-dir", out, f"--weights={elsewhere}")
    check(result.returncode == 0, "run with --weights FILE", result.stderr)
    check_outputs(out, "--weights FILE")
    result = aotc_run(model_so, "--info", "--weights", elsewhere)
    check(result.returncode == 0 and f"weights: file {elsewhere}" in result.stdout, "--info with --weights",
          result.stdout + result.stderr)
    other = path("other.weights")
    with open(other, "wb") as f:
        f.write(struct.pack("<16f", 3.0, 1.0, *([0.0] * 14)))
    out = path("out-ext3")
    expect_error("weights of another model", [model_so, *good, "--output-dir", out, "--weights", other], 1,
                 ["aotc_model_create_v2", other, "checksum mismatch", "expected 0x"], out)
    with open(other, "wb") as f:
        f.write(weights_bytes[:40])
    expect_error("truncated weights", [model_so, "--info", "--weights", other], 1,
                 [other, "expected 64 bytes", "got 40"])
    expect_error("missing --weights file", [model_so, "--info", "--weights", path("nope.weights")], 1,
                 ["nope.weights", "No such file"])


if __name__ == "__main__":
    sys.exit(main())
