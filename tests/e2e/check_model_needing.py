"""Runs check_model.py for a model that needs ops another part of aotc provides: skips
(meson's status 77) while `aotc --list-ops` lacks any of the --needs ops, and is the full
check as soon as they are lowered.

    check_model_needing.py --needs aten::slice --needs aten::select -- CHECK_MODEL_ARGS..."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SKIP  # noqa: E402


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    own, rest = argv[:split], argv[split + 1:]
    needs = [own[i + 1] for i, a in enumerate(own) if a == "--needs"]
    aotc = rest[rest.index("--aotc") + 1]
    lowered = set(subprocess.run([aotc, "--list-ops"], capture_output=True, text=True, check=True).stdout.split())
    missing = [op for op in needs if op not in lowered]
    if missing:
        print(f"SKIP: aotc does not lower {', '.join(missing)} yet")
        return SKIP
    check_model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_model.py")
    return subprocess.run([sys.executable, check_model] + rest).returncode


if __name__ == "__main__":
    sys.exit(main())
