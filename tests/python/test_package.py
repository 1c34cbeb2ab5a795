"""The installed Python package (pip install ., as scripts/setup.sh does): import aotc works
without importing torch; the aotc and aotc-run commands are on the venv's PATH (aotc serve too); the
torch.compile backend is registered through its entry point; and the installed compiler
builds models with the runtime and headers inside the package (a relocatable install), not
with the build tree's."""
import json
import os
import subprocess
import sys
import sysconfig

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import arg_parser, expect, finish  # noqa: E402


def clean_env():
    # The installed package only: no source tree on the path.
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env=clean_env(), **kwargs)


def main():
    args = arg_parser(aotc=False).parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    scripts = sysconfig.get_path("scripts")

    probe = run([sys.executable, "-c", "import sys, aotc; print(aotc.__file__); print('torch' in sys.modules)"],
                cwd=args.workdir)
    lines = probe.stdout.split()
    expect("import aotc works from the installed package", probe.returncode == 0 and
           "site-packages" in lines[0], probe.stdout + probe.stderr)
    expect("import aotc does not import torch", lines[-1:] == ["False"], probe.stdout)

    for command in ["aotc", "aotc-run"]:
        path = os.path.join(scripts, command)
        version = run([path, "--version" if command == "aotc" else "--help"], cwd=args.workdir)
        expect(f"{command} is on the venv's PATH and runs", version.returncode == 0, version.stderr)

    serve = run([os.path.join(scripts, "aotc"), "serve", "--help"], cwd=args.workdir)
    expect("the installed aotc has the serve command", serve.returncode == 0 and "--max-batch" in serve.stdout,
           serve.stdout[-300:] + serve.stderr[-300:])

    entry = run([sys.executable, "-c", "from importlib.metadata import entry_points; "
                 "print([e.value for e in entry_points(group='torch_dynamo_backends') if e.name == 'aotc'])"])
    expect("torch.compile backend 'aotc' registered as an entry point",
           "aotc._dynamo:aotc_backend" in entry.stdout, entry.stdout + entry.stderr)
    listed = run([sys.executable, "-c", "import torch._dynamo; print('aotc' in torch._dynamo.list_backends())"])
    expect("torch._dynamo.list_backends() has 'aotc' without importing aotc", listed.stdout.strip() == "True",
           listed.stdout + listed.stderr[-500:])

    # The installed compiler links the installed runtime and includes the installed headers.
    model = os.path.join(args.workdir, "linear.pt")
    made = run([sys.executable, "-c", "import torch; torch.jit.save(torch.jit.script(torch.nn.Linear(5, 3)), "
                f"{model!r})"])
    expect("a test model is made", made.returncode == 0, made.stderr)
    source = os.path.join(args.workdir, "src")
    so = os.path.join(args.workdir, "linear.so")
    built = run([os.path.join(scripts, "aotc"), model, "-o", so, "--input", "input:2x5", "--emit-source", source])
    expect("the installed aotc compiles a model", built.returncode == 0, built.stderr)
    if built.returncode == 0:
        ninja = open(os.path.join(source, "build.ninja")).read()
        package = run([sys.executable, "-c", "import aotc, os; print(os.path.dirname(aotc.__file__))"]).stdout.strip()
        expect("it links the runtime inside the package", os.path.join(package, "lib", "libaotc_runtime.a") in ninja,
               [line for line in ninja.splitlines() if "libaotc_runtime" in line][:2])
        expect("it includes the headers inside the package", os.path.join(package, "include") in ninja,
               [line for line in ninja.splitlines() if "-I" in line][:2])
        info = run([os.path.join(scripts, "aotc-run"), so, "--info", "--json"])
        shapes = json.loads(info.stdout)["outputs"][0]["shape"] if info.returncode == 0 else None
        expect("the installed aotc-run reads it", shapes == [2, 3], info.stdout + info.stderr)
    return finish("the installed package works")


if __name__ == "__main__":
    sys.exit(main())
