"""GPU benchmark: aotc --target cuda against torch eager and
torch.compile(mode="reduce-overhead"), in one process, on the same GPU and inputs.

Each contender runs on torch's current stream; every run is timed with its own pair of CUDA
events after a warm-up, and the table gives medians (and p90) of --iters runs. aotc runs
through its C ABI on device memory (tests/cuda/aotc_ctypes.py): the input copy into the
context's staging buffer, the CUDA graph replay and the output copy are all inside the
timed region. torch's tf32 switches follow --precision. The .so files come from
tests/cuda/check_cuda_models.py (--workdir, same layout).

--host adds host-to-host columns, as a user whose data lives in host memory runs: every run
starts from the inputs in (pageable) host memory and ends when the outputs are back there,
timed by the host's clock. aotc takes the host tensors through its C ABI; torch.compile's
model is called on `x.cuda()` and its outputs are copied back with `.cpu()`. A third column
gives aotc with inputs and outputs in pinned host memory (torch's pin_memory())."""
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


def summary(ms):
    """Median, p90 and min of run times (ms)."""
    ms = sorted(ms)
    return {"median": statistics.median(ms), "p90": ms[int(0.9 * (len(ms) - 1))], "min": ms[0]}


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
    return summary(s.elapsed_time(e) for s, e in events)


def time_wall(fn, warmup, iters):
    """Host clock around each run, for runs that return only once their outputs are in host
    memory (each one synchronises itself)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - start) * 1000.0)
    return summary(ms)


def to_host(out):
    """torch's outputs copied to host memory (a tensor, or a tuple / list / dict of them)."""
    if isinstance(out, torch.Tensor):
        return out.cpu()
    if isinstance(out, dict):
        return {k: to_host(v) for k, v in out.items()}
    return [to_host(v) for v in out]


