"""Hostile model files: aotc must reject every broken file cleanly.

A corpus of bad inputs is generated at run time from a small valid scripted model (nothing is
committed): an empty file, random bytes, the file truncated at many offsets (the first bytes,
the records, the central directory, the end record), single bytes flipped at many positions
(stratified over the whole file, with a fixed seed), the archive with each record removed in
turn, a few targeted zip header corruptions, torch.save() pickles (zip and legacy), a zip that
is not TorchScript, a directory, a missing path, /dev/null, a FIFO, and command-line/model
mismatches (non-tensor arguments, the wrong number of --input, inputs of the wrong rank).

For every variant aotc (run with a time limit, two at a time) must
  - exit with status exactly 1: never be killed by a signal, never hang, and never exit 0,
    except where the mutation may leave the model valid (a flipped byte inside stored
    weights, a record TorchScript does not need): then exit 0 is accepted only if the
    output is a valid ELF shared object, and such variants are counted as "loaded";
  - print an error whose first line starts with 'aotc: error:' and, for file problems,
    names the file (or, where the corruption still loads as a wrong model, the op and line);
  - leave nothing at the -o path, or leave a file already there byte for byte untouched
    (alternate variants check one or the other);
  - leave no temporary files: nothing named '*.tmp.*' in the output directory and nothing
    in its private TMPDIR.
A crash inside LibTorch that aotc's compile child reports as an error counts as a clean
error, but the summary lists them. Exits non-zero on any failure; prints one line per
variant and a summary. --flips/--truncations/--seed make larger corpora; --only-flip
POS:MASK reproduces single flips (offsets into the model this file generates: they move
when this file's path or source lines change, as the model's debug info records them)."""
import concurrent.futures
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import zipfile
from typing import List

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, failures, finish  # noqa: E402

TIMEOUT_S = 60
# aotc runs with its address space limited to this (ulimit -v, KiB): a corrupt file that makes
# LibTorch allocate without bound must fail cleanly, not take the test machine down.
MEMORY_LIMIT_KIB = 4 * 1024 * 1024


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = y.mean([2, 3])
        return self.fc(y)


class TakesInt(nn.Module):
    def forward(self, x, n: int):
        return x * n


class TakesList(nn.Module):
    def forward(self, xs: List[torch.Tensor]):
        return xs[0] + 1


class Variant:
    def __init__(self, name, path, inputs, may_load=False, names_file=True, needle=None, timeout=TIMEOUT_S):
        self.name = name
        self.timeout = timeout
        self.path = path
        self.inputs = inputs
        self.may_load = may_load  # the mutation may leave a valid model: exit 0 is acceptable
        self.names_file = names_file  # the first error line must contain the path
        self.needle = needle  # a string the error must contain


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def signal_name(status):
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def is_elf_shared_object(path):
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return False
    e_type = struct.unpack_from("<H", head, 16)[0]
    return e_type == 3  # ET_DYN


def rebuild_zip(src_path, dst_path, skip=None):
    """Copies the archive record by record (same names, order and compression), leaving out
    the record named `skip`."""
    with zipfile.ZipFile(src_path) as src, zipfile.ZipFile(dst_path, "w") as dst:
        for item in src.infolist():
            if item.filename != skip:
                dst.writestr(item, src.read(item.filename))
    return dst_path


def eocd_offset(data):
    pos = data.rfind(b"PK\x05\x06")
    assert pos >= 0, "no end of central directory record"
    return pos


def central_directory_entries(data):
    """(central directory header offset, local header offset, filename) of each record."""
    eocd = eocd_offset(data)
    count, size, start = struct.unpack_from("<HII", data, eocd + 10)
    entries = []
    pos = start
    for _ in range(count):
        assert data[pos:pos + 4] == b"PK\x01\x02"
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        local = struct.unpack_from("<I", data, pos + 42)[0]
        entries.append((pos, local, data[pos + 46:pos + 46 + name_len].decode()))
        pos += 46 + name_len + extra_len + comment_len
    return entries, start, eocd


def region(entries, cd_start, eocd, pos):
    """Which part of the archive a byte offset falls in."""
    if pos >= eocd:
        return "end record"
    if pos >= cd_start:
        name = [n for off, _, n in entries if off <= pos][-1]
        return f"central directory, {name}"
    name = [n for _, local, n in entries if local <= pos][-1]
    return f"record {name}"


