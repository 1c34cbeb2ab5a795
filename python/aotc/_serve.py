"""aotc serve: a compiled model library behind NVIDIA Triton Inference Server.

    aotc serve model.so [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002]
                        [--instances N] [--max-batch B] [--max-queue-delay-us D]
                        [--name NAME] [--address ADDR] [--threads T]

Triton runs through PyTriton (pip install nvidia-pytriton: its wheel carries the tritonserver
binary). Each instance is an aotc.Model of its own (a context per instance), bound as one
Triton model instance; inputs and outputs take the library's names, dtypes and shapes. A
model compiled with a batch dim (aotc --dim B=1..N on the first dim of every input and
output) gets Triton's dynamic batcher, which forms batches of up to --max-batch requests
(default: the dim's largest size); otherwise requests run one by one. Errors: a request
Triton cannot match against the model (name, dtype, rank, a fixed size) is refused by Triton;
one the library refuses (a size out of its dim range) gets aotc's message; the server keeps
serving both ways. SIGINT and SIGTERM stop it cleanly (exit status 0).
"""
import argparse
import os
import signal
import sys
import threading

_NUMPY_DTYPES = {"float32": "float32", "float16": "float16", "int64": "int64", "int32": "int32", "bool": "bool_"}


class ServeError(Exception):
    """A model or option that aotc serve cannot serve; the message says why."""


def _parser():
    ap = argparse.ArgumentParser(
        prog="aotc serve",
        description="Serve a model library compiled by aotc through NVIDIA Triton Inference Server (PyTriton).")
    ap.add_argument("model", help="the model library (.so) compiled by aotc")
    ap.add_argument("--name", help="the model's name in Triton (default: the library's file name without .so)")
    ap.add_argument("--address", default="127.0.0.1",
                    help="the address the HTTP, gRPC and metrics endpoints bind (default 127.0.0.1; "
                         "0.0.0.0 to serve other machines)")
    ap.add_argument("--http-port", type=int, default=8000)
    ap.add_argument("--grpc-port", type=int, default=8001)
    ap.add_argument("--metrics-port", type=int, default=8002)
    ap.add_argument("--instances", type=int, default=1,
                    help="model instances, each with its own aotc context, running requests in parallel")
    ap.add_argument("--max-batch", type=int, default=None,
                    help="the largest batch the dynamic batcher forms (needs a batch dim; default: the dim's "
                         "largest size; 0: no batching, requests one by one)")
    ap.add_argument("--max-queue-delay-us", type=int, default=100,
                    help="how long the dynamic batcher waits for more requests to fill a batch (default 100)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of each instance's runs (CPU libraries; default: the cores over the instances)")
    ap.add_argument("--weights", default=None, help="the external weights file of a library built with one")
    ap.add_argument("--exit-timeout", type=int, default=10,
                    help="seconds a stop waits for requests in flight and open connections (default 10)")
    return ap


def batch_dim(model):
    """The name of the model's batch dim, or None: a named dim that is the first dim of every
    input and output, whose range starts at 1 with a step of 1 (so that Triton's batcher may
    send any count of requests up to the largest)."""
    specs = list(model.inputs) + list(model.outputs)
    if not specs or not all(s.shape for s in specs):
        return None
    name = specs[0].shape[0]
    if not isinstance(name, str) or name not in model.dims:
        return None
    if not all(s.shape[0] == name for s in specs):
        return None
    r = model.dims[name]
    if r.min != 1 or r.multiple_of != 1:
        return None
    return name


def _triton_shape(spec, batched):
    """The spec's shape in Triton's terms: -1 for a dim that varies, the batch dim left out."""
    shape = spec.shape[1:] if batched else spec.shape
    return tuple(-1 if isinstance(d, str) else int(d) for d in shape)


def _tensors(specs, batched, what):
    import numpy as np
    from pytriton.model_config import Tensor
    tensors = []
    for s in specs:
        if s.dtype not in _NUMPY_DTYPES:
            raise ServeError(f"{what} '{s.name}' is {s.dtype}, which Triton's Python path cannot carry "
                             f"(numpy has no such type): compile the model with float32 {what}s")
        tensors.append(Tensor(name=s.name, dtype=getattr(np, _NUMPY_DTYPES[s.dtype]), shape=_triton_shape(s, batched)))
    return tensors


def serving_plan(model, max_batch):
    """How the model is served: (batch dim name or None, Triton's max batch size (0: none))."""
    dim = batch_dim(model)
    if max_batch is not None and max_batch < 0:
        raise ServeError(f"--max-batch must be >= 0, got {max_batch}")
    if dim is None:
        if max_batch:
            raise ServeError(f"--max-batch {max_batch}: the model has no batch dim (a named dim, 1..N, first in "
                             "every input and output: compile it with e.g. --input x:Bx3x224x224 --dim B=1..32)")
        return None, 0
    largest = model.dims[dim].max
    if max_batch is None:
        max_batch = largest
    if max_batch > largest:
        raise ServeError(f"--max-batch {max_batch} is larger than the batch dim's largest size: {dim} is "
                         f"{model.dims[dim].describe()}")
    return (dim, max_batch) if max_batch > 0 else (None, 0)


