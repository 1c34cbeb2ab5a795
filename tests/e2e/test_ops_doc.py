"""docs/OPS.md must be exactly what the op registry says (aotc --list-ops --markdown), so
the supported-op list cannot drift from the code. Fix a failure with scripts/gen_ops_doc.sh."""
import difflib
import os
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
