"""An installed aotc is usable from CMake and pkg-config: samples/cmake_app, configured with
find_package(aotc) against an install prefix, compiles its model at build time with
aotc_add_model, links it (no dlopen) and gives torch's outputs; rewriting the .pt
recompiles the model; aotc_add_model's argument mistakes fail at configure time with a
clear message; a model in a subdirectory, OUTPUT_NAME, WEIGHTS file and aotc::run work
with the other generator; pkg-config gives the include directory.

  python tests/install/test_cmake_app.py --workdir DIR [--prefix PREFIX]

PREFIX holds <libdir>/cmake/aotc and <libdir>/pkgconfig, libdir lib (or lib/<multiarch>, lib64) (default: the Python package directory of
the installed aotc, found by a Python that ignores PYTHONPATH). Exits 77 (skipped) when
there is no cmake."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from common import rel_l2  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "samples", "cmake_app")
failures = []


def expect(name, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail!r}"))
    if not ok:
        failures.append(name)


def run(cmd, **kw):
    """Runs cmd, returns (returncode, stdout + stderr)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def installed_prefix(workdir):
    """The directory of the aotc package that `import aotc` finds without PYTHONPATH (the
    installed copy, not the source tree)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-I", "-c", "import aotc, os; print(os.path.dirname(aotc.__file__))"],
                         env=env, cwd=workdir, capture_output=True, text=True, check=True).stdout
    return out.strip()


def parse_outputs(text):
    """{name: values} from the sample's lines "NAME DTYPE [DIMS]: v0 v1 ..."."""
    outs = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+) float32 \[[0-9, ]*\]:((?: \S+)*)$", line)
        if m:
            outs[m.group(1)] = np.array([float(v) for v in m.group(2).split()], dtype=np.float64)
    return outs


def make_model(pt, seed):
    code, out = run([sys.executable, os.path.join(SAMPLE, "make_model.py"), "--out", pt, "--seed", str(seed)])
    if code != 0:
        raise RuntimeError(f"make_model.py failed:\n{out}")
    stem = pt[:-3]
    return stem + ".input.f32", np.fromfile(stem + ".expected.f32", dtype="<f4").astype(np.float64)


def check_app(name, app, input_f32, expected, cwd):
    code, out = run([app, input_f32], cwd=cwd)
    outs = parse_outputs(out)
    ok = code == 0 and list(outs) == ["output0"] and outs["output0"].shape == expected.shape
    expect(f"{name}: the app runs and prints one 2x3 output", ok, out)
    if ok:
        err = rel_l2(outs["output0"], expected)
        expect(f"{name}: outputs match torch (relative L2 {err:.2e})", err <= 1e-4, (out, expected.tolist()))
        return outs["output0"]
    return None