def patched(data, offset, fmt, value):
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def build_corpus(w, seed, n_truncations, n_flips, only_flips=None):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    corpus = os.path.join(w, "corpus")
    shutil.rmtree(corpus, ignore_errors=True)
    os.makedirs(corpus)
    good = os.path.join(corpus, "good.pt")
    torch.jit.save(torch.jit.script(Small()), good)
    with open(good, "rb") as f:
        data = f.read()
    x = ["x:1x3x8x8"]
    entries, cd_start, eocd = central_directory_entries(data)
    variants = []

    def add(name, blob, **kw):
        path = write(os.path.join(corpus, f"v{len(variants):03d}.pt"), blob)
        variants.append(Variant(name, path, x, **kw))

    if only_flips:  # reproduce given flips only, e.g. --only-flip 2383:0x60
        for pos, mask in only_flips:
            blob = bytearray(data)
            blob[pos] ^= mask
            add(f"byte {pos} ^= 0x{mask:02x} ({region(entries, cd_start, eocd, pos)})", bytes(blob), may_load=True)
        return good, rebuild_zip(good, os.path.join(corpus, "rebuilt.pt")), variants

    # Whole-file garbage.
    add("empty file", b"")
    add("random bytes (4 KiB)", bytes(rng.getrandbits(8) for _ in range(4096)))
    add("random bytes behind a zip magic", b"PK\x03\x04" + bytes(rng.getrandbits(8) for _ in range(4092)))
    add("zip magic, then an end-of-central-directory record only",
        b"PK\x03\x04" + b"\0" * 60 + b"PK\x05\x06" + b"\0" * 18)
    add("random bytes, same size as the model", bytes(rng.getrandbits(8) for _ in range(len(data))))

    # Truncations: the first bytes, the local records, the central directory and its end.
    cuts = {1, 2, 3, 4, 10, 30, 64}
    n_cd = max(4, n_truncations // 4)
    n_tail = 4
    n_body = max(1, n_truncations - len(cuts) - n_cd - n_tail)
    cuts |= {64 + (cd_start - 64) * i // n_body for i in range(n_body)}
    cuts |= {cd_start + (eocd - cd_start) * i // n_cd for i in range(n_cd)}
    cuts |= {eocd + 1, eocd + 10, len(data) - 2, len(data) - 1}
    for cut in sorted(c for c in cuts if 0 < c < len(data)):
        add(f"truncated to {cut}/{len(data)} bytes ({region(entries, cd_start, eocd, cut)})", data[:cut])

    # Single-byte flips at stratified random positions (every region of the file gets some),
    # plus a few in the central directory and the end record for certain.
    positions = {rng.randrange(len(data) * i // n_flips, len(data) * (i + 1) // n_flips) for i in range(n_flips)}
    positions |= {cd_start + 8, cd_start + 20, cd_start + 28, eocd + 10, eocd + 16}
    for pos in sorted(positions):
        mask = rng.randrange(1, 256)
        blob = bytearray(data)
        blob[pos] ^= mask
        add(f"byte {pos} ^= 0x{mask:02x} ({region(entries, cd_start, eocd, pos)})", bytes(blob), may_load=True)

    # Targeted zip header corruptions: the data.pkl central directory entry and the end record.
    # (miniz, like Python's zipfile, recovers the central directory from the end record's
    # position when the offsets disagree, so some of these legitimately still load.)
    pkl = next(off for off, _, name in entries if name.endswith("data.pkl"))
    add("data.pkl: uncompressed size 0xffffffff", patched(data, pkl + 24, "<I", 0xFFFFFFFF), may_load=True)
    add("data.pkl: compressed size 0xffffffff", patched(data, pkl + 20, "<I", 0xFFFFFFFF), may_load=True)
    add("data.pkl: local header offset past the end", patched(data, pkl + 42, "<I", len(data) + 1000))
    add("data.pkl: name length 0xffff", patched(data, pkl + 28, "<H", 0xFFFF), may_load=True)
    add("end record: 65535 entries", patched(patched(data, eocd + 8, "<H", 0xFFFF), eocd + 10, "<H", 0xFFFF),
        may_load=True)
    add("end record: central directory offset 0", patched(data, eocd + 16, "<I", 0), may_load=True)
    add("end record: 1 entry", patched(patched(data, eocd + 8, "<H", 1), eocd + 10, "<H", 1), may_load=True)
    add("end record: central directory size 0", patched(data, eocd + 12, "<I", 0), may_load=True)
    add("end record: comment length 0xffff", patched(data, eocd + 20, "<H", 0xFFFF), may_load=True)

    # The archive with each record removed in turn (and, as a control, with none removed).
    control = rebuild_zip(good, os.path.join(corpus, "rebuilt.pt"))
    for _, _, name in entries:
        path = rebuild_zip(good, os.path.join(corpus, f"v{len(variants):03d}.pt"), skip=name)
        variants.append(Variant(f"record {name} removed", path, x, may_load=True))

    # Files that are not TorchScript at all.
    pickle = os.path.join(corpus, f"v{len(variants):03d}.pt")
    torch.save({"w": torch.randn(3)}, pickle)
    variants.append(Variant("torch.save() state dict (zip)", pickle, x))
    module_pickle = os.path.join(corpus, f"v{len(variants):03d}.pt")
    torch.save(Small().state_dict(), module_pickle, _use_new_zipfile_serialization=False)
    variants.append(Variant("torch.save() legacy (non-zip) pickle", module_pickle, x))
    other_zip = os.path.join(corpus, f"v{len(variants):03d}.pt")
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("hello.txt", "not a model\n")
    variants.append(Variant("a zip that is not TorchScript", other_zip, x))
    variants.append(Variant("a directory", corpus, x))
    variants.append(Variant("a missing path", os.path.join(corpus, "does-not-exist.pt"), x))
    variants.append(Variant("/dev/null", "/dev/null", x))
    # A FIFO nobody writes to: opening it blocks, so aotc must check for a regular file first.
    fifo = os.path.join(corpus, "fifo.pt")
    os.mkfifo(fifo)
    variants.append(Variant("a FIFO", fifo, x, timeout=15))

    # Valid files, wrong use.
    takes_int = os.path.join(corpus, "takes_int.pt")
    torch.jit.save(torch.jit.script(TakesInt()), takes_int)
    variants.append(Variant("forward takes an int", takes_int, ["x:2", "n:1"], needle="has type int"))
    takes_list = os.path.join(corpus, "takes_list.pt")
    torch.jit.save(torch.jit.script(TakesList()), takes_list)
    variants.append(Variant("forward takes a List[Tensor]", takes_list, ["xs:2"], needle="List[Tensor]"))
    variants.append(Variant("no --input for a 1-argument forward", good, [], needle="argument"))
    variants.append(Variant("two --input for a 1-argument forward", good, ["x:1x3x8x8", "y:1x3x8x8"],
                            needle="argument"))
    variants.append(Variant("conv model given a 2-d input", good, ["x:3x8"], names_file=False, needle="conv"))
    variants.append(Variant("conv model given a 5-d input", good, ["x:1x1x3x8x8"], names_file=False,
                            needle="conv"))
    variants.append(Variant("conv model given 1 channel", good, ["x:1x1x8x8"], names_file=False,
                            needle="conv"))
    return good, control, variants


def run_aotc(aotc, variant, out_dir, tmp_dir):
    out = os.path.join(out_dir, "model.so")
    cmd = ["sh", "-c", f'ulimit -v {MEMORY_LIMIT_KIB} && exec "$@"', "sh", aotc, variant.path, "-o", out]
    if os.environ.get("AOTC_SANITIZER"):
        # ASan reserves terabytes of address space: let it enforce the limit itself.
        cmd = [aotc, variant.path, "-o", out]
    for spec in variant.inputs:
        cmd += ["--input", spec]
    env = dict(os.environ, TMPDIR=tmp_dir)
    if os.environ.get("AOTC_SANITIZER"):
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":max_allocation_size_mb=4096:allocator_may_return_null=1"
    env.pop("AOTC_KEEP_BUILD", None)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
    except OSError as e:
        return None, f"cannot run {aotc}: {e}", False, 0.0
    try:
        stdout, stderr = proc.communicate(timeout=variant.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            stdout, stderr = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        timed_out = True
    return proc.returncode, stderr.decode(errors="replace"), timed_out, time.monotonic() - start


def check(aotc, w, index, variant, label=None):
    """Runs one variant; returns (outcome, first error line, problems, seconds, stderr)."""
    label = label or f"{index:03d}"
    out_dir = os.path.join(w, "out", label)
    tmp_dir = os.path.join(w, "tmp", label)
    for d in (out_dir, tmp_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    out = os.path.join(out_dir, "model.so")
    precious = None
    if index % 2:  # every other variant: a file already at -o must survive
        precious = b"precious output %d\n" % index
        write(out, precious)

    status, stderr, timed_out, seconds = run_aotc(aotc, variant, out_dir, tmp_dir)
    first = stderr.strip().splitlines()[0] if stderr.strip() else ""
    problems = []
    outcome = "error"
    if status is None:
        problems.append(stderr)
        outcome = "status"
    elif timed_out:
        problems.append(f"no exit within {variant.timeout} s (killed)")
        outcome = "hang"
    elif status < 0:
        problems.append(f"killed by {signal_name(status)}")
        outcome = "signal"
    elif status == 0:
        outcome = "loaded"
        if not variant.may_load:
            problems.append("exit status 0 for a file that cannot be valid")
        elif not is_elf_shared_object(out):
            problems.append("exit status 0 but the output is not an ELF shared object")
    elif status != 1:
        problems.append(f"exit status {status}, want 1")
        outcome = "status"
    if status == 1 and not timed_out:
        if "compiling crashed" in first:
            outcome = "crash"  # LibTorch crashed in aotc's child process; aotc reported it
        if not first.startswith("aotc: error:"):
            problems.append("the first line of stderr does not start with 'aotc: error:'")
        # A file problem names the file; a corruption that still loads as a (wrong) model may
        # instead fail in an op, which names the op and the source line.
        if variant.names_file and variant.path not in first and not re.match(r"aotc: error: aten::\S+ at ", first):
            problems.append("the first error line does not name the file")
        if variant.needle and variant.needle not in stderr:
            problems.append(f"the error lacks {variant.needle!r}")
    if status is not None and status != 0:
        if precious is None and os.path.lexists(out):
            problems.append("an output file was left behind")
        if precious is not None:
            try:
                with open(out, "rb") as f:
                    kept = f.read()
            except OSError:
                kept = None
            if kept != precious:
                problems.append("the existing output file was changed or removed")
    if not timed_out:  # (after a kill, leftovers are no news)
        leftovers = [f for f in os.listdir(out_dir) if ".tmp." in f]
        if leftovers:
            problems.append(f"temporary files left in the output directory: {leftovers}")
        tmp_left = os.listdir(tmp_dir)
        if tmp_left:
            problems.append(f"files left in TMPDIR: {tmp_left}")
    if not problems:  # keep the scratch space small
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return outcome, first, problems, seconds, stderr


def main():
    ap = arg_parser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--truncations", type=int, default=40)
    ap.add_argument("--flips", type=int, default=60)
    ap.add_argument("--only-flip", action="append", default=[], metavar="POS:MASK",
                    help="run only these single-byte flips of the generated model (to reproduce one)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    w = os.path.abspath(args.workdir)
    os.makedirs(w, exist_ok=True)
    for d in ("out", "tmp"):
        shutil.rmtree(os.path.join(w, d), ignore_errors=True)
    started = time.monotonic()

    only = [(int(p, 0), int(m, 0)) for p, m in (f.split(":") for f in args.only_flip)]
    good, control, variants = build_corpus(w, args.seed, args.truncations, args.flips, only)

    # Controls: the original file and the record-by-record rebuilt copy compile.
    for index, name, path in ((0, "control: the valid model", good), (1, "control: the rebuilt archive", control)):
        outcome, first, problems, seconds, stderr = check(aotc_abs(args.aotc), w, index,
                                                          Variant(name, path, ["x:1x3x8x8"], may_load=True),
                                                          label=f"control{index}")
        if outcome != "loaded" or problems:
            failures.append(name)
            print(f"FAIL {name}: {first}\n     {'; '.join(problems) or 'did not compile'}")
            print("     stderr: " + stderr.strip()[:1500].replace("\n", "\n             "))
        else:
            print(f"ok   {name}: compiled in {seconds:.2f} s")
    if failures:
        print("the valid model does not compile: the corpus checks would mean nothing")
        return 1

    counts = {"error": 0, "crash": 0, "loaded": 0}
    crashes = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(check, aotc_abs(args.aotc), w, i, v) for i, v in enumerate(variants)]
        for i, (variant, future) in enumerate(zip(variants, futures)):
            outcome, first, problems, seconds, stderr = future.result()
            if problems:
                failures.append(variant.name)
                print(f"FAIL [{i:03d}] {variant.name}: {'; '.join(problems)}")
                print(f"     file {variant.path}; {seconds:.1f} s")
                if stderr.strip():
                    print("     stderr: " + stderr.strip()[-1500:].replace("\n", "\n             "))
            else:
                counts[outcome] += 1
                if outcome == "crash":
                    crashes.append(variant.name)
                shown = "compiled (the mutation left a valid model)" if outcome == "loaded" else first
                if len(shown) > 150:
                    shown = shown[:147] + "..."
                print(f"ok   [{i:03d}] {variant.name}: {shown}")

    elapsed = time.monotonic() - started
    print(f"summary: {len(variants)} variants tried, {counts['error'] + counts['crash']} errored cleanly "
          f"({counts['crash']} of them crashes inside LibTorch caught by aotc's child process), "
          f"{counts['loaded']} loaded (valid after the mutation), {len(failures)} failed; {elapsed:.1f} s")
    if crashes:
        print("crashes caught: " + ", ".join(crashes))
    return finish("every hostile file was refused cleanly or compiled")


def aotc_abs(path):
    return os.path.abspath(path) if os.sep in path else path


if __name__ == "__main__":
    sys.exit(main())
