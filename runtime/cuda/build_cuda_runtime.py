"""Builds libaotc_runtime_cuda.a, the CUDA half of the aotc runtime, with nvcc.

meson calls this (runtime/meson.build) rather than using its own CUDA support so that the
flags are exactly those of the generated models' build.ninja (templates/build_cuda.ninja.in):
position-independent, hidden symbols, machine code for each architecture in --archs plus
PTX for the oldest, which newer GPUs compile when the model loads.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys


SM90A_SOURCES = {"gemm_3xtf32.cu"}


def up_to_date(obj: str, depfile: str, command: list[str]) -> bool:
    """Whether obj was built by this command and is newer than every file its depfile
    (nvcc -MD) names: only the sources whose code changed are compiled again (meson reruns
    the whole target when any one input or header changes)."""
    try:
        with open(obj + ".cmd") as f:
            if f.read() != " ".join(command):
                return False
        with open(depfile) as f:
            deps = f.read().replace("\\\n", " ").split(":", 1)[1].split()
        built = os.path.getmtime(obj)
        return all(os.path.getmtime(d) <= built for d in deps)
    except (OSError, IndexError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nvcc", required=True)
    parser.add_argument("--include", required=True)
    parser.add_argument("--archs", required=True, help="comma-separated compute capabilities, e.g. 80,90")
    parser.add_argument("--output", required=True)
    # nvcc processes at once: 2 unless AOTC_NVCC_JOBS says (scripts/gpu_suite.sh: every core)
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("AOTC_NVCC_JOBS", "2")))
    parser.add_argument("sources", nargs="+")
    args = parser.parse_args()

    archs = [a.strip() for a in args.archs.split(",") if a.strip()]

    def gencode_of(source: str) -> list[str]:
        # Sources with Hopper's warpgroup MMA (wgmma, which only sm_90a has) get sm_90a's
        # machine code in place of sm_90's, and AOTC_WGMMA_BUILT says so to their host code:
        # it runs on compute capability 9.0 alone, and the runtime offers those kernels only
        # there. Their other architectures compile the kernels to a trap.
        sm90a = "90" in archs and os.path.basename(source) in SM90A_SOURCES
        own = [a + "a" if a == "90" and sm90a else a for a in archs]
        codes = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in own]
        codes.append(f"-gencode=arch=compute_{archs[0]},code=compute_{archs[0]}")
        return codes + (["-DAOTC_WGMMA_BUILT=1"] if sm90a else [])

    out_dir = args.output + ".objects"
    os.makedirs(out_dir, exist_ok=True)

    def compile_one(source: str) -> str:
        obj = os.path.join(out_dir, os.path.basename(source) + ".o")
        depfile = obj + ".d"
        command = [args.nvcc, "-std=c++20", "-O3", *gencode_of(source),
                   "-Xcompiler=-fPIC,-fvisibility=hidden,-ffunction-sections,-fdata-sections",
                   "-Werror=all-warnings", "-I", args.include, "-c", source, "-o", obj]
        if up_to_date(obj, depfile, command):
            return obj
        command += ["-MD", "-MF", depfile]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")
        with open(obj + ".cmd", "w") as f:
            f.write(" ".join(command[:-3]))
        return obj

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        objects = list(pool.map(compile_one, args.sources))
    if os.path.exists(args.output):
        os.remove(args.output)
    subprocess.run(["ar", "rcs", args.output, *objects], check=True)


if __name__ == "__main__":
    main()
