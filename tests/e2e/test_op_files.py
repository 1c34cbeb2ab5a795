"""The op lists and the checklists hold: every line of compiler/ops/op_files.def and
compiler/ops/cuda/cuda_op_files.def names a file that defines its register function, every
op file is listed once (the others in compiler/ops/ are the helpers compiler/meson.build
lists by name), docs/HACKING.md's checklist names the list, every path HACKING.md and
INTERNALS.md name exists, and compiler/ops/TEMPLATE compiles (with --cxx) so that copying
it starts from code that builds.
Usage: test_op_files.py --root SOURCE_ROOT [--cxx C++ compiler]"""
import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys
import tempfile


def listed(path, macro):
    names, problems = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            m = re.fullmatch(re.escape(macro) + r"\((\w+)\)", line)
            if m:
                names.append(m.group(1))
            elif line and not line.startswith("//"):
                problems.append(f"{path}:{n}: not an {macro} line or a comment: {line}")
    return names, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--cxx", default="")
    args = ap.parse_args()
    args.root = os.path.abspath(args.root)
    ops = os.path.join(args.root, "compiler", "ops")
    problems = []
    meson = open(os.path.join(args.root, "compiler", "meson.build")).read()
    for def_file, macro, directory, suffix, register in [
            ("op_files.def", "AOTC_OP_FILE", ops, ".cpp", "void register_{}(Registry& r)"),
            ("cuda/cuda_op_files.def", "AOTC_CUDA_OP_FILE", os.path.join(ops, "cuda"), "_cuda.cpp",
             "void register_{}_cuda(CudaRegistry& r)")]:
        names, bad = listed(os.path.join(ops, def_file), macro)
        problems += bad
        for name in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"{def_file}: {name} is listed more than once")
        for name in names:
            path = os.path.join(directory, name + suffix)
            if not os.path.exists(path):
                problems.append(f"{def_file}: {macro}({name}) names {path}, which does not exist")
            elif register.format(name) + " {" not in open(path).read():
                problems.append(f"{path} does not define {register.format(name)}")
        for path in sorted(glob.glob(os.path.join(directory, "*" + suffix))):
            base = os.path.basename(path)[:-len(suffix)]
            if base in names:
                continue
            rel = os.path.relpath(path, os.path.join(args.root, "compiler"))
            if f"'{rel}'" not in meson:
                problems.append(f"{rel} is neither in {def_file} nor a helper compiler/meson.build lists")
        print(f"{def_file}: {len(names)} files")
    hacking = open(os.path.join(args.root, "docs", "HACKING.md")).read()
    if "op_files.def" not in hacking or "compiler/ops/TEMPLATE" not in hacking:
        problems.append("docs/HACKING.md's 'Add an op' does not name op_files.def and compiler/ops/TEMPLATE")
    # Every path the developer docs name (in backticks, with a '/') is a tracked file or
    # folder, or the end of one's path; placeholders (<op>, NAME) are left alone.
    tracked = subprocess.run(["git", "ls-files"], cwd=args.root, capture_output=True, text=True).stdout.split()
    if tracked:
        folders = {os.path.dirname(t) for t in tracked}
        folders |= {f[:i] for f in folders for i in range(len(f)) if f[i] == "/"}
        for doc in ["HACKING.md", "INTERNALS.md"]:
            text = open(os.path.join(args.root, "docs", doc)).read()
            for token in set(re.findall(r"`([^`\s]+/[^`\s]*)`", text)):
                path = token.rstrip(":,.").removeprefix("./")
                # Placeholders (<op>, a target T) and what a build makes (build/, gen/) are no files.
                if "<" in path or "://" in path or path.startswith(("-", "$", "../", "build", "gen/")) or \
                        path[0].isupper() or re.search(r"(^|[/-])T([./]|$)", path):
                    continue
                if "*" in path:
                    found = any(fnmatch.fnmatch(t, path) or fnmatch.fnmatch(t, "*/" + path) for t in tracked)
                else:
                    bare = path.rstrip("/")
                    found = bare in folders or any(t == bare or t.endswith("/" + bare) for t in tracked) or \
                        any(f.endswith("/" + bare) for f in folders)
                if not found:
                    problems.append(f"docs/{doc} names `{token}`, which is no file or folder of the tree")
        print("the paths of docs/HACKING.md and docs/INTERNALS.md exist")
    if args.cxx:
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "example.cpp")
            with open(os.path.join(ops, "TEMPLATE")) as f:
                text = f.read()
            with open(source, "w") as f:
                f.write(text.replace('#include "op_helpers.h"', f'#include "{os.path.join(ops, "op_helpers.h")}"'))
            result = subprocess.run([args.cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                                     "-I", os.path.join(args.root, "runtime", "include"), source],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                problems.append("compiler/ops/TEMPLATE does not compile:\n" + result.stderr[-3000:])
            else:
                print("compiler/ops/TEMPLATE compiles")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problem(s)" if problems else "the op lists hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