def _infer_function(model, batched):
    """The function Triton's instance calls: a list of requests in, a list of outputs out."""
    import numpy as np
    names = [s.name for s in model.inputs]
    out_names = [s.name for s in model.outputs]

    if model.device == "cuda":
        # A CUDA library takes CUDA torch tensors; Triton's Python path hands over host arrays.
        import torch
        device = model._torch_device

        def run(inputs):
            outs = model.run([torch.from_numpy(np.ascontiguousarray(inputs[n])).to(device) for n in names])
            return {n: o.cpu().numpy() for n, o in zip(out_names, outs)}
    else:
        def run(inputs):
            outs = model.run([np.ascontiguousarray(inputs[n]) for n in names])
            return {n: o for n, o in zip(out_names, outs)}

    if batched:
        from pytriton.decorators import batch

        @batch
        def infer(**inputs):
            return run(inputs)
        return infer

    def infer(requests):
        return [run(r) for r in requests]
    return infer


def check_ports(address, ports):
    """Refuses a port that another process holds, before Triton is started (Triton itself
    reports it only in its log, and PyTriton then waits for a server that has exited)."""
    import socket
    for what, port in ports:
        if not 0 < port < 65536:
            raise ServeError(f"--{what}-port must be 1..65535, got {port}")
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((address, port))
            except OSError as e:
                raise ServeError(f"cannot listen on {address}:{port} (--{what}-port): {e.strerror}") from None


# PyTriton 0.7's model instances after the first read their configuration from a Unix
# socket that the first one opens while they start; on a loaded machine one can connect
# between the socket's bind and listen and fail. Triton is then started again.
_START_ATTEMPTS = 3


def _instance_start_race(error):
    """What in a failed model load is that race (a short description), or None."""
    text = str(error)
    for needle in ("ConnectionRefusedError", "Timeout occurred while waiting for config file"):
        if needle in text and "get_config_from_handshake_server" in text:
            return needle
    return None


def serve(args):
    """Loads the model, starts Triton and serves until SIGINT or SIGTERM. Returns the exit
    status."""
    from . import _runtime
    try:
        from pytriton.model_config import DynamicBatcher, ModelConfig
        from pytriton.triton import Triton, TritonConfig
    except ImportError as e:
        raise ServeError(f"aotc serve needs PyTriton: pip install nvidia-pytriton ({e})") from None
    if args.instances < 1:
        raise ServeError(f"--instances must be >= 1, got {args.instances}")
    if args.exit_timeout < 0:
        raise ServeError(f"--exit-timeout must be >= 0, got {args.exit_timeout}")
    if args.max_queue_delay_us < 0:
        raise ServeError(f"--max-queue-delay-us must be >= 0, got {args.max_queue_delay_us}")
    ports = [("http", args.http_port), ("grpc", args.grpc_port), ("metrics", args.metrics_port)]
    if len({p for _, p in ports}) != len(ports):
        raise ServeError(f"the HTTP, gRPC and metrics ports must differ, got {[p for _, p in ports]}")
    check_ports(args.address, ports)
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.instances)
    models = [_runtime.Model(args.model, threads=threads, weights=args.weights) for _ in range(args.instances)]
    first = models[0]
    dim, max_batch = serving_plan(first, args.max_batch)
    batched = dim is not None
    name = args.name or os.path.basename(args.model).rsplit(".so", 1)[0]
    inputs = _tensors(first.inputs, batched, "input")
    outputs = _tensors(first.outputs, batched, "output")
    config = ModelConfig(batching=batched, max_batch_size=max_batch,
                         batcher=DynamicBatcher(max_queue_delay_microseconds=args.max_queue_delay_us))
    triton_config = TritonConfig(http_address=args.address, http_port=args.http_port,
                                 grpc_address=args.address, grpc_port=args.grpc_port,
                                 metrics_address=args.address, metrics_port=args.metrics_port,
                                 allow_gpu_metrics=first.device == "cuda", exit_on_error=True,
                                 exit_timeout_secs=args.exit_timeout)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for attempt in range(1, _START_ATTEMPTS + 1):
            with Triton(config=triton_config) as triton:
                try:
                    triton.bind(model_name=name, infer_func=[_infer_function(m, batched) for m in models],
                                inputs=inputs, outputs=outputs, config=config, strict=True)
                except Exception as e:  # noqa: BLE001 (tritonclient's InferenceServerException)
                    race = _instance_start_race(e)
                    if attempt == _START_ATTEMPTS or stop.is_set() or not race:
                        raise
                    print(f"aotc serve: a model instance did not start ({race}); starting Triton again",
                          flush=True)
                    continue  # leaving the with block stops this Triton
                how = f"dynamic batching up to {max_batch} on dim {dim}" if batched else "requests one by one"
                print(f"aotc serve: model '{name}' ({first.path}, {first.device}) ready: HTTP {args.address}:"
                      f"{args.http_port}, gRPC {args.address}:{args.grpc_port}, metrics {args.address}:"
                      f"{args.metrics_port}; {args.instances} instance(s), {how}", flush=True)
                while not stop.wait(0.5):
                    if not triton.is_alive():
                        raise ServeError("Triton Inference Server stopped unexpectedly")
            break
        print("aotc serve: stopped", flush=True)
        return 0
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for m in models:
            m.close()


def main(argv=None):
    args = _parser().parse_args(argv)
    from ._errors import AotcError
    try:
        from pytriton.exceptions import PyTritonError
    except ImportError:
        PyTritonError = ServeError
    try:
        return serve(args)
    except (ServeError, AotcError, PyTritonError, ValueError, OSError) as e:
        sys.stderr.write(f"aotc serve: error: {e}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
