"""docs/OPS.md must be exactly what the op registry says (aotc --list-ops --markdown), so
the supported-op list cannot drift from the code. Fix a failure with scripts/gen_ops_doc.sh.
Also: every IR op of the CPU target that has no CUDA generator (OPS.md's table of IR ops by
target) is listed under "IR ops without a CUDA generator" in docs/CUDA.md, and nothing
listed there has one."""
import difflib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser  # noqa: E402


def main():
    ap = arg_parser(workdir=False)
    ap.add_argument("--doc", required=True, help="docs/OPS.md")
    args = ap.parse_args()
    generated = subprocess.run([args.aotc, "--list-ops", "--markdown"], capture_output=True, text=True, check=True).stdout
    ops = subprocess.run([args.aotc, "--list-ops"], capture_output=True, text=True, check=True).stdout.split()
    with open(args.doc) as f:
        written = f.read()
    missing = [op for op in ops if f"`{op}`" not in generated]
    if missing:
        print(f"FAIL: --list-ops --markdown leaves out {missing}")
        return 1
    if written != generated:
        diff = difflib.unified_diff(written.splitlines(), generated.splitlines(), "docs/OPS.md",
                                    "aotc --list-ops --markdown", lineterm="")
        print("\n".join(list(diff)[:80]))
        print("FAIL: docs/OPS.md is out of date with the op registry; run scripts/gen_ops_doc.sh")
        return 1
    print(f"docs/OPS.md lists all {len(ops)} lowerings of the registry")
    # The CUDA exceptions: OPS.md's IR table against docs/CUDA.md's list.
    missing = {m.group(1) for m in re.finditer(r"^\| `(\w+)` \| yes \|  \|$", generated, re.M)}
    cuda_doc = open(os.path.join(os.path.dirname(args.doc), "CUDA.md")).read()
    section = cuda_doc.split("## IR ops without a CUDA generator", 1)[-1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(\w+)`", section)) - {"ops_doc"}
    problems = [f"IR op {k} has no CUDA generator and is not in docs/CUDA.md's list" for k in sorted(missing - listed)]
    problems += [f"docs/CUDA.md lists {k} as having no CUDA generator, but it has one (or is no IR op)"
                 for k in sorted(listed - missing)]
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print(f"the {len(missing)} IR ops without a CUDA generator are the ones docs/CUDA.md lists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