def time_alternating(fn_a, fn_b, warmup, iters, wall=False):
    """fn_a and fn_b timed in turn, run by run, so that drifts of the GPU's clocks reach both.
    wall: by the host's clock (runs that synchronise themselves: host memory), else by CUDA
    events."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    torch.cuda.synchronize()
    times = [[], []]
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
              for _ in range(2)]
    for i in range(iters):
        for k, fn in enumerate((fn_a, fn_b)):
            if wall:
                start = time.perf_counter()
                fn()
                times[k].append((time.perf_counter() - start) * 1000.0)
            else:
                events[k][i][0].record()
                fn()
                events[k][i][1].record()
    torch.cuda.synchronize()
    return [summary(times[k] if wall else [s.elapsed_time(e) for s, e in events[k]]) for k in range(2)]


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


def launch_list(fn, runs=5):
    """Each kernel launch of one run in order: name, device time and the idle gap before it
    (graph replays leave gaps between dependent kernels), from the last of `runs` runs."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    events = sorted((ev.time_range.start, ev.time_range.end, ev.name) for ev in prof.events()
                    if ev.device_type == torch.autograd.DeviceType.CUDA)
    last = events[len(events) - len(events) // runs:]
    rows, end = [], None
    for start, stop, name in last:
        rows.append((name[:90], (stop - start) / 1000.0, 0.0 if end is None else (start - end) / 1000.0))
        end = stop if end is None else max(end, stop)
    return rows


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
    ap.add_argument("--launches", default="",
                    help="models whose every kernel launch of one run is listed in order, with the gaps")
    ap.add_argument("--ab-env", default="",
                    help="NAME=VALUE: also time aotc in a second context created with that environment "
                         "variable (read at context creation), e.g. AOTC_CUDA_AUTOTUNE=0 (no GEMM tuning) "
                         "or AOTC_CUDA_NO_LT=1 (plain cuBLAS, every epilogue a separate pass)")
    ap.add_argument("--ab-workdir", default="",
                    help="also time the .so that check_cuda_models.py compiled into this other workdir (the "
                         "same model built another way, e.g. AOTC_CUDA_LAYOUT=nchw), alternating run by run")
    ap.add_argument("--host", action="store_true",
                    help="also time host-to-host runs (inputs from and outputs to host memory) of aotc, "
                         "aotc on pinned host memory and torch.compile")
    ap.add_argument("--results", default="", help="append the markdown table here")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    tf32 = args.precision != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    device = torch.cuda.get_device_name()
    rows, profiles, launches = [], {}, {}
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
        if not os.path.exists(so):
            raise SystemExit(f"{so} does not exist: compile {name} first (tests/cuda/check_cuda_models.py "
                             f"--workdir {args.workdir} --models {name} --precision {args.precision}; "
                             f"in scripts/gpu_suite.sh every BENCH_MODELS model must be in MODELS)")
        lib = Library(so)
        model = Model(lib)
        created = time.perf_counter()
        ctx = Context(model, stream.cuda_stream)
        create_ms = (time.perf_counter() - created) * 1000.0
        outs = [torch.empty(o["shape"], dtype=getattr(torch, o["dtype"]), device="cuda") for o in model.outputs]
        run_aotc = ctx.prepare(xs, outs)
        row = {"model": name, "batch": xs[0].shape[0], "precision": args.precision, "aotc_create_ms": create_ms}
        with torch.no_grad():
            contenders = {"aotc": (run_aotc, args.warmup), "eager": (lambda: eager(*torch_xs), args.warmup)}
            if not args.no_compile:
                compiled = torch.compile(eager, mode="reduce-overhead")
                contenders["compile"] = (lambda: compiled(*torch_xs), max(args.warmup, 10))
            wall = set()
            if args.host:
                host_xs = [t.cpu() for t in xs]
                host_outs = [torch.empty(o["shape"], dtype=getattr(torch, o["dtype"])) for o in model.outputs]
                # The device-memory run waited for like a host run (a host run returns only
                # once its outputs are in host memory): the base the copies add to.
                contenders["aotc_sync"] = (lambda: (run_aotc(), stream.synchronize()), args.warmup)
                contenders["aotc_host"] = (ctx.prepare(host_xs, host_outs), args.warmup)
                pinned_xs = [t.pin_memory() for t in host_xs]
                pinned_outs = [t.pin_memory() for t in host_outs]
                contenders["aotc_pinned"] = (ctx.prepare(pinned_xs, pinned_outs), args.warmup)
                wall |= {"aotc_sync", "aotc_host", "aotc_pinned"}
                if not args.no_compile:
                    torch_host_xs = [t.cpu() for t in torch_xs]
                    contenders["compile_host"] = (
                        lambda: to_host(compiled(*[t.cuda() for t in torch_host_xs])), max(args.warmup, 10))
                    wall.add("compile_host")
            rounds = {key: [] for key in contenders}
            for _ in range(max(1, args.rounds)):
                for key, (fn, warmup) in contenders.items():
                    timer = time_wall if key in wall else time_runs
                    rounds[key].append(timer(fn, warmup, args.iters))
            if args.host:  # the host runs' answers, against the device run's
                ctx.prepare(host_xs, host_outs)()
                ctx.prepare(pinned_xs, pinned_outs)()
                run_aotc()
                torch.cuda.synchronize()
                for h, p, d in zip(host_outs, pinned_outs, outs):
                    if not (torch.equal(h, d.cpu()) and torch.equal(p, d.cpu())):
                        raise SystemExit(f"{name}: the host-memory run's output differs from the device run's")
            for key, results in rounds.items():
                medians = sorted(r["median"] for r in results)
                row[key] = {"median": statistics.median(medians), "low": medians[0], "high": medians[-1],
                            "p90": statistics.median(r["p90"] for r in results), "rounds": len(results)}
            if name in args.profile.split(","):
                profiles[name] = kernel_profile(run_aotc)
            if name in args.launches.split(","):
                launches[name] = launch_list(run_aotc)
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
                if args.host:  # the same two contexts on host memory
                    row["aotc_host_again"], row["aotc_host_ab"] = time_alternating(
                        ctx.prepare(host_xs, host_outs), ctx_ab.prepare(host_xs, host_outs), args.warmup,
                        args.iters, wall=True)
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
        if "aotc_host" in row:
            line += (f"; host to host: aotc {row['aotc_host']['median']:.3f} ms, pinned "
                     f"{row['aotc_pinned']['median']:.3f} ms")
            if "compile_host" in row:
                line += f", torch.compile {row['compile_host']['median']:.3f} ms"
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
    host_rows = [r for r in rows if "aotc_host" in r]
    if host_rows:
        md.append("\nHost to host: inputs from and outputs to host memory, host clock around each run "
                  "(medians, ms):\n")
        md.append("| model | batch | aotc, device memory, waited for | aotc | aotc, pinned | torch.compile | "
                  "aotc / compile | copies' cost to aotc |")
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in host_rows:
            d, h, p = r["aotc_sync"]["median"], r["aotc_host"]["median"], r["aotc_pinned"]["median"]
            c = r.get("compile_host", {}).get("median")
            md.append(f"| {r['model']} | {r['batch']} | {d:.3f} | {h:.3f} | {p:.3f} | "
                      f"{'%.3f' % c if c else 'not run'} | {'%.2f' % (h / c) if c else '-'} | {h - d:+.3f} |")
    ab_rows = [r for r in rows if "aotc_ab" in r]
    if ab_rows:
        ab = ab_rows[0]["ab_env"]
        md.append(f"\naotc against a second context created with {ab}, the two alternating run by "
                  "run (medians, ms):\n")
        md.append(f"| model | memory | aotc | aotc, {ab} | ratio | aotc context creation (ms) |")
        md.append("| --- | --- | --- | --- | --- | --- |")
        for r in ab_rows:
            for memory, suffix in (("device", ""), ("host", "_host")):
                if "aotc" + suffix + "_ab" not in r:
                    continue
                a, b = r["aotc" + suffix + "_again"]["median"], r["aotc" + suffix + "_ab"]["median"]
                md.append(f"| {r['model']} | {memory} | {a:.3f} | {b:.3f} | {a / b:.2f} | "
                          f"{r['aotc_create_ms']:.0f} |")
    for name, (total, top) in profiles.items():
        md.append(f"\naotc {name} ({args.precision}): {total:.3f} ms of kernels per run; the largest:\n")
        md.append("| kernel | ms per run | launches per run |")
        md.append("| --- | --- | --- |")
        for kname, t, n in top:
            md.append(f"| `{kname}` | {t:.3f} | {n} |")
    for name, listed in launches.items():
        busy, idle = sum(t for _, t, _ in listed), sum(g for _, _, g in listed)
        md.append(f"\naotc {name} ({args.precision}): {len(listed)} launches in one run, {busy:.3f} ms busy, "
                  f"{idle:.3f} ms of gaps between them:\n")
        md.append("| # | kernel | ms | gap before (ms) |")
        md.append("| --- | --- | --- | --- |")
        for i, (kname, t, gap) in enumerate(listed):
            md.append(f"| {i} | `{kname}` | {t:.4f} | {gap:.4f} |")
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