def needed(binary):
    """The DT_NEEDED entries of binary (None without readelf)."""
    if not shutil.which("readelf"):
        return None
    code, out = run(["readelf", "-d", binary])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", out) if code == 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--prefix", help="install prefix holding lib/cmake/aotc (default: the installed Python package)")
    args = ap.parse_args()
    cmake = "/usr/bin/cmake" if os.path.exists("/usr/bin/cmake") else shutil.which("cmake")
    if not cmake:
        print("skipped: no cmake (apt-get install cmake)")
        return 77
    workdir = os.path.abspath(args.workdir)
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    prefix = os.path.abspath(args.prefix) if args.prefix else installed_prefix(workdir)
    # <libdir>/cmake/aotc: lib/ in the Python package, lib/<multiarch>/ or lib64/ in some prefixes.
    found = [d for d in [os.path.join(prefix, "lib")] + sorted(glob.glob(os.path.join(prefix, "lib*", "*")))
             + [os.path.join(prefix, "lib64")] if os.path.isfile(os.path.join(d, "cmake", "aotc", "aotcConfig.cmake"))]
    libdir = found[0] if found else os.path.join(prefix, "lib")
    cmake_dir = os.path.join(libdir, "cmake", "aotc")
    print(f"prefix {prefix}, {cmake} ({run([cmake, '--version'])[1].splitlines()[0]})")
    expect("the prefix holds <libdir>/cmake/aotc/aotcConfig.cmake", os.path.isfile(os.path.join(cmake_dir, "aotcConfig.cmake")),
           cmake_dir)
    if failures:
        print("1 failure: no aotc CMake package at the prefix (is aotc installed with cmake/meson.build?)")
        return 1
    generator = "Ninja" if shutil.which("ninja") else "Unix Makefiles"
    other_generator = "Unix Makefiles" if generator == "Ninja" and shutil.which("make") else generator

    # 1. The sample: configure, build (aotc runs at build time), run.
    pt = os.path.join(workdir, "tiny_mlp.pt")
    input0, expected0 = make_model(pt, seed=0)
    build = os.path.join(workdir, "build")
    code, out = run([cmake, "-S", SAMPLE, "-B", build, "-G", generator, f"-Daotc_DIR={cmake_dir}", f"-DMODEL_PT={pt}"])
    expect(f"configure samples/cmake_app ({generator})", code == 0, out)
    if code != 0:
        return 1
    code, out = run([cmake, "--build", build])
    so = os.path.join(build, "tiny_model.so")
    expect("build: aotc compiles the model, the app links it", code == 0 and os.path.isfile(so), out)
    if code != 0:
        return 1
    app = os.path.join(build, "cmake_app")
    # From another directory: the app finds the model by its RPATH, not the cwd.
    first = check_app("seed 0", app, input0, expected0, cwd=workdir)
    deps = needed(app)
    if deps is not None:
        expect("the app records the model by name (libtiny_model.so), not a path", "libtiny_model.so" in deps and
               not any("/" in d for d in deps), deps)
        expect("the model needs no library but libc/libm (and the loader)",
               all(re.match(r"^(libc|libm|libdl|libpthread|librt|ld-linux[-a-z0-9_]*)\.so", d) for d in needed(so)),
               needed(so))

    # 2. Nothing changed: the model is not recompiled.
    mtime = os.stat(so).st_mtime_ns
    code, out = run([cmake, "--build", build])
    expect("rebuild with nothing changed leaves the model alone", code == 0 and os.stat(so).st_mtime_ns == mtime, out)

    # 3. Other weights in the same .pt: the build recompiles the model.
    time.sleep(1.1)  # a newer mtime even on file systems with 1 s resolution
    input1, expected1 = make_model(pt, seed=1)
    code, out = run([cmake, "--build", build])
    expect("rewritten .pt: the build recompiles the model", code == 0 and os.stat(so).st_mtime_ns != mtime
           and "aotc: compiling" in out, out)
    second = check_app("seed 1 (new weights)", app, input1, expected1, cwd=workdir)
    if first is not None and second is not None:
        code, out = run([app, input0], cwd=workdir)
        again = parse_outputs(out).get("output0")
        expect("the new weights change the outputs for the same input",
               again is not None and rel_l2(again, expected0) > 1e-2, (out, expected0.tolist()))

    # 4. Argument mistakes fail at configure time, with a message that says what is wrong.
    bad_dir = os.path.join(workdir, "bad_args")
    os.makedirs(bad_dir)
    with open(os.path.join(bad_dir, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.15)\nproject(bad LANGUAGES NONE)\nfind_package(aotc REQUIRED)\n"
                "if(CASE STREQUAL \"no_inputs\")\n  aotc_add_model(bad MODEL \"${MODEL_PT}\")\n"
                "elseif(CASE STREQUAL \"no_model\")\n  aotc_add_model(bad INPUTS x:2x7)\n"
                "elseif(CASE STREQUAL \"unknown_keyword\")\n  aotc_add_model(bad MODEL \"${MODEL_PT}\" INPUTS x:2x7 "
                "PRECISON fp16)\n"
                "elseif(CASE STREQUAL \"unknown_argument\")\n  aotc_add_model(bad WEIGTHS file MODEL \"${MODEL_PT}\" "
                "INPUTS x:2x7)\n"
                "elseif(CASE STREQUAL \"no_value\")\n  aotc_add_model(bad MODEL \"${MODEL_PT}\" INPUTS x:2x7 "
                "WEIGHTS)\n"
                "elseif(CASE STREQUAL \"bad_input\")\n  aotc_add_model(bad MODEL \"${MODEL_PT}\" INPUTS x:2by7)\n"
                "elseif(CASE STREQUAL \"bad_target\")\n  aotc_add_model(bad MODEL \"${MODEL_PT}\" INPUTS x:2x7 "
                "TARGET gpu)\nendif()\n")
    cases = {"no_inputs": "INPUTS is required", "no_model": "MODEL <file.pt> is required",
             "unknown_keyword": "unknown keyword 'PRECISON'", "unknown_argument": "unknown argument(s) 'WEIGTHS;file'",
             "no_value": "no value given for WEIGHTS", "bad_input": "is not NAME:DIMS[:DTYPE]",
             "bad_target": "TARGET 'gpu' is not one of cpu|cuda"}
    for case, message in cases.items():
        code, out = run([cmake, "-S", bad_dir, "-B", os.path.join(workdir, "bad_" + case), "-G", generator,
                         f"-Daotc_DIR={cmake_dir}", f"-DMODEL_PT={pt}", f"-DCASE={case}"])
        flat = " ".join(out.split())
        expect(f"configure fails: {case} ({message})", code != 0 and message in flat and "aotc_add_model(bad)" in flat,
               out)

    # 5. A model in a subdirectory linked from the parent, OUTPUT_NAME, WEIGHTS file and
    #    aotc::run, with the other generator.
    sub_src = os.path.join(workdir, "sub_src")
    os.makedirs(os.path.join(sub_src, "models"))
    with open(os.path.join(sub_src, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.15)\nproject(sub LANGUAGES CXX)\nfind_package(aotc REQUIRED)\n"
                "add_subdirectory(models)\n"
                f"add_executable(app2 \"{os.path.join(SAMPLE, 'main.cpp')}\")\n"
                "target_link_libraries(app2 PRIVATE sub_model)\n"
                "add_custom_target(ext_info ALL COMMAND aotc::run $<TARGET_PROPERTY:ext_model,AOTC_MODEL_LIBRARY> "
                "--info DEPENDS ext_model_build VERBATIM)\n"
                "file(GENERATE OUTPUT paths.txt CONTENT \"$<TARGET_PROPERTY:ext_model,AOTC_MODEL_WEIGHTS>\\n\")\n")
    with open(os.path.join(sub_src, "models", "CMakeLists.txt"), "w") as f:
        f.write("aotc_add_model(sub_model MODEL \"${MODEL_PT}\" INPUTS x:2x7 OUTPUT_NAME mlp)\n"
                "aotc_add_model(ext_model MODEL \"${MODEL_PT}\" INPUTS \"x:2x7:float32\" WEIGHTS file "
                "OUTPUT_NAME libext)\n")
    sub_build = os.path.join(workdir, "sub_build")
    code, out = run([cmake, "-S", sub_src, "-B", sub_build, "-G", other_generator, f"-Daotc_DIR={cmake_dir}",
                     f"-DMODEL_PT={pt}"])
    expect(f"configure a project with its models in a subdirectory ({other_generator})", code == 0, out)
    if code == 0:
        code, out = run([cmake, "--build", sub_build])
        models = os.path.join(sub_build, "models")
        expect("build: OUTPUT_NAME mlp gives models/mlp.so, WEIGHTS file gives libext.so and libext.weights",
               code == 0 and all(os.path.isfile(os.path.join(models, f)) for f in ["mlp.so", "libext.so", "libext.weights"]),
               out)
        expect("aotc::run --info runs on the model built with WEIGHTS file",
               code == 0 and "weights: file" in out and "libext.weights" in out and "x: float32 [2, 7]" in out, out)
        with open(os.path.join(sub_build, "paths.txt")) as f:
            expect("AOTC_MODEL_WEIGHTS names the weights file", f.read().strip() == os.path.join(models, "libext.weights"),
                   "paths.txt")
        if code == 0:
            check_app("subdirectory model", os.path.join(sub_build, "app2"), input1, expected1, cwd="/")

    # 6. pkg-config finds the include directory (and the programs) from the prefix.
    if shutil.which("pkg-config"):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
        code, out = run(["pkg-config", "--cflags", "aotc"], env=env)
        flags = out.split()
        include = os.path.join(prefix, "include")
        expect("pkg-config --cflags aotc gives -I<prefix>/include",
               code == 0 and len(flags) == 1 and flags[0].startswith("-I")
               and os.path.realpath(flags[0][2:]) == os.path.realpath(include)
               and os.path.isfile(os.path.join(flags[0][2:], "aotc", "aotc.h")), out)
        code, out = run(["pkg-config", "--variable=aotc", "aotc"], env=env)
        expect("pkg-config --variable=aotc aotc names the compiler",
               code == 0 and os.path.realpath(out.strip()) == os.path.realpath(os.path.join(prefix, "bin", "aotc")), out)
        code, out = run(["pkg-config", "--modversion", "aotc"], env=env)
        expect("pkg-config --modversion aotc", code == 0 and re.match(r"^\d+\.\d+\.\d+", out.strip()), out)
    else:
        print("skip pkg-config checks: no pkg-config")

    print(f"{len(failures)} failure(s)" if failures else "an installed aotc builds and links models from CMake")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
