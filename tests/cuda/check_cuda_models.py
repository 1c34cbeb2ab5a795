"""End-to-end check of models compiled with aotc --target cuda.

For each model: torch makes the TorchScript file; aotc compiles it for CUDA; the .so must
need nothing but glibc, the loader and cuBLAS. Then, on a machine with a GPU, the .so runs
four ways and each result is compared with torch's on the same GPU (relative L2 error,
fp32 <= 1e-4, tf32 <= 5e-3, fp16 and bf16 <= 2e-2; the reference is torch's float64 result on the CPU, which
cannot have taken a tf32 path; the errors of torch's float32 and float64 results on the GPU
are reported beside):
through the C ABI on device memory
(torch's CUDA tensors, torch's current stream), on host memory (pageable, then pinned), and
through aotc-run (.npy files). Outputs are poisoned with NaN first, so an unwritten element fails. Without a GPU
the compile checks still run and the test reports SKIP (exit status 77) for the rest.

--precision takes a comma-separated list (fp32,tf32,fp16): each model is then compiled once
per precision and torch's references are computed once for all of them. At fp16 / bf16 a
model that fails where torch's own fp16 / bf16 run fails too is reported as skipped (its
values leave the type's range), not as passed. Compiles run --jobs
at a time, and a model's runs start as soon as its compiles are done, while later models
still compile."""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from aotc_ctypes import DEVICE_CUDA, Context, Library, Model  # noqa: E402
from common import (SKIP, TOLERANCE, arg_parser, failures, finish, flatten, needed_libraries,  # noqa: E402
                    read_outputs, rel_l2, run_aotc, run_aotc_run, write_inputs)
from gpu_models import GPU_MODELS  # noqa: E402
from models import MODELS  # noqa: E402

PRECISION_TOLERANCE = {"fp32": TOLERANCE, "tf32": 5e-3, "fp16": 2e-2, "bf16": 2e-2}
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2",
                  "libcublas.so.13", "libcublasLt.so.13"}


def gpu_available():
    try:
        return torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception:  # noqa: BLE001
        return False


def build_model(name, work):
    """Saves the model's TorchScript file; returns it and the inputs."""
    builder = GPU_MODELS.get(name)
    if builder is None:  # a model of the CPU suite (tests/e2e/models*.py)
        module, inputs = MODELS[name]()
    else:
        module, inputs, _ = builder()
    pt = os.path.join(work, "model.pt")
    torch.jit.save(module, pt)
    return pt, inputs


def compile_model(args, precision, pt, inputs, work):
    so = os.path.join(work, f"model_{precision}.so")
    start = time.monotonic()
    result = run_aotc(args.aotc, pt, so, inputs, target="cuda",
                      extra=["--cuda-arch", args.cuda_arch, "--precision", precision])
    seconds = time.monotonic() - start
    if result.returncode != 0:
        raise RuntimeError(f"aotc failed:\n{result.stderr[-4000:]}")
    needed = needed_libraries(so)
    bad = [lib for lib in needed if lib not in ALLOWED_NEEDED]
    if bad:
        raise RuntimeError(f"the .so needs {bad}")
    return so, seconds, needed


def as_float64(module_path, device, inputs):
    """The model's outputs in float64 on device, or None where the model cannot run in float64
    (a traced graph holding float32 constants, an op without a float64 kernel)."""
    try:
        m = torch.jit.load(module_path, map_location=device).double()
        outs = flatten(m(*[t.double() if t.is_floating_point() else t for t in inputs]), [])
        return [o.to(torch.float32) if o.dtype == torch.float64 else o for o in outs]
    except Exception:  # noqa: BLE001
        return None


def output_error(got, want):
    """Relative L2 error of a float output; for integer and bool outputs 0 if every element is
    equal, else 1 (they must match exactly)."""
    if got.dtype.is_floating_point:
        return rel_l2(got, want)
    return 0.0 if tuple(got.shape) == tuple(want.shape) and torch.equal(got.cpu(), want.cpu()) else 1.0


def poisoned(info, device):
    """An output buffer that a kernel must overwrite: NaN for floats, -1 / True for the rest."""
    dtype = getattr(torch, info["dtype"])
    fill = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else -1)
    return torch.full(info["shape"], fill, dtype=dtype, device=device)


