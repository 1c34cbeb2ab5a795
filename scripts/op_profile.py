#!/usr/bin/env python3
"""Per-op timings of a CPU model: where a run's time goes, op by op.

Compiles the model with `aotc --emit-source`, wraps every kernel call of the generated
model.cpp in a steady-clock timer, rebuilds the .so with the generated build.ninja, runs it
with `aotc-run --bench`, and prints each op's median time per run (ms), its share,
and the totals per op kind (1x1 convolutions, Winograd, depthwise ... told apart). The
timers add a clock read per op (about 20 ns), nothing else; the thread pool is the model's.

    scripts/op_profile.py model.pt --input x:1x3x224x224 --threads 2 --iters 50
    scripts/op_profile.py model.pt --input x:1x3x224x224 --top 15 --workdir /tmp/prof
    scripts/op_profile.py model.pt --input x:1x3x224x224 --peak 208

Convolutions (Winograd counted as direct, as bench/bench_cpu.py counts them), their fused
expansion + depthwise pairs, GEMMs and attention also get their FLOPs and GFLOP/s, per op
and per kind. With --peak (the sgemm rate of bench/bench_cpu.py's table, GFLOP/s) it prints
the bound the profile puts on the model's share of that peak: every op with FLOPs at the
peak (or at its own rate where that is higher), the others at their measured time.

Use it to find what to speed up; to measure a change, time two builds against each other
with bench/ab_cpu.py (a profile of two separate runs is at the mercy of the machine's drift).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A kernel call block in model.cpp: `  {  // <kind>` ... `  }` at two spaces' indent.
BLOCK_START = re.compile(r"^  \{  // (\S+)")


def describe(kind, params_line, call_line):
    """A short name for one op from its parameter line: shapes, kernel, stride, path."""
    g = dict(re.findall(r"p\.(\w+) = (-?[\w.]+)", params_line))
    if kind == "conv2d_expand_depthwise":  # two parameter sets: pw (the 1x1) and dw
        pw = dict(re.findall(r"pw\.(\w+) = (-?[\w.]+)", params_line))
        dw = dict(re.findall(r"dw\.(\w+) = (-?[\w.]+)", params_line))
        if "c_in" in pw and "kernel_h" in dw:
            return (f"{kind} {pw['c_in']}>{dw['c_in']} then {dw['kernel_h']}x{dw['kernel_w']}/{dw['stride_h']}"
                    f" -> {dw.get('h_out')}x{dw.get('w_out')}"), kind
    if "kernel_h" in g and kind.startswith("conv"):
        groups = int(g.get("groups", "1"))
        c_in, c_out = g.get("c_in"), g.get("c_out")
        path = "winograd" if "conv2d_winograd" in call_line else (
            "depthwise" if groups > 1 and groups == int(c_in or 0) == int(c_out or 0) else "")
        name = f"{kind} {c_in}>{c_out} {g['kernel_h']}x{g['kernel_w']}/{g['stride_h']} -> {g.get('h_out')}x{g.get('w_out')}"
        if groups > 1 and not path:
            name += f" g{groups}"
        return (name + (" " + path if path else "")), category(kind, g, path)
    if "kernel_h" in g:
        return f"{kind} {g.get('c')} {g['kernel_h']}x{g['kernel_w']}/{g['stride_h']} -> {g.get('h_out')}x{g.get('w_out')}", kind
    if "m" in g and "n" in g and "k" in g:
        return f"{kind} {g['m']}x{g['n']}x{g['k']}", kind
    return kind, kind


def flops_of(kind, params_line):
    """The op's multiply-adds times 2, from its parameter line; 0 for ops counted as none."""
    def fields(prefix):
        return {k: int(v) for k, v in re.findall(r"\b" + prefix + r"\.(\w+) = (-?\d+)(?![\d.])", params_line)}

    def conv(g):
        return 2 * g["n"] * g["c_out"] * (g["c_in"] // g["groups"]) * g["kernel_h"] * g["kernel_w"] * \
            g["h_out"] * g["w_out"]
    try:
        if kind == "conv2d_expand_depthwise":
            return conv(fields("pw")) + conv(fields("dw"))
        g = fields("p")
        if kind == "conv2d":
            return conv(g)
        if kind == "gemm":
            return 2 * g["m"] * g["n"] * g["k"]
        if kind == "batched_gemm":
            mm = fields(r"p\.gemm")
            return 2 * g["batch"] * mm["m"] * mm["n"] * mm["k"]
        if kind == "attention":  # q k^T and p v
            rows = g["batch"] * g["heads"] * g["q_len"] * g["kv_len"]
            return 2 * rows * (g["head_dim"] + g.get("v_head_dim", g["head_dim"]))
    except KeyError:
        pass
    return 0


def category(kind, g, path):
    if path:
        return f"{kind} {path}"
    if g["kernel_h"] == "1" and g["kernel_w"] == "1":
        return f"{kind} 1x1 stride {g['stride_h']}"
    return f"{kind} {g['kernel_h']}x{g['kernel_w']} stride {g['stride_h']}"


def instrument(model_cpp):
    lines = open(model_cpp).read().split("\n")
    out, names, cats, flops, current = [], [], [], [], None
    for i, line in enumerate(lines):
        m = BLOCK_START.match(line)
        if m:
            params = lines[i + 1] if i + 1 < len(lines) else ""
            call = lines[i + 2] if i + 2 < len(lines) else ""
            name, cat = describe(m.group(1), params, call)
            current = len(names)
            names.append(name)
            cats.append(cat)
            flops.append(flops_of(m.group(1), params))
            out += [line, "    aotc_profile_start = aotc_profile_now();"]
            continue
        if current is not None and line == "  }":
            out += [f"    aotc_profile_ms[{current}].push_back(aotc_profile_now() - aotc_profile_start);", line]
            current = None
            continue
        out.append(line)
    if not names:
        sys.exit("op_profile: no kernel calls found in " + model_cpp)
    quoted = ", ".join('"' + n.replace('"', "'") + '"' for n in names)
    header = f"""#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
namespace {{
std::vector<double> aotc_profile_ms[{len(names)}];  // each call's time, per op
double aotc_profile_start;
const char* const aotc_profile_names[] = {{{quoted}}};
double aotc_profile_now() {{
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}}
// Printed when the .so is unloaded: one line per op, "op <index>\\t<median ms>\\t<mean ms>\\t<name>".
struct AotcProfilePrint {{
  ~AotcProfilePrint() {{
    for (int i = 0; i < {len(names)}; ++i) {{
      std::vector<double>& t = aotc_profile_ms[i];
      double sum = 0.0;
      for (double v : t) sum += v;
      std::sort(t.begin(), t.end());
      const double median = t.empty() ? 0.0 : t[t.size() / 2], mean = t.empty() ? 0.0 : sum / t.size();
      std::fprintf(stderr, "op %d\\t%.6f\\t%.6f\\t%s\\n", i, median, mean, aotc_profile_names[i]);
    }}
  }}
}} aotc_profile_print;
}}  // namespace
"""
    text = "\n".join(out).replace("namespace {\n", header + "namespace {\n", 1)
    with open(model_cpp, "w") as f:
        f.write(text)
    return names, cats, flops


def gflops(f, ms):
    return f"{f / ms / 1e6:7.1f}" if f and ms > 0 else " " * 7


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the TorchScript file")
    ap.add_argument("--input", action="append", required=True, help="as aotc takes it: NAME:DIMS[:DTYPE]")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--top", type=int, default=20, help="ops to list, slowest first (0: all, in order)")
    ap.add_argument("--workdir", default="", help="keep the generated sources here (default: a temporary one)")
    ap.add_argument("--peak", type=float, default=0.0,
                    help="the machine's sgemm GFLOP/s: also print the bound on the model's share of it")
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build/compiler/aotc"))
    ap.add_argument("--aotc-run", default=os.path.join(ROOT, "build/tools/aotc-run/aotc-run"))
    args = ap.parse_args()

    work = args.workdir or tempfile.mkdtemp(prefix="aotc_profile_")
    src = os.path.join(work, "src")
    # built for the threads it is timed on (aotc --cpu-threads: the kernels such a build takes)
    cmd = [args.aotc, args.model, "-o", os.path.join(work, "model.so"), "--emit-source", src,
           "--cpu-threads", str(args.threads)]
    for spec in args.input:
        cmd += ["--input", spec]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    names, cats, flops = instrument(os.path.join(src, "model.cpp"))
    subprocess.run(["ninja", "-C", src], check=True, stdout=subprocess.DEVNULL)
    run = subprocess.run([args.aotc_run, os.path.join(src, "model.so"), "--bench", "--threads", str(args.threads),
                          "--iters", str(args.iters), "--warmup", str(args.warmup)],
                         check=True, capture_output=True, text=True)
    runs = args.iters + args.warmup
    per_run, means = [0.0] * len(names), [0.0] * len(names)
    for line in run.stderr.splitlines():
        m = re.match(r"op (\d+)\t([\d.]+)\t([\d.]+)\t", line)
        if m:
            per_run[int(m.group(1))] = float(m.group(2))
            means[int(m.group(1))] = float(m.group(3))
    total = sum(per_run)
    print(run.stdout.strip())
    print(f"{len(names)} ops, {total:.3f} ms per run in kernel calls ({args.threads} threads; each op's median of "
          f"{runs} runs; the sum of their means {sum(means):.3f} ms: slow outlier runs weigh on means)")
    order = range(len(names)) if args.top == 0 else sorted(range(len(names)), key=lambda i: -per_run[i])[:args.top]
    print(f"\n{'op':>4}  {'ms':>8}  {'share':>6}  {'GFLOP/s':>7}  name")
    for i in order:
        print(f"{i:4d}  {per_run[i]:8.3f}  {100 * per_run[i] / total:5.1f}%  {gflops(flops[i], per_run[i])}  {names[i]}")
    by_cat = {}
    for c, t, f in zip(cats, per_run, flops):
        n, s, fs = by_cat.get(c, (0, 0.0, 0))
        by_cat[c] = (n + 1, s + t, fs + f)
    print(f"\n{'kind':<32} {'ops':>4} {'ms':>8} {'share':>6} {'GFLOP/s':>7}")
    for c, (n, t, f) in sorted(by_cat.items(), key=lambda kv: -kv[1][1]):
        print(f"{c:<32} {n:4d} {t:8.3f} {100 * t / total:5.1f}% {gflops(f, t)}")
    all_flops = sum(flops)
    print(f"\n{all_flops / 1e9:.3f} GFLOP ({all_flops} FLOPs) in the ops counted, "
          f"{gflops(all_flops, total).strip()} GFLOP/s over the kernel calls' time")
    if args.peak > 0 and all_flops:
        rest = sum(t for t, f in zip(per_run, flops) if not f)
        # An op already faster than the peak (Winograd counted as direct) keeps its time.
        bound_ms = sum(min(t, f / args.peak / 1e6) if f else t for t, f in zip(per_run, flops))
        print(f"against a peak of {args.peak:.1f} GFLOP/s: {100 * all_flops / total / 1e6 / args.peak:.1f}% now; "
              f"at most {100 * all_flops / bound_ms / 1e6 / args.peak:.1f}% with every op that has FLOPs at the peak "
              f"or above it and the others ({rest:.3f} ms) as measured")


if __name__ == "__main__":
    main()
