"""An installed aotc names neither the source tree nor the build tree, and works after being
moved: `meson install --destdir` of the build directory, then
 (a) no installed file (binaries read as bytes) contains the source or build directory's
     path. LibTorch's directory, the RUNPATH of aotc and the backend library (the
     compile-time dependency, allowed), is removed from each file's bytes first: when the
     venv lives in the checkout, it starts with the source directory;
 (b) the installed tree, moved elsewhere, compiles a scripted model with its bin/aotc (no
     AOTC_* variable set) and runs it with its bin/aotc-run, matching torch; with
     --emit-source, build.ninja links the moved prefix's runtime and includes its headers
     and names neither tree (and, when CUDA was built, so does --target cuda's);
 (c) the moved lib/libaotc_torch_backend.so, loaded with torch.ops.load_library, lowers a
     module to the "aotc" backend (its build.ninja again the moved prefix's), matching eager;
 (d) with the source and build trees renamed away in effect (a private mount namespace lays
     an empty tmpfs over them, LibTorch's directory bound back), a copy of the moved tree
     compiles and runs the model (skipped without root or unshare).

  python tests/install/test_relocatable.py --build BUILD_DIR --workdir DIR

Exits 77 (skipped) when meson is not found or the build has no compiler."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from common import rel_l2  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def expect(name, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail!r}"))
    if not ok:
        failures.append(name)


def run(cmd, **kw):
    """Runs cmd, returns (returncode, stdout + stderr)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def clean_env():
    """The environment without any AOTC_* variable (nor PYTHONPATH, which could bring the
    source tree's package)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AOTC_") and k != "PYTHONPATH"}


def find_meson():
    for candidate in (os.path.join(os.path.dirname(sys.executable), "meson"), shutil.which("meson")):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def grep_tree(root, needles, allowed):
    """{needle: [(file, context)]} for every file under root containing needle once the
    allowed strings are removed from its bytes."""
    hits = {n: [] for n in needles}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            for a in allowed:
                data = data.replace(a, b"")
            for n in needles:
                at = data.find(n)
                if at >= 0:
                    hits[n].append((os.path.relpath(path, root), data[max(0, at - 40):at + len(n) + 60]))
    return hits


def includes(ninja_text, include_dir):
    """Whether build.ninja's compile flags include include_dir (quoted or not)."""
    return re.search(r"-I'?" + re.escape(include_dir) + r"'?(\s|$)", ninja_text) is not None


def write_script(work, name, text):
    """A script file (torch.jit.script reads the module's source, which -c does not have)."""
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


MAKE_MODEL = textwrap.dedent("""
    import sys
    import numpy as np
    import torch

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 4)

        def forward(self, x):
            return torch.tanh(self.fc(x)) * 2.0 + x[:, :4]

    torch.manual_seed(0)
    m = torch.jit.script(Small().eval())
    torch.jit.save(m, sys.argv[1])
    x = torch.randn(2, 5)
    np.save(sys.argv[2], x.numpy())
    np.save(sys.argv[3], m(x).detach().numpy())
""")

LOWER = textwrap.dedent("""
    import sys
    import torch

    torch.ops.load_library(sys.argv[1])

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 3)

        def forward(self, x):
            return torch.relu(self.fc(x)) - 0.5 * x[:, :3]

    torch.manual_seed(1)
    scripted = torch.jit.script(Tiny().eval())
    lowered = torch._C._jit_to_backend("aotc", scripted, {"forward": {"inputs": "x:2x5"}})
    x = torch.randn(2, 5)
    want = scripted(x)
    got = lowered(x)
    err = float((got - want).norm() / want.norm())
    print("REL_L2", err)
""")


HIDE_SCRIPT = """
set -e
keep=$(mktemp -d)
i=0
for d in $KEEP; do mkdir -p "$keep/$i"; mount --bind "$d" "$keep/$i"; i=$((i+1)); done
for d in $HIDE; do mount -t tmpfs aotc-hidden "$d"; done
i=0
for d in $KEEP; do mkdir -p "$d"; mount --bind "$keep/$i" "$d"; i=$((i+1)); done
for d in $HIDE; do [ -z "$(ls -A "$d" | grep -v '^.venv$')" ] || { echo "$d is not hidden"; exit 3; }; done
echo NAMESPACE_READY
"$PREFIX/bin/aotc" small.pt -o small.so --input x:2x5
"$PREFIX/bin/aotc-run" small.so --input x=x.npy --output-dir out
"""


