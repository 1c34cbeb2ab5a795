"""One model run from many threads at once, each with its own context: every output must
be bit-identical to a serial run (8 threads x 200 runs, then 4 threads x 50 runs with 2
worker threads per context)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, compile_module  # noqa: E402
from models import MODELS  # noqa: E402


def main():
    ap = arg_parser()
    ap.add_argument("--runner", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    module, inputs = MODELS["small_cnn"]()
    so = compile_module(args.aotc, module, os.path.join(args.workdir, "small_cnn.so"), inputs)
    failed = False
    for threads, runs, per_context in [(8, 200, 1), (4, 50, 2)]:
        r = subprocess.run([args.runner, so, str(threads), str(runs), str(per_context)], capture_output=True, text=True)
        print(r.stdout.strip() or r.stderr.strip())
        failed |= r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
