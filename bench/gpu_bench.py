"""GPU benchmark: aotc --target cuda against torch eager and
torch.compile(mode="reduce-overhead"), in one process, on the same GPU and inputs.

Each contender runs on torch's current stream; every run is timed with its own pair of CUDA
events after a warm-up, and the table gives medians (and p90) of --iters runs. aotc runs
through its C ABI on device memory (tests/cuda/aotc_ctypes.py): the input copy into the
context's staging buffer, the CUDA graph replay and the output copy are all inside the
timed region. torch's tf32 switches follow --precision. The .so files come from
tests/cuda/check_cuda_models.py (--workdir, same layout)."""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cuda"))
from aotc_ctypes import Context, Library, Model  # noqa: E402
from gpu_models import GPU_MODELS  # noqa: E402

# --precision fp16 / bf16: the dtype torch's peers run the model in.
LOW_PRECISION = {"fp16": torch.float16, "bf16": torch.bfloat16}


def time_runs(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in events)
    return {"median": statistics.median(ms), "p90": ms[int(0.9 * (len(ms) - 1))], "min": ms[0]}


def time_alternating(fn_a, fn_b, warmup, iters):
    """fn_a and fn_b timed in turn, run by run, so that drifts of the GPU's clocks reach both."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    torch.cuda.synchronize()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
              for _ in range(2)]
    for i in range(iters):
        for fn, ev in ((fn_a, events[0][i]), (fn_b, events[1][i])):
            ev[0].record()
            fn()
            ev[1].record()
    torch.cuda.synchronize()
    out = []
    for evs in events:
        ms = sorted(s.elapsed_time(e) for s, e in evs)
        out.append({"median": statistics.median(ms), "p90": ms[int(0.9 * (len(ms) - 1))], "min": ms[0]})
    return out


def kernel_profile(fn, runs=10, top=12):
    """Device time per kernel name over `runs` runs (CUPTI sees the kernels of graph replays)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    totals = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            key = ev.name[:70]
            t, n = totals.get(key, (0.0, 0))
            totals[key] = (t + ev.device_time / 1000.0, n + 1)
    rows = sorted(totals.items(), key=lambda kv: -kv[1][0])
    total = sum(t for t, _ in totals.values()) / runs
    return total, [(name, t / runs, n // runs) for name, (t, n) in rows[:top]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True, help="where check_cuda_models.py compiled the models")
    ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"],
                    help="fp16/bf16: torch runs the model converted with .to(dtype) on inputs of that type")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (it takes a minute per model)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of aotc, eager and torch.compile timed in turn: each row gives the median of the "
                         "rounds' medians and their range (the machine drifts between rounds)")
    ap.add_argument("--profile", default="", help="models whose aotc kernels are profiled")
    ap.add_argument("--ab-env", default="",
                    help="NAME=VALUE: also time aotc in a second context created with that environment "
                         "variable (read at context creation), e.g. AOTC_CUDA_AUTOTUNE=0 (no GEMM tuning) "
                         "or AOTC_CUDA_NO_LT=1 (plain cuBLAS, every epilogue a separate pass)")
    ap.add_argument("--ab-workdir", default="",
                    help="also time the .so that check_cuda_models.py compiled into this other workdir (the "
                         "same model built another way, e.g. AOTC_CUDA_LAYOUT=nchw), alternating run by run")
    ap.add_argument("--results", default="", help="append the markdown table here")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    tf32 = args.precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    device = torch.cuda.get_device_name()
    rows, profiles = [], {}
    # torch's default stream is the legacy stream (handle 0), which aotc reads as "the
    # context's own stream": every contender runs on this side stream instead.
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    for name in args.models.split(","):
        _, inputs, eager = GPU_MODELS[name]()
        xs = [t.cuda() for _, t in inputs]
        eager = eager.cuda().eval()
        torch_xs = xs
        if args.precision in LOW_PRECISION:  # torch's own half-precision model, as users run it
            dtype = LOW_PRECISION[args.precision]
            eager = eager.to(dtype)
            torch_xs = [t.to(dtype) if t.is_floating_point() else t for t in xs]
        so = os.path.join(args.workdir, name, f"model_{args.precision}.so")
        lib = Library(so)
        model = Model(lib)
        created = time.perf_counter()
        ctx = Context(model, stream.cuda_stream)
        create_ms = (time.perf_counter() - created) * 1000.0
        outs = [torch.empty(o["shape"], device="cuda") for o in model.outputs]
        run_aotc = ctx.prepare(xs, outs)
        row = {"model": name, "batch": xs[0].shape[0], "precision": args.precision, "aotc_create_ms": create_ms}
        with torch.no_grad():
            contenders = {"aotc": (run_aotc, args.warmup), "eager": (lambda: eager(*torch_xs), args.warmup)}
            if not args.no_compile:
                compiled = torch.compile(eager, mode="reduce-overhead")
                contenders["compile"] = (lambda: compiled(*torch_xs), max(args.warmup, 10))
            rounds = {key: [] for key in contenders}
            for _ in range(max(1, args.rounds)):
                for key, (fn, warmup) in contenders.items():
                    rounds[key].append(time_runs(fn, warmup, args.iters))
            for key, results in rounds.items():
                medians = sorted(r["median"] for r in results)
                row[key] = {"median": statistics.median(medians), "low": medians[0], "high": medians[-1],
                            "p90": statistics.median(r["p90"] for r in results), "rounds": len(results)}
            if name in args.profile.split(","):
                profiles[name] = kernel_profile(run_aotc)
            if args.ab_env or args.ab_workdir:
                model_ab = None
                if args.ab_workdir:  # another build of the model
                    model_ab = Model(Library(os.path.join(args.ab_workdir, name, f"model_{args.precision}.so")))
                    ctx_ab = Context(model_ab, stream.cuda_stream)
                else:  # the GEMMs are planned when a context is created (tuning, capture)
                    var, value = args.ab_env.split("=", 1)
                    saved = os.environ.get(var)
                    os.environ[var] = value
                    ctx_ab = Context(model, stream.cuda_stream)
                    if saved is None:
                        del os.environ[var]
                    else:
                        os.environ[var] = saved
                # the two contexts alternate run by run, so that both see the same machine state
                row["aotc_again"], row["aotc_ab"] = time_alternating(run_aotc, ctx_ab.prepare(xs, outs),
                                                                     args.warmup, args.iters)
                row["ab_env"] = args.ab_env or ("the build in " + args.ab_workdir)
                ctx_ab.destroy()
                if model_ab:
                    model_ab.destroy()
        ctx.destroy()
        model.destroy()
        rows.append(row)
        line = (f"{name:14} b{row['batch']:<3} {args.precision}: aotc {row['aotc']['median']:.3f} ms "
                f"(context created in {create_ms:.0f} ms), eager {row['eager']['median']:.3f} ms")
        if "aotc_ab" in row:
            line += (f"; alternating: aotc {row['aotc_again']['median']:.3f} ms, "
                     f"with {row['ab_env']} {row['aotc_ab']['median']:.3f} ms")
        if "compile" in row:
            line += f", torch.compile {row['compile']['median']:.3f} ms (aotc/compile {row['aotc']['median'] / row['compile']['median']:.2f})"
        print(line)
        sys.stdout.flush()

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    per_round = f"medians of {args.iters} runs" + (f", median of {args.rounds} alternating rounds [range]"
                                                      if args.rounds > 1 else "")
    md = [f"\n### {date}, {device}, torch {torch.__version__}, {args.precision}, {per_round} (ms)\n",
          "| model | batch | aotc | torch eager | torch.compile reduce-overhead | aotc / eager | aotc / compile |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        a, e = r["aotc"]["median"], r["eager"]["median"]
        c = r.get("compile", {}).get("median")
        c_text = "%.3f" % c if c else "not run"
        ratio = "%.2f" % (a / c) if c else "-"
        if args.rounds > 1:
            a_text = f"{a:.3f} [{r['aotc']['low']:.3f}-{r['aotc']['high']:.3f}]"
            if c:
                c_text += f" [{r['compile']['low']:.3f}-{r['compile']['high']:.3f}]"
        else:
            a_text = f"{a:.3f}"
        md.append(f"| {r['model']} | {r['batch']} | {a_text} | {e:.3f} | {c_text} | {a / e:.2f} | {ratio} |")
    ab_rows = [r for r in rows if "aotc_ab" in r]
    if ab_rows:
        ab = ab_rows[0]["ab_env"]
        md.append(f"\naotc against a second context created with {ab}, the two alternating run by "
                  "run (medians, ms):\n")
        md.append(f"| model | aotc | aotc, {ab} | ratio | aotc context creation (ms) |")
        md.append("| --- | --- | --- | --- | --- |")
        for r in ab_rows:
            a, b = r["aotc_again"]["median"], r["aotc_ab"]["median"]
            md.append(f"| {r['model']} | {a:.3f} | {b:.3f} | {a / b:.2f} | {r['aotc_create_ms']:.0f} |")
    for name, (total, top) in profiles.items():
        md.append(f"\naotc {name} ({args.precision}): {total:.3f} ms of kernels per run; the largest:\n")
        md.append("| kernel | ms per run | launches per run |")
        md.append("| --- | --- | --- |")
        for kname, t, n in top:
            md.append(f"| `{kname}` | {t:.3f} | {n} |")
    text = "\n".join(md) + "\n"
    print(text)
    if args.results:
        with open(args.results, "a") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "rows": rows, "profiles": profiles}, f, indent=1)


if __name__ == "__main__":
    main()
