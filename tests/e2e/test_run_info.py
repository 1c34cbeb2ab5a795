"""aotc-run --info prints one line per tensor however odd the model's output names are
(dict keys with spaces, tabs, newlines, terminal escapes, non-ASCII): such names are quoted
and escaped in the human form and exact in --json; 0-d outputs say they are scalars. It
shows the version of the aotc that built the library (aotc --version) and of its runtime."""
import json
import os
import subprocess
import sys
from typing import Dict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, compile_module, expect, finish  # noqa: E402

NAMES = ["total sum", "naïve\tkey\n\x1b[31m", "quote's\\", "plain_name"]


class OddNames(torch.nn.Module):
    def forward(self, x) -> Dict[str, torch.Tensor]:
        return {"total sum": x.sum(), "naïve\tkey\n\x1b[31m": x * 2.0, "quote's\\": x + 1.0, "plain_name": x - 1.0}


def main():
    args = arg_parser(aotc_run=True).parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    so = compile_module(args.aotc, OddNames(), os.path.join(args.workdir, "odd_names.so"), ["x:2x3"])

    text = subprocess.run([args.aotc_run, so, "--info"], capture_output=True, text=True, check=True).stdout
    print(text)
    version = subprocess.run([args.aotc, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    expect("aotc --version", version.startswith("aotc ") and len(version.split()) in (2, 4), version)
    aotc_version = version[len("aotc "):]
    semantic = aotc_version.split(" ")[0]
    expect("aotc version shown", f"\naotc version: {aotc_version}\n" in text, text)
    expect("runtime version shown", f"\nruntime version: {semantic}\n" in text, text)
    outputs = text.split("outputs:\n", 1)[1].splitlines()
    expect("one line per output", len(outputs) == len(NAMES), outputs)
    expect("no control characters", not any(ord(c) < 32 for line in outputs for c in line), outputs)
    expect("spaces quoted", outputs[0].startswith("  0 'total sum': float32 [] (a scalar, 4 bytes)"), outputs[0])
    expect("controls escaped", outputs[1].startswith("  1 'naïve\\tkey\\n\\x1b[31m': float32 [2, 3]"), outputs[1])
    expect("quotes escaped", outputs[2].startswith("  2 'quote\\'s\\\\': "), outputs[2])
    expect("plain names as they are", outputs[3].startswith("  3 plain_name: "), outputs[3])

    info = json.loads(subprocess.run([args.aotc_run, so, "--info", "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    expect("--json: versions", (info.get("aotc_version"), info.get("runtime_version")) == (aotc_version, semantic),
           info)
    expect("--json keeps the names exactly", [o["name"] for o in info["outputs"]] == NAMES, info["outputs"])
    return finish("aotc-run --info prints odd names safely")


if __name__ == "__main__":
    sys.exit(main())
