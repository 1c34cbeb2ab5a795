"""The Debian package (scripts/package_deb.sh): builds it (or takes --deb FILE), then
 (a) dpkg-deb --info: Package, Version (meson's project version, + git describe), Architecture,
     Depends (libc6, libstdc++6, clang, lld, ninja-build; nothing for torch), Description;
 (b) its files: the /opt/aotc tree (wrapper bin/aotc, bin/aotc-compiler, bin/aotc-run, the
     runtime, the backend library, the headers, the CMake package, aotc.pc; only bin, lib and
     include, no Python file, no CUDA runtime), the /usr/bin links; the RUNPATH of the
     compiler and the backend library is LibTorch's torch/lib only, aotc-run has none; no
     file names the source or build directory (LibTorch's recorded directory, the
     compiler's RUNPATH, removed from each file's bytes first, as in test_relocatable.py);
 (c) installed into a private root with `dpkg --root` (or, if dpkg refuses, extracted with
     `dpkg-deb -x`), its aotc compiles a scripted model and its aotc-run runs it, matching
     torch (no AOTC_* variable set);
 (d) the wrapper's LibTorch lookup on a machine without the recorded torch: a copy of the
     installed tree whose compiler has another RUNPATH (patchelf; skipped without it) fails
     with `pip install torch==...` when python3 has no torch, and finds it through
     AOTC_PYTHON (this Python) and AOTC_TORCH_LIB;
 (e) with the aarch64 runtime in the package: aotc --target-triple aarch64-linux-gnu, run by
     the packaged aarch64 aotc-run under qemu-aarch64 (skipped without qemu-aarch64 or
     /usr/aarch64-linux-gnu), matching torch.

  python tests/install/test_deb.py --workdir DIR [--build DIR] [--build-dir DIR] [--deb FILE]

How the package is made (without --deb):
 - from the project's build directory --build DIR (default: build/ in the checkout) when it
   was configured with -Dpython_package=true (pip install --no-build-isolation --no-deps
   --config-settings=build-dir=build .; meson test passes meson.project_build_root()):
   `package_deb.sh --from-build DIR` stages what DIR has built (seconds; nothing is built);
 - with AOTC_TEST_DEB=1 and no --build, or when DIR is not such a build directory and
   AOTC_TEST_DEB=1: package_deb.sh's own route, which configures and builds --build-dir
   (default build-deb/ in the checkout; a full build of aotc, minutes the first time).
Otherwise, and when dpkg-deb or dpkg is missing, it exits 77 (skipped)."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from common import rel_l2  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "opt/aotc"
TRIPLE = "aarch64-linux-gnu"
failures = []


def expect(name, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail!r}"))
    if not ok:
        failures.append(name)


def run(cmd, **kw):
    """Runs cmd, returns (returncode, stdout + stderr)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def clean_env(**extra):
    """The environment without any AOTC_* variable (nor PYTHONPATH), plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOTC_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def grep_tree(root, needles, allowed):
    """{needle: [(file, context)]} for every file under root containing needle once the
    allowed strings are removed from its bytes (test_relocatable.py's search)."""
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


def elf_machine(path):
    """readelf's Machine lines of an ELF file or every member of an archive."""
    code, out = run(["readelf", "-h", path])
    return set(re.findall(r"Machine:\s+(.+)", out)) if code == 0 else set()


MAKE_MODEL = textwrap.dedent("""
    import sys
    import numpy as np
    import torch

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x)).mean(dim=(2, 3))
            return torch.tanh(self.fc(y)) * 2.0

    torch.manual_seed(0)
    m = torch.jit.script(Small().eval())
    torch.jit.save(m, sys.argv[1])
    x = torch.randn(2, 3, 8, 8)
    np.save(sys.argv[2], x.numpy())
    np.save(sys.argv[3], m(x).detach().numpy())
""")


def compile_and_run(name, aotc, aotc_run, work, pt, x_npy, want_npy, env, target=None, runner=()):
    """Compiles pt with aotc (for target), runs it with aotc_run (through runner), compares."""
    so = os.path.join(work, name + ".so")
    cmd = [aotc, pt, "-o", so, "--input", "x:2x3x8x8"] + (["--target-triple", target] if target else [])
    code, out = run(cmd, env=env, cwd=work)
    expect(f"{name}: the installed aotc compiles the model", code == 0 and os.path.isfile(so), out[-3000:])
    if code != 0:
        return
    import numpy as np

    outdir = os.path.join(work, name + "_out")
    code, out = run(list(runner) + [aotc_run, so, "--input", f"x={x_npy}", "--output-dir", outdir], env=env, cwd=work)
    expect(f"{name}: the installed aotc-run runs it", code == 0, out[-2000:])
    if code == 0:
        err = rel_l2(np.load(os.path.join(outdir, "out0.npy")), np.load(want_npy))
        expect(f"{name}: outputs match torch (relative L2 {err:.2e})", err <= 1e-4, err)


def project_version_of(build):
    """meson's project version: from the build directory's introspection, else meson.build."""
    try:
        with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        m = re.search(r"version\s*:\s*'([^']+)'", open(os.path.join(REPO, "meson.build")).read())
        return m.group(1) if m else "?"


def python_package_build(build):
    """Whether build is a meson build directory configured with -Dpython_package=true."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            options = json.load(f)
    except (OSError, ValueError):
        return False
    return any(o.get("name") == "python_package" and o.get("value") is True for o in options)


def runpath(path):
    """The RUNPATH and RPATH entries of an ELF file, as 'RUNPATH=dir' strings."""
    code, out = run(["readelf", "-d", path])
    return re.findall(r"\((RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out) if code == 0 else None


def install(deb, root, work):
    """Installs deb into root with dpkg --root; falls back to dpkg-deb -x. Returns how."""
    for d in ("info", "updates", "triggers"):
        os.makedirs(os.path.join(root, "var", "lib", "dpkg", d), exist_ok=True)
    for f in ("status", "available"):
        open(os.path.join(root, "var", "lib", "dpkg", f), "a").close()
    # dpkg looks for ldconfig and start-stop-daemon on PATH, which may lack the sbin directories.
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin")
    code, out = run(["dpkg", f"--root={root}", f"--log={os.path.join(work, 'dpkg.log')}", "--force-not-root",
                     "--force-depends", "--force-script-chrootless", "-i", deb], env=env)
    if code == 0:
        return "dpkg --root"
    print(f"dpkg --root refused (exit {code}): {out[-1500:]}\nfalling back to dpkg-deb -x")
    code, out = run(["dpkg-deb", "-x", deb, root])
    expect("dpkg-deb -x", code == 0, out[-2000:])
    return "dpkg-deb -x" if code == 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--deb", help="test this package instead of building one")
    ap.add_argument("--build", help="the project's build directory: packaged with package_deb.sh --from-build "
                    "when configured with -Dpython_package=true (default: build in the checkout)")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build-deb"),
                    help="package_deb.sh's own build directory, for its full route (default: build-deb in the checkout)")
    args = ap.parse_args()
    test_start = time.monotonic()
    for tool in ("dpkg-deb", "dpkg"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} not found")
            return 77
    full = os.environ.get("AOTC_TEST_DEB") == "1"
    from_build = os.path.realpath(args.build or os.path.join(REPO, "build"))
    if args.deb:
        route, build = None, os.path.realpath(args.build_dir)
    elif python_package_build(from_build) and not (full and args.build is None):
        route, build = "--from-build", from_build
    elif full:
        route, build = "--build-dir", os.path.realpath(args.build_dir)
    else:
        print(f"SKIP: {from_build} is not a -Dpython_package=true build directory, and building the package "
              "otherwise is a full build of aotc; set AOTC_TEST_DEB=1 (or pass --deb FILE)")
        return 77

    work = os.path.realpath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if args.deb:
        deb = os.path.realpath(args.deb)
    else:
        start = time.monotonic()
        print(f"package_deb.sh {route} {build}")
        code, out = run(["bash", os.path.join(REPO, "scripts", "package_deb.sh"), route, build,
                         "--out", os.path.join(work, "out")])
        print(f"package_deb.sh took {time.monotonic() - start:.1f} s")
        debs = glob.glob(os.path.join(work, "out", "aotc_*_amd64.deb"))
        expect("scripts/package_deb.sh builds one .deb", code == 0 and len(debs) == 1, out[-4000:])
        if code != 0 or len(debs) != 1:
            return 1
        print("\n".join(out.splitlines()[-40:]))
        deb = debs[0]
    print(f"package: {deb} ({os.path.getsize(deb)} bytes)")

    # (a) The control fields.
    fields = {}
    for name in ("Package", "Version", "Architecture", "Depends", "Description", "Installed-Size"):
        code, out = run(["dpkg-deb", "--field", deb, name])
        fields[name] = out.strip() if code == 0 else ""
    code, info = run(["dpkg-deb", "--info", deb])
    expect("dpkg-deb --info reads it", code == 0, info)
    expect("Package: aotc", fields["Package"] == "aotc", fields)
    expect("Architecture: amd64", fields["Architecture"] == "amd64", fields)
    project_version = project_version_of(build)
    expect(f"Version is meson's {project_version} (+git describe)",
           re.fullmatch(re.escape(project_version) + r"(\+git\.[A-Za-z0-9.+~]+)?", fields["Version"]) is not None,
           fields["Version"])
    depends = [d.strip().split()[0] for d in fields["Depends"].split(",")]
    for need in ("libc6", "libstdc++6", "clang", "lld", "ninja-build"):
        expect(f"Depends on {need}", need in depends, fields["Depends"])
    expect("Depends on no torch package", not any("torch" in d for d in depends), fields["Depends"])
    torch_version = re.search(r"torch==([0-9.]+)", fields["Description"])
    expect("the Description says which torch to pip install", torch_version is not None, fields["Description"])
    expect("Installed-Size is set", fields["Installed-Size"].isdigit(), fields["Installed-Size"])

    # (b) Its files.
    extract = os.path.join(work, "extract")
    code, out = run(["dpkg-deb", "-x", deb, extract])
    expect("dpkg-deb -x", code == 0, out)
    P = os.path.join(extract, PREFIX)
    for rel in ("bin/aotc", "bin/aotc-compiler", "bin/aotc-run", "lib/libaotc_runtime.a",
                "lib/libaotc_torch_backend.so", "include/aotc/aotc.h", "lib/cmake/aotc/aotcConfig.cmake",
                "lib/pkgconfig/aotc.pc"):
        expect(f"/{PREFIX}/{rel} is in the package", os.path.isfile(os.path.join(P, rel)), rel)
    top = sorted(os.listdir(P)) if os.path.isdir(P) else []
    expect(f"/{PREFIX} holds bin, include and lib only", top == ["bin", "include", "lib"], top)
    strays = [os.path.relpath(os.path.join(d, n), extract) for d, dirs, names in os.walk(extract)
              for n in names + dirs if n.endswith((".py", ".pyc")) or n in ("__pycache__", "libaotc_runtime_cuda.a")]
    expect("no Python file and no CUDA runtime in the package", not strays, strays)
    with open(os.path.join(P, "bin", "aotc"), "rb") as f:
        wrapper = f.read()
    expect("bin/aotc is the wrapper script", wrapper.startswith(b"#!/bin/sh"), wrapper[:40])
    expect("bin/aotc-compiler is an x86-64 program", elf_machine(os.path.join(P, "bin", "aotc-compiler")) ==
           {"Advanced Micro Devices X86-64"}, elf_machine(os.path.join(P, "bin", "aotc-compiler")))
    for cmd in ("aotc", "aotc-run"):
        link = os.path.join(extract, "usr", "bin", cmd)
        expect(f"/usr/bin/{cmd} links to /{PREFIX}/bin/{cmd}",
               os.path.islink(link) and os.readlink(link) == f"/{PREFIX}/bin/{cmd}",
               os.readlink(link) if os.path.islink(link) else None)
    recorded = re.search(rb"^recorded='([^']*)'$", wrapper, re.M)
    expect("the wrapper records LibTorch's directory", recorded is not None, wrapper[:800])
    torch_lib = recorded.group(1) if recorded else b"\0"
    code, dyn = run(["readelf", "-d", os.path.join(P, "bin", "aotc-compiler")])
    expect("the wrapper's LibTorch directory is the compiler's RUNPATH",
           f"[{torch_lib.decode()}]" in dyn, dyn[-1500:])
    for rel in ("bin/aotc-compiler", "lib/libaotc_torch_backend.so"):
        got = runpath(os.path.join(P, rel))
        expect(f"{rel}: RUNPATH is LibTorch's torch/lib only", got == [("RUNPATH", torch_lib.decode())], got)
    got = runpath(os.path.join(P, "bin", "aotc-run"))
    expect("bin/aotc-run: no RUNPATH", got == [], got)
    needles = {os.path.realpath(REPO).encode(): "source", build.encode(): "build"}
    hits = grep_tree(extract, list(needles), [torch_lib])
    for needle, what in needles.items():
        expect(f"no packaged file names the {what} directory {needle.decode()}", not hits[needle], hits[needle][:5])
    cross_dir = os.path.join(P, "lib", TRIPLE)
    has_cross = os.path.isfile(os.path.join(cross_dir, "libaotc_runtime.a"))
    print(f"aarch64 runtime in the package: {'yes' if has_cross else 'no'}")
    if has_cross:
        expect(f"lib/{TRIPLE}/libaotc_runtime.a holds AArch64 objects",
               elf_machine(os.path.join(cross_dir, "libaotc_runtime.a")) == {"AArch64"},
               elf_machine(os.path.join(cross_dir, "libaotc_runtime.a")))
        expect(f"lib/{TRIPLE}/aotc-run is an AArch64 program",
               elf_machine(os.path.join(cross_dir, "aotc-run")) == {"AArch64"},
               elf_machine(os.path.join(cross_dir, "aotc-run")))
        expect("the x86-64 runtime is the host's", elf_machine(os.path.join(P, "lib", "libaotc_runtime.a")) ==
               {"Advanced Micro Devices X86-64"}, elf_machine(os.path.join(P, "lib", "libaotc_runtime.a")))

    # (c) Installed into a private root, it compiles and runs a model.
    root = os.path.join(work, "root")
    how = install(deb, root, work)
    print(f"installed with: {how}")
    if how is None:
        return 1
    if how == "dpkg --root":
        code, out = run(["dpkg", f"--root={root}", "-s", "aotc"])
        expect("dpkg --root -s aotc: installed", code == 0 and "Status: install ok installed" in out, out)
    RP = os.path.join(root, PREFIX)
    aotc, aotc_run = os.path.join(RP, "bin", "aotc"), os.path.join(RP, "bin", "aotc-run")
    pt, x_npy, want_npy = (os.path.join(work, n) for n in ("small.pt", "x.npy", "want.npy"))
    script = os.path.join(work, "make_model.py")
    with open(script, "w") as f:
        f.write(MAKE_MODEL)
    code, out = run([sys.executable, script, pt, x_npy, want_npy], env=clean_env())
    expect("make the scripted model", code == 0, out[-2000:])
    if code != 0:
        return 1
    compile_and_run("host", aotc, aotc_run, work, pt, x_npy, want_npy, clean_env())

    # (d) Another machine: the recorded LibTorch directory is missing.
    patchelf = shutil.which("patchelf") or os.path.join(os.path.dirname(sys.executable), "patchelf")
    if os.path.isfile(patchelf):
        other = os.path.join(work, "other", PREFIX)
        shutil.copytree(RP, other, symlinks=True)
        gone = os.path.join(work, "no-such-torch", "lib")
        code, out = run([patchelf, "--set-rpath", gone, os.path.join(other, "bin", "aotc-compiler")])
        expect("patchelf --set-rpath on the copy", code == 0, out)
        with open(os.path.join(other, "bin", "aotc"), "rb") as f:
            text = f.read().replace(b"recorded='" + torch_lib + b"'", b"recorded='" + gone.encode() + b"'")
        with open(os.path.join(other, "bin", "aotc"), "wb") as f:
            f.write(text)
        o_aotc, o_run = os.path.join(other, "bin", "aotc"), os.path.join(other, "bin", "aotc-run")
        code, out = run([os.path.join(other, "bin", "aotc-compiler"), "--version"], env=clean_env())
        expect("the copy's compiler alone does not find LibTorch", code != 0 and "libtorch" in out, (code, out))
        no_torch = os.path.join(work, "python-without-torch")
        with open(no_torch, "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/env -i /usr/bin/python3 -I -S \"$@\"\n")
        os.chmod(no_torch, 0o755)
        code, out = run([o_aotc, pt, "-o", os.path.join(work, "fail.so"), "--input", "x:2x3x8x8"],
                        env=clean_env(AOTC_PYTHON=no_torch))
        want = f"pip install torch=={torch_version.group(1) if torch_version else ''}"
        expect("without torch: the wrapper fails and says how to install it", code == 127 and want in out, (code, out))
        print(textwrap.indent(out.strip(), "    "))
        # A torch of another version: refused (LibTorch has no stable C++ ABI).
        fake_lib = os.path.join(work, "fake", "torch", "lib")
        os.makedirs(fake_lib)
        open(os.path.join(fake_lib, "libtorch_cpu.so"), "w").close()
        with open(os.path.join(work, "fake", "torch", "version.py"), "w") as f:
            f.write("__version__ = '2.10.0+cpu'\n")
        fake_python = os.path.join(work, "python-with-other-torch")
        with open(fake_python, "w") as f:
            f.write(f"#!/bin/sh\necho {fake_lib}\n")
        os.chmod(fake_python, 0o755)
        code, out = run([o_aotc, pt, "-o", os.path.join(work, "fail.so"), "--input", "x:2x3x8x8"],
                        env=clean_env(AOTC_PYTHON=fake_python))
        expect("torch 2.10.0: the wrapper refuses it and says which it found",
               code == 127 and "has torch 2.10.0" in out and want in out, (code, out))
        compile_and_run("python3's torch (AOTC_PYTHON)", o_aotc, o_run, work, pt, x_npy, want_npy,
                        clean_env(AOTC_PYTHON=sys.executable))
        compile_and_run("AOTC_TORCH_LIB", o_aotc, o_run, work, pt, x_npy, want_npy,
                        clean_env(AOTC_TORCH_LIB=torch_lib.decode(), AOTC_PYTHON=no_torch))
    else:
        print("skip (d): no patchelf")

    # (e) aarch64 under qemu, with the packaged aarch64 runtime and aotc-run.
    sysroot = "/usr/aarch64-linux-gnu"
    qemu = shutil.which("qemu-aarch64")
    if has_cross and qemu and os.path.isdir(sysroot):
        compile_and_run("aarch64", aotc, os.path.join(RP, "lib", TRIPLE, "aotc-run"), work, pt, x_npy, want_npy,
                        clean_env(), target=TRIPLE, runner=(qemu, "-L", sysroot))
    else:
        print(f"skip (e): aarch64 runtime in the package: {has_cross}, qemu-aarch64: {qemu}, {sysroot}: "
              f"{os.path.isdir(sysroot)}")

    print(f"test_deb took {time.monotonic() - test_start:.1f} s")
    print(f"{len(failures)} failure(s)" if failures else "the Debian package installs and works")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
