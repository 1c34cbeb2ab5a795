"""No code injection through names.

aotc writes C++ (and a build.ninja run through a shell) from strings that come from the model
file and the command line: output names are the keys of a returned dict, source file names
and lines go into comments and messages, module names can show up in messages, and the
-o/--emit-source/TMPDIR paths end up in commands. This test gives all of them hostile values:

  - a scripted model whose forward returns a dict with keys containing double quotes, '*/',
    '/*', backslashes (one trailing), a newline, a carriage return, '??=' trigraph-like
    sequences, '#include', '"); system("touch PWNED"); //', non-ASCII UTF-8 and 300
    characters;
  - submodules with odd names (ModuleDict keys with spaces, '*/', '/*', '#include', '$(...)',
    and a non-ASCII attribute name) -- those that TorchScript itself can save and load;
  - the model is built and saved by a Python file whose path contains a space, both quotes, a
    backslash, a newline and '*/', and whose source lines carry hostile comments, so the
    source locations are hostile too;
  - -o, --emit-source and TMPDIR paths with spaces, quotes, '$', backticks and '$(...)'.

Checks: the model compiles (so the generated model.cpp compiles); in model.cpp no model text
escapes its string literal or comment (a small C++ lexer strips literals and comments and
the rest must not contain any of it; no '//' comment ends in a backslash; the only
preprocessor lines are the template's); the output-name literals decode to the dict keys
byte for byte; aotc-run's outputs match torch (relative L2 <= 1e-4); 'aotc-run --info
--json' gives the names byte-identical to the keys; an error on a hostile source line is
reported cleanly; and no file named PWNED appears anywhere under the work directory."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOLERANCE, arg_parser, expect, finish, rel_l2  # noqa: E402

KEYS = [
    'plain',
    'double"quote',
    'ends*/comment',
    '/*opens comment',
    'back\\slash',
    'trailing backslash\\',
    'new\nline',
    'carriage\rreturn',
    '??=trigraph??/??(',
    '#include <stdlib.h>',
    '"); system("touch PWNED"); //',
    "'); system('touch PWNED'); /*",
    '$(touch PWNED) `touch PWNED`',
    'tab\there',
    'héllo→世界',
    ''.join(chr(ord('a') + i % 26) for i in range(300)),
]

# ModuleDict keys (submodule names) to try; TorchScript cannot save some names (its code
# printer does not escape quotes or backslashes in them, and non-ASCII names in code), so
# the builder keeps those that torch.jit.load reads back.
MODULE_NAMES = ['a b', 'ends*/', '/*opens', '??=t', '#include <y>', '$(touch PWNED)', 'q"uote', 'back\\slash',
                'héllo']

# The Python file that builds and saves the model. It is written to a hostile path and run
# from there, so the TorchScript source ranges carry that path and these lines.
BUILDER = textwrap.dedent(r'''
    import json, sys
    from typing import Dict, List
    import numpy as np
    import torch
    import torch.nn as nn

    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    KEYS = spec["keys"]


    def roundtrips(names):
        """The ModuleDict names TorchScript can save and load back."""
        class One(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.md = nn.ModuleDict({name: nn.Identity()})

            def forward(self, x):
                for m in self.md.values():  # */ "); system("touch PWNED"); // \
                    x = m(x)
                return x
        good = []
        for name in names:
            try:
                m = torch.jit.script(One(name))
                torch.jit.save(m, spec["scratch"])
                torch.jit.load(spec["scratch"])
                good.append(name)
            except Exception:
                pass
        return good


    class Hostile(nn.Module):
        keys: List[str]

        def __init__(self, module_names):
            super().__init__()
            self.keys = KEYS
            self.lin = nn.Linear(4, 6)
            self.md = nn.ModuleDict({n: nn.Linear(6, 6) for n in module_names})
            setattr(self, "unused_é世界", nn.Linear(4, 4))  # a non-ASCII attribute name

        def forward(self, x):
            y = torch.relu(self.lin(x))  # */ "); system("touch PWNED"); /* ??/ #include <x> \
            for m in self.md.values():  # '); system('touch PWNED'); // trailing backslash \
                y = y + torch.tanh(m(y))  # /* not C */ "\
            k = self.keys
            return {KEY_ENTRIES}


    class Unsupported(nn.Module):
        def forward(self, x):
            return torch.inverse(x)  # */ "); system("touch PWNED"); /* ??/ \


    torch.manual_seed(0)
    names = roundtrips(spec["module_names"])
    model = torch.jit.script(Hostile(names).eval())
    torch.jit.save(model, spec["model"])
    loaded = torch.jit.load(spec["model"])
    x = torch.randn(3, 4)
    with torch.no_grad():
        out = loaded(x)
    assert list(out.keys()) == KEYS, "torch did not keep the keys"
    np.save(spec["input"], x.numpy())
    for i, v in enumerate(out.values()):
        np.save(spec["expected"] % i, v.numpy())
    torch.jit.save(torch.jit.script(Unsupported()), spec["unsupported"])
    json.dump({"module_names": names}, open(spec["report"], "w"), ensure_ascii=True)
''')

def c_unescape(body):
    """The bytes of a C++ narrow string literal's body (the escapes aotc writes, and the
    usual ones)."""
    out = bytearray()
    raw = body.encode("utf-8")
    i = 0
    simple = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("\\"): 92, ord('"'): 34, ord("'"): 39, ord("?"): 63,
              ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("v"): 11}
    while i < len(raw):
        c = raw[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        n = raw[i + 1]
        if 48 <= n <= 55:
            j = i + 1
            while j < len(raw) and j < i + 4 and 48 <= raw[j] <= 55:
                j += 1
            out.append(int(raw[i + 1:j], 8))
            i = j
        elif n == ord("x"):
            j = i + 2
            while j < len(raw) and chr(raw[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(raw[i + 2:j], 16) & 0xFF)
            i = j
        elif n in simple:
            out.append(simple[n])
            i += 2
        else:
            raise ValueError(f"unknown escape \\{chr(n)}")
    return bytes(out)


def lex_cpp(text):
    """Splits C++ source into (code, string literal bodies, comments, problems): a small
    lexer that is enough to tell whether text meant for a literal or comment got out."""
    code, literals, comments, problems = [], [], [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            comment = text[i:end]
            if comment.endswith("\\"):
                problems.append(f"a // comment ends in a backslash (continues onto the next line): {comment[:120]!r}")
            comments.append(comment)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                problems.append("an unterminated /* comment")
                end = n
            comments.append(text[i:end + 2])
            i = end + 2
        elif c == '"' or c == "'":
            if c == '"' and i > 0 and text[i - 1] == "R":
                problems.append("a raw string literal")
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\n":
                    problems.append(f"a newline inside a literal: {text[i:j][:120]!r}")
                    break
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                literals.append(text[i + 1:j])
            code.append(c + c)
            i = j + 1
        else:
            code.append(c)
            i += 1
    return "".join(code), literals, comments, problems


def find_pwned(root):
    hits = []
    for dirpath, dirnames, filenames in os.walk(root):
        hits += [os.path.join(dirpath, f) for f in filenames + dirnames if f == "PWNED"]
    return hits


def make_dir(path):
    os.makedirs(path, exist_ok=True)
    return path


def main():
    args = arg_parser(aotc_run=True).parse_args()
    aotc = os.path.abspath(args.aotc)
    aotc_run = os.path.abspath(args.aotc_run)
    w = os.path.abspath(args.workdir)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    env = dict(os.environ)
    env.pop("AOTC_KEEP_BUILD", None)

    # 1. Build the model from a Python file at a hostile path (falling back to a tamer one
    # if Python or TorchScript cannot cope with the path).
    spec_path = os.path.join(w, "spec.json")
    spec = {"keys": KEYS, "module_names": MODULE_NAMES, "scratch": os.path.join(w, "scratch.pt"),
            "model": os.path.join(w, "model.pt"), "unsupported": os.path.join(w, "unsupported.pt"),
            "input": os.path.join(w, "in_x.npy"), "expected": os.path.join(w, "expected_%d.npy"),
            "report": os.path.join(w, "builder_report.json")}
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    entries = ", ".join(f"k[{i}]: y * {float(i + 1)}" for i in range(len(KEYS)))
    builder_code = BUILDER.replace("{KEY_ENTRIES}", "{" + entries + "}")
    candidates = [
        os.path.join(w, 'src dir "dq" \'sq\' $HOME *', 'build\\model\nfile "x" */.py'),
        os.path.join(w, 'src dir "dq" \'sq\' *', 'build model.py'),
        os.path.join(w, "src dir 'sq'", "build model.py"),
    ]
    builder = None
    for path in candidates:
        make_dir(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as f:
            f.write(builder_code)
        result = subprocess.run([sys.executable, path, spec_path], capture_output=True, text=True, cwd=w, env=env)
        if result.returncode == 0:
            builder = path
            break
        print(f"note: building from {path!r} failed, trying a tamer path:\n{result.stderr[-1500:]}")
    if not expect("build the model with torch", builder is not None):
        return 1
    kept = json.load(open(spec["report"]))["module_names"]
    print(f"ok   model built by {builder!r}")
    print(f"     submodule names TorchScript saves and loads: {kept}; "
          f"dropped (torch cannot save them): {[n for n in MODULE_NAMES if n not in kept]}")

    # 2. Compile, keeping the sources; hostile -o and --emit-source paths without '$'.
    out_dir = make_dir(os.path.join(w, "out dir 'sq' \"dq\" `touch PWNED` ; touch PWNED"))
    so = os.path.join(out_dir, "model \"1\".so")
    emit = os.path.join(w, "emit dir 'sq' \"dq\" ; touch PWNED")
    cmd = [aotc, spec["model"], "-o", so, "--input", "x:3x4", "--emit-source", emit, "-v"]
    result = subprocess.run(cmd, capture_output=True, cwd=w, env=env)
    stderr = result.stderr.decode(errors="replace")
    if not expect("aotc compiles the model (model.cpp compiles)", result.returncode == 0 and os.path.exists(so),
                  f"exit {result.returncode}" + ("" if result.returncode == 0 else "\n" + stderr[-3000:])):
        return final_checks(w)

    # 3. model.cpp: nothing escaped its literal or comment.
    with open(os.path.join(emit, "model.cpp"), encoding="utf-8", errors="surrogateescape") as f:
        cpp = f.read()
    code, literals, comments, problems = lex_cpp(cpp)
    expect("model.cpp lexes cleanly", not problems, "; ".join(problems))
    leaked = [s for s in ("PWNED", "system", "touch", "trigraph", "stdlib", "<x>", "<y>", "héllo", "not C")
              if s in code]
    expect("no model text outside literals and comments in model.cpp", not leaked, f"found {leaked}")
    directives = [line for line in cpp.splitlines() if line.lstrip().startswith("#")]
    unexpected = [d for d in directives if not re.fullmatch(r"#include <[a-z0-9_/.]+>", d.strip())]
    expect(f"only the template's preprocessor lines ({len(directives)})", not unexpected, f"{unexpected}")
    trigraphs = [s for s in literals + comments if re.search(r"\?\?[=/'()!<>\-]", s)]
    expect("no trigraphs where they would be read",
           not trigraphs or "-trigraphs" not in open(os.path.join(emit, "build.ninja")).read(), f"{trigraphs[:3]}")
    # The output-name literals, in kOutputs order, decode to the keys byte for byte.
    block = cpp[cpp.index("kOutputs[]"):]
    block = block[:block.index("};")]
    names = [c_unescape(m) for m in re.findall(r'^\s*\{"((?:[^"\\]|\\.)*)",', block, flags=re.M)]
    want = [k.encode("utf-8") for k in KEYS]
    expect(f"the {len(KEYS)} output-name literals in model.cpp decode to the dict keys", names == want,
           "" if names == want else f"got {names[:4]}...")
    # Source locations went into comments only, on one line each.
    located = [c for c in comments if " at " in c and ".py:" in c]
    expect(f"source locations appear in comments ({len(located)})", bool(located),
           "" if located else "no 'at FILE.py:LINE' comment found")

    # 4. Run it with aotc-run and compare with torch.
    run_out = make_dir(os.path.join(w, "run out"))
    result = subprocess.run([aotc_run, so, "--input", f"x={spec['input']}", "--output-dir", run_out],
                            capture_output=True, cwd=w, env=env)
    if expect("aotc-run runs the model", result.returncode == 0,
              "" if result.returncode == 0 else result.stderr.decode(errors="replace")[-2000:]):
        worst = 0.0
        bad = []
        for i in range(len(KEYS)):
            got = np.load(os.path.join(run_out, f"out{i}.npy"))
            expected = np.load(spec["expected"] % i)
            err = rel_l2(got, expected) if got.shape == expected.shape else float("inf")
            worst = max(worst, err)
            if err > TOLERANCE:
                bad.append(f"output {i}: {err:.3e}")
        expect(f"all {len(KEYS)} outputs match torch (worst relative L2 {worst:.2e})", not bad, "; ".join(bad))

    # 5. aotc-run --info --json reports the names byte for byte.
    result = subprocess.run([aotc_run, so, "--info", "--json"], capture_output=True, cwd=w, env=env)
    try:
        info = json.loads(result.stdout.decode("utf-8"))
        got_names = [o["name"] for o in info["outputs"]]
        in_names = [i["name"] for i in info["inputs"]]
        ok = result.returncode == 0 and got_names == KEYS and in_names == ["x"]
        detail = "" if ok else f"exit {result.returncode}; got {got_names!r}"
    except (ValueError, KeyError, UnicodeDecodeError) as e:
        ok, detail = False, f"not valid UTF-8 JSON ({e}): {result.stdout[:300]!r}"
    expect("aotc-run --info --json gives the output names exactly", ok, detail)

    # 6. An error on a hostile source line, in a file at a hostile path, is reported cleanly.
    bad_out = os.path.join(out_dir, "unsupported.so")
    result = subprocess.run([aotc, spec["unsupported"], "-o", bad_out, "--input", "x:3x4"], capture_output=True,
                            cwd=w, env=env)
    stderr = result.stderr.decode(errors="replace")
    first = stderr.splitlines()[0] if stderr else ""
    ok = result.returncode == 1 and first.startswith("aotc: error:") and "linalg_inv" in stderr \
        and not os.path.exists(bad_out)
    if expect("an unsupported op on a hostile source line is a clean error", ok,
              f"exit {result.returncode}: {stderr[-1500:]}"):
        print(f"     {first[:160]}")

    # 7. Paths with '$', backticks and '$(...)' for -o, --emit-source and TMPDIR: they reach
    # ninja and a shell; the build must work and run nothing.
    for label, out_path, emit_dir, tmpdir in (
        ("-o in a directory named with $ and $(...)",
         os.path.join(make_dir(os.path.join(w, "o $HOME $(touch PWNED) `touch PWNED`")), "m.so"), None, None),
        ("--emit-source DIR named with $ and $(...)",
         os.path.join(w, "emit-dollar.so"), os.path.join(w, "e $HOME $(touch PWNED) 'q'"), None),
        ("TMPDIR named with $ and $(...)",
         os.path.join(w, "tmpdir-dollar.so"), None, make_dir(os.path.join(w, "t $HOME $(touch PWNED) \"q\""))),
    ):
        cmd = [aotc, spec["model"], "-o", out_path, "--input", "x:3x4"]
        if emit_dir:
            cmd += ["--emit-source", emit_dir]
        run_env = dict(env, TMPDIR=tmpdir) if tmpdir else env
        result = subprocess.run(cmd, capture_output=True, cwd=w, env=run_env)
        stderr = result.stderr.decode(errors="replace")
        ok = result.returncode == 0 and os.path.exists(out_path)
        leftovers = os.listdir(tmpdir) if tmpdir else []
        expect(label, ok and not leftovers,
               "" if ok and not leftovers else f"exit {result.returncode}; TMPDIR leftovers {leftovers}; "
               + stderr.strip()[:600].replace("\n", " | "))

    return final_checks(w)


def final_checks(w):
    """No PWNED file anywhere; the summary and the exit status."""
    hits = find_pwned(w) + [p for p in (os.path.join(os.getcwd(), "PWNED"),) if os.path.exists(p)]
    expect("no file named PWNED was created", not hits, f"{hits}")
    return finish("no injection: all checks pass")


if __name__ == "__main__":
    sys.exit(main())