def hidden_check(work, moved, pt, x_npy, want_npy, source, build, torch_lib_dirs, env):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("skip (d): needs root and unshare for a private mount namespace")
        return
    outside = tempfile.mkdtemp(prefix="aotc-relocated-")
    try:
        prefix = os.path.join(outside, "prefix")
        shutil.copytree(moved, prefix, symlinks=True)
        shutil.copy(pt, os.path.join(outside, "small.pt"))
        shutil.copy(x_npy, os.path.join(outside, "x.npy"))
        # The build tree first: it may lie inside the source tree, which then hides it too.
        hide = [d for d in (build, source) if os.path.isdir(d)]
        if not source.startswith(build + os.sep) and build.startswith(source + os.sep):
            hide = [source]
        # ninja and clang++ from the system, not from the hidden venv's bin/.
        henv = dict(env, PREFIX=prefix, HIDE=" ".join(hide), KEEP=" ".join(torch_lib_dirs),
                    PATH=":".join(p for p in env.get("PATH", "").split(":")
                                  if not any(p.startswith(h) for h in hide)))
        code, out = run(["unshare", "-m", "--propagation", "private", "sh", "-c", HIDE_SCRIPT], env=henv,
                        cwd=outside)
        if "NAMESPACE_READY" not in out:
            print(f"skip (d): no private mount namespace here: {out.strip()[-300:]}")
            return
        expect("with the source and build trees hidden, the moved aotc compiles and aotc-run runs",
               code == 0, out[-3000:])
        if code == 0:
            err = rel_l2(np.load(os.path.join(outside, "out", "out0.npy")), np.load(want_npy))
            expect(f"  and the outputs match torch (relative L2 {err:.2e})", err <= 1e-4, err)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the meson build directory")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    build = os.path.realpath(args.build)
    source = os.path.realpath(REPO)
    meson = find_meson()
    if meson is None:
        print("SKIP: meson not found")
        return 77
    with open(os.path.join(build, "meson-info", "intro-install_plan.json")) as f:
        plan = json.load(f)
    targets = plan.get("targets", {})
    if not any(src.endswith("/compiler/aotc") for src in targets):
        print("SKIP: this build installs no aotc (-Dbuild_compiler=false)")
        return 77
    # LibTorch's lib directory: the RUNPATH that aotc and the backend library are installed with.
    torch_lib_dirs = sorted({t["install_rpath"] for t in targets.values() if t.get("install_rpath")})

    work = os.path.realpath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    stage = os.path.join(work, "stage")
    code, out = run([meson, "install", "-C", build, "--destdir", stage, "--no-rebuild", "--quiet"])
    expect("meson install --destdir", code == 0, out[-3000:])
    if code != 0:
        return 1
    aotc_bins = [p for p in glob.glob(os.path.join(stage, "**", "bin", "aotc"), recursive=True) if os.path.isfile(p)]
    expect("one bin/aotc installed", len(aotc_bins) == 1, aotc_bins)
    if len(aotc_bins) != 1:
        return 1
    prefix = os.path.dirname(os.path.dirname(aotc_bins[0]))
    print(f"installed prefix: {os.path.relpath(prefix, stage)} (under the stage directory)")

    # (a) Neither tree's path in any installed file.
    allowed = [d.encode() for d in torch_lib_dirs]
    print(f"allowed (LibTorch, removed before the search): {torch_lib_dirs}")
    needles = {source.encode(): "source", build.encode(): "build"}
    hits = grep_tree(stage, list(needles), allowed)
    for needle, what in needles.items():
        expect(f"no installed file names the {what} directory {needle.decode()}", not hits[needle], hits[needle][:5])

    # (b) Moved elsewhere, the installed aotc compiles and runs a model on its own.
    moved = os.path.join(work, "moved", "prefix")
    os.makedirs(os.path.dirname(moved))
    shutil.move(prefix, moved)
    aotc = os.path.join(moved, "bin", "aotc")
    aotc_run = os.path.join(moved, "bin", "aotc-run")
    runtime_libs = glob.glob(os.path.join(moved, "**", "libaotc_runtime.a"), recursive=True)
    backends = glob.glob(os.path.join(moved, "**", "libaotc_torch_backend.so"), recursive=True)
    expect("the moved prefix has the runtime and the backend library", len(runtime_libs) == 1 and len(backends) == 1,
           (runtime_libs, backends))
    if len(runtime_libs) != 1 or len(backends) != 1:
        return 1
    include_dir = os.path.join(moved, "include")
    env = clean_env()

    pt, x_npy, want_npy = (os.path.join(work, n) for n in ("small.pt", "x.npy", "want.npy"))
    code, out = run([sys.executable, write_script(work, "make_model.py", MAKE_MODEL), pt, x_npy, want_npy], env=env)
    expect("make the scripted model", code == 0, out[-2000:])
    if code != 0:
        return 1
    so = os.path.join(work, "small.so")
    code, out = run([aotc, pt, "-o", so, "--input", "x:2x5"], env=env, cwd=work)
    expect("moved aotc compiles the model", code == 0 and os.path.isfile(so), out[-3000:])
    outdir = os.path.join(work, "out")
    code, out = run([aotc_run, so, "--input", f"x={x_npy}", "--output-dir", outdir], env=env, cwd=work)
    expect("moved aotc-run runs it", code == 0, out[-2000:])
    if code == 0:
        err = rel_l2(np.load(os.path.join(outdir, "out0.npy")), np.load(want_npy))
        expect(f"outputs match torch (relative L2 {err:.2e})", err <= 1e-4, err)

    src_dir = os.path.join(work, "emitted")
    code, out = run([aotc, pt, "-o", os.path.join(work, "small2.so"), "--input", "x:2x5", "--emit-source", src_dir],
                    env=env, cwd=work)
    expect("moved aotc --emit-source", code == 0, out[-3000:])
    ninja_file = os.path.join(src_dir, "build.ninja")
    text = open(ninja_file).read() if os.path.isfile(ninja_file) else ""
    expect("build.ninja links the moved prefix's runtime", runtime_libs[0] in text, text[-1500:])
    expect("build.ninja includes the moved prefix's headers", includes(text, include_dir), text[:1500])
    # The work directory may lie in the build tree (meson test): its paths are removed first.
    for what, path in (("source", source), ("build", build)):
        expect(f"build.ninja does not name the {what} directory", path not in text.replace(work, "<work>"), text)

    # With CUDA built: --target cuda links the moved prefix's CUDA runtime (built only, not run).
    cuda_libs = glob.glob(os.path.join(moved, "**", "libaotc_runtime_cuda.a"), recursive=True)
    if cuda_libs:
        cuda_dir = os.path.join(work, "emitted_cuda")
        code, out = run([aotc, pt, "-o", os.path.join(work, "small_cuda.so"), "--input", "x:2x5", "--target", "cuda",
                         "--emit-source", cuda_dir], env=env, cwd=work)
        expect("moved aotc --target cuda builds", code == 0, out[-3000:])
        path = os.path.join(cuda_dir, "build.ninja")
        text = open(path).read() if os.path.isfile(path) else ""
        expect("its build.ninja links the moved prefix's runtimes",
               runtime_libs[0] in text and cuda_libs[0] in text and includes(text, include_dir), text[-1500:])
        expect("its build.ninja names neither tree",
               source not in text.replace(work, "") and build not in text.replace(work, ""), text)

    # (c) The moved backend library lowers a module in a torch process.
    tmp = os.path.join(work, "backend_tmp")
    os.makedirs(tmp)
    benv = dict(env, TMPDIR=tmp, AOTC_KEEP_BUILD="1")  # keeps the build directory to look at
    code, out = run([sys.executable, write_script(work, "lower.py", LOWER), backends[0]], env=benv, cwd=work)
    err_lines = [line for line in out.splitlines() if line.startswith("REL_L2 ")]
    expect("moved backend library lowers a module", code == 0 and len(err_lines) == 1, out[-3000:])
    if err_lines:
        err = float(err_lines[0].split()[1])
        expect(f"lowered module matches eager (relative L2 {err:.2e})", err <= 1e-4, err)
    ninjas = glob.glob(os.path.join(tmp, "**", "build.ninja"), recursive=True)
    texts = [open(p).read() for p in ninjas]
    expect("the backend's build.ninja links the moved prefix's runtime",
           len(texts) >= 1 and all(runtime_libs[0] in t and includes(t, include_dir) for t in texts), ninjas)
    expect("the backend's build.ninja names neither tree",
           len(texts) >= 1 and not any(source in t.replace(work, "") or build in t.replace(work, "") for t in texts),
           ninjas)

    # (d) The moved tree with the source and build trees out of sight: in a private mount
    #     namespace (unshare -m, as root), an empty tmpfs lies over each tree and only
    #     LibTorch's directory (inside the repo's venv here) is bound back. A copy of the
    #     moved prefix and the model lie outside both trees. Skipped where namespaces are
    #     not allowed.
    hidden_check(work, moved, pt, x_npy, want_npy, source, build, torch_lib_dirs, env)

    print(f"{len(failures)} failure(s)" if failures else "the installed aotc is relocatable")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