def torch_references(pt, inputs, precisions):
    """torch's results for a model, computed once for every precision checked: "expected" (the
    reference) and the ones reported beside aotc's, by name."""
    loaded = torch.jit.load(pt, map_location="cuda")
    cuda_inputs = [t.cuda() for _, t in inputs]
    beside = {}
    with torch.no_grad():
        try:  # torch's own float32 result on the GPU, reported beside
            beside["torch-fp32"] = flatten(loaded(*cuda_inputs), [])
        except Exception:  # noqa: BLE001 (a model that makes CPU tensors inside)
            pass
        # The reference: torch's CPU float64 result. Not CUDA's: its fused encoder layer
        # (aten::_transformer_encoder_layer_fwd, pre-norm GELU) differs from the CPU one and
        # from the unfused layers by 5.2e-5 even in float64 (measured on an H100, 2026-11-23).
        # A model that cannot run in float64 is compared with torch's float32 CPU result.
        expected = as_float64(pt, "cpu", [t for _, t in inputs])
        if expected is None:
            expected = flatten(torch.jit.load(pt, map_location="cpu")(*[t for _, t in inputs]), [])
        cuda64 = as_float64(pt, "cuda", cuda_inputs)
        if cuda64 is not None:
            beside["torch-cuda-fp64"] = cuda64
        # fp16 / bf16: torch's own model in that dtype on the same GPU, reported beside aotc's
        # (a network whose activations leave fp16's range fails in torch too).
        for precision in precisions:
            low = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
            if low is None:
                continue
            try:
                low_model = torch.jit.load(pt, map_location="cuda").to(low)
                outs = flatten(low_model(*[t.to(low) if t.is_floating_point() else t for t in cuda_inputs]), [])
                beside[f"torch-{precision}"] = [g.float() if g.is_floating_point() else g for g in outs]
            except Exception:  # noqa: BLE001 (a traced model may hold float32 constants)
                pass
    torch.cuda.synchronize()
    return {"expected": expected, "beside": beside, "cuda_inputs": cuda_inputs}


def check_on_gpu(args, precision, references, so, inputs, work):
    expected, cuda_inputs = references["expected"], references["cuda_inputs"]
    lib = Library(so)
    if lib.device() != DEVICE_CUDA:
        raise RuntimeError("aotc_model_device does not say CUDA")
    model = Model(lib)
    def worst(outputs):
        return max((output_error(g, w) for g, w in zip(outputs, expected)), default=0.0)

    errors = {}
    for key, outs in references["beside"].items():
        if key in ("torch-fp32", "torch-cuda-fp64") or key == f"torch-{precision}":
            errors[key] = worst(outs)
    stream = torch.cuda.Stream()  # a real stream: torch's default one is the legacy stream, handle 0
    ctx = Context(model, stream.cuda_stream)
    if ctx.stream() != stream.cuda_stream:
        raise RuntimeError("aotc_context_cuda_stream does not give the stream the context was created with")
    # Device memory, on torch's stream, twice (the second replay of the graph must agree).
    for attempt in range(2):
        outs = [poisoned(o, "cuda") for o in model.outputs]
        torch.cuda.synchronize()
        ctx.run(cuda_inputs, outs)
        stream.synchronize()  # the run only enqueued its work: wait for that stream alone
        errors[f"device{attempt}"] = worst(outs)
    # Host memory on the context's own stream.
    ctx.set_stream(None)
    host_outs = [poisoned(o, "cpu") for o in model.outputs]
    ctx.run([t for _, t in inputs], host_outs)
    per_output = [output_error(g, w) for g, w in zip(host_outs, expected)]
    errors["host"] = max(per_output)
    # Host memory that is pinned already: copied directly, not through the context's staging.
    pinned_outs = [poisoned(o, "cpu").pin_memory() for o in model.outputs]
    ctx.run([t.pin_memory() for _, t in inputs], pinned_outs)
    errors["pinned"] = worst(pinned_outs)
    ctx.destroy()
    model.destroy()
    # aotc-run, the user's tool: --info names the device; runs take .npy files (host memory).
    info = subprocess.run([args.aotc_run, so, "--info", "--json"], capture_output=True, text=True)
    if info.returncode != 0 or json.loads(info.stdout).get("device") != "cuda":
        raise RuntimeError(f"aotc-run --info --json does not say device cuda: {info.stdout} {info.stderr}")
    out = os.path.join(work, f"out_{precision}")
    result = run_aotc_run(args.aotc_run, so, "--output-dir", out, *write_inputs(inputs, work))
    if result.returncode != 0:
        raise RuntimeError(f"aotc-run failed: {result.stderr}")
    errors["aotc-run"] = worst([torch.from_numpy(a) for a in read_outputs(out, len(expected))])
    return errors, per_output


DEFAULT_MODELS = ("mlp,small_cnn,conv_shapes,two_inputs,activations,dict_out,layer_norm_ops,sdpa_ops,attention_pieces,"
                  "swin_small,embedding_ops,"
                  "transformer_encoder,multihead_attention,multihead_attention_const_masks,bert_encoder,"
                  "views_slicing_traced,views_permutes_traced,views_splits_traced,einsum_ops,pw_arith,pw_activations,"
                  "pw_composite_float,pw_activations_traced,pw_masks,mlp_gelu,encoder_pre_gelu,long_sorts,graph_conv")


def model_names(spec):
    """--models: names, or "e2e" for every model of the CPU suite (tests/e2e/models*.py)."""
    names = []
    for name in spec.split(","):
        names += list(MODELS) if name == "e2e" else [name]
    return names


def check_model(args, precision, name, row, compiled, built, references, gpu):
    """One model at one precision: fills row, prints its line, records a failure."""
    try:
        if "error" in row:
            raise RuntimeError(row["error"])
        result, error = compiled
        if error is not None:
            raise error
        so, seconds, needed = result
        pt, inputs = built[name]
        row["compile_s"] = round(seconds, 2)
        row["needed"] = needed
        if gpu:
            row["errors"], per_output = check_on_gpu(args, precision, references, so, inputs,
                                                     os.path.join(args.workdir, name))
            worst = max(v for k, v in row["errors"].items() if not k.startswith("torch-"))
            tolerance = PRECISION_TOLERANCE[precision]
            row["ok"] = bool(worst <= tolerance)
            status = "ok" if row["ok"] else "FAIL"
            # A model whose values leave the 16-bit type's range (random weights whose
            # activations shrink below fp16's smallest number, say) fails in torch's own
            # 16-bit run too: there is nothing for aotc to match, so it is skipped, not passed.
            torch_low = row["errors"].get(f"torch-{precision}")
            if not row["ok"] and torch_low is not None and not torch_low <= tolerance:
                row["ok"] = True
                row["skipped"] = f"torch's own {precision} result misses the tolerance too ({torch_low:.2e})"
                status = "skip"
            detail = ", ".join(f"{k} {v:.2e}" for k, v in row["errors"].items())
            print(f"{status:4} {name} ({precision}): compiled in {seconds:.1f} s; rel L2 {detail}")
            if not row["ok"] and len(per_output) > 1:  # which output, to start the search
                print("     per output (host run): " + ", ".join(f"{i}: {e:.2e}" for i, e in enumerate(per_output)))
        else:
            row["ok"] = True
            print(f"ok   {name} ({precision}): compiled in {seconds:.1f} s, needs {needed}; no GPU: not run")
    except Exception as e:  # noqa: BLE001
        row["ok"] = False
        row["error"] = str(e)
        print(f"FAIL {name} ({precision}): {str(e)[-1500:]}")
    if not row["ok"]:
        failures.append(f"{name} ({precision})")
    sys.stdout.flush()


def main():
    torch.backends.cuda.matmul.allow_tf32 = False  # torch's own float32 result, reported beside
    torch.backends.cudnn.allow_tf32 = False
    ap = arg_parser(aotc_run=True)
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help='comma-separated names of tests/cuda/gpu_models.py or tests/e2e/models*.py; "e2e": all '
                         "of the latter")
    ap.add_argument("--precision", default="fp32",
                    help="comma-separated, of " + ", ".join(sorted(PRECISION_TOLERANCE)))
    ap.add_argument("--cuda-arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=1, help="models compiled at once (each runs nvcc)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    precisions = args.precision.split(",")
    unknown = [p for p in precisions if p not in PRECISION_TOLERANCE]
    if unknown:
        ap.error(f"--precision: unknown {unknown}; choose from {sorted(PRECISION_TOLERANCE)}")
    gpu = gpu_available()
    names = model_names(args.models)
    rows = {(name, p): {"model": name, "precision": p} for name in names for p in precisions}
    built = {}
    for name in names:  # torch makes the TorchScript files one at a time
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        try:
            built[name] = build_model(name, work)
        except Exception as e:  # noqa: BLE001
            for p in precisions:
                rows[(name, p)]["error"] = f"building the model in torch failed: {e}"

    def compile_one(name, precision):
        try:
            pt, inputs = built[name]
            return compile_model(args, precision, pt, inputs, os.path.join(args.workdir, name)), None
        except Exception as e:  # noqa: BLE001
            return None, e

    # While nvcc runs on --jobs cores, torch's CPU references take the rest: more threads than
    # cores leave its OpenMP workers spinning against nvcc, and the runs crawl.
    all_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, min(all_threads, (os.cpu_count() or 1) - args.jobs)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {(name, p): pool.submit(compile_one, name, p) for name in built for p in precisions}
        for name in names:  # in order, each as soon as its compiles are done
            if all(f.done() for f in futures.values()):
                torch.set_num_threads(all_threads)
            references = None
            if gpu and name in built:
                for p in precisions:
                    futures[(name, p)].result()
                try:
                    references = torch_references(*built[name], precisions)
                except Exception as e:  # noqa: BLE001
                    for p in precisions:
                        rows[(name, p)].setdefault("error", f"torch's reference run failed: {e}")
            for p in precisions:
                compiled = futures[(name, p)].result() if (name, p) in futures else (None, None)
                check_model(args, p, name, rows[(name, p)], compiled, built, references, gpu)
    results = list(rows.values())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not failures and not gpu:
        print("SKIP: no GPU here; the models compiled, their runs were skipped")
        return SKIP
    skipped = [f"{r['model']} ({r['precision']})" for r in results if "skipped" in r]
    if skipped:
        print(f"{len(skipped)} skipped (outside the precision's range in torch too): {', '.join(skipped)}")
    status = finish(f"all {len(names)} models match torch ({args.precision})")
    print(f"{len(results) - len(failures) - len(skipped)} passed, {len(failures)} failed")
    return status


if __name__ == "__main__":
    sys.exit(main())
