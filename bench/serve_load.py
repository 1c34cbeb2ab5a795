"""Load test of aotc serve against the same Triton setup serving the model through torch.

    .venv/bin/python bench/serve_load.py [--model resnet18] [--concurrency 1 4 16]
        [--seconds 8] [--rounds 3] [--max-batch 8] [--results FILE]

The model (torchvision, random weights, 1x3x224x224 requests) is compiled by aotc with a batch
dim (--dim B=1..max-batch) and served four ways at once on loopback ports, each by NVIDIA
Triton Inference Server through PyTriton with one model instance using every core:
  - aotc serve, with Triton's dynamic batcher (up to --max-batch) and without it;
  - torch, the same module scripted, frozen and optimized for inference, bound in PyTriton
    the same two ways (this script's --torch-server mode).
Clients are gRPC (tritonclient) threads, each sending its next request when the last is
answered, for --seconds at each concurrency. Servers and concurrencies alternate within each
round; the table gives, per row, the median over rounds of the throughput (requests/s) and
of each round's p50 and p99 latency, and the range of the throughput. Every answer is checked
against torch's output for that request's input (relative L2 error <= 1e-4) in the first
round.
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torch_server(args):
    """Serves a TorchScript file through PyTriton as aotc serve serves a library."""
    import torch
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig
    torch.set_num_threads(os.cpu_count() or 1)
    module = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(args.torch_server).eval()))
    batched = args.max_batch > 0

    def run(x):
        with torch.inference_mode():
            return {"output0": module(torch.from_numpy(np.ascontiguousarray(x))).numpy()}

    if batched:
        @batch
        def infer(x):
            return run(x)
        shape = (3, 224, 224)
    else:
        def infer(requests):
            return [run(r["x"]) for r in requests]
        shape = (1, 3, 224, 224)
    stop = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.set())
    config = TritonConfig(http_address="127.0.0.1", http_port=args.http_port, grpc_address="127.0.0.1",
                          grpc_port=args.grpc_port, metrics_address="127.0.0.1", metrics_port=args.metrics_port,
                          exit_timeout_secs=5)
    with Triton(config=config) as triton:
        triton.bind(model_name="model", infer_func=infer,
                    inputs=[Tensor(name="x", dtype=np.float32, shape=shape)],
                    outputs=[Tensor(name="output0", dtype=np.float32, shape=(1000,) if batched else (1, 1000))],
                    config=ModelConfig(batching=batched, max_batch_size=args.max_batch,
                                       batcher=DynamicBatcher(max_queue_delay_microseconds=args.max_queue_delay_us)),
                    strict=True)
        triton.run()
        while not stop.wait(0.5):
            pass
    return 0


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Server:
    def __init__(self, label, command, name, workdir):
        self.label, self.name = label, name
        self.http, self.grpc, self.metrics = free_ports(3)
        self.log = open(os.path.join(workdir, f"server_{label.replace(' ', '_').replace(',', '')}.log"), "w")
        # aotc serve from this tree's package (python/), which runs this tree's build
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "python"),
                                                                        os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(command + ["--http-port", str(self.http), "--grpc-port", str(self.grpc),
                                                "--metrics-port", str(self.metrics)],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir,
                                     env=env)

    def wait_ready(self, timeout=300):
        import urllib.request
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label}: the server exited ({self.proc.returncode}); see {self.log.name}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/v2/models/{self.name}/ready", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"{self.label}: not ready after {timeout} s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def load(server, concurrency, seconds, inputs, expected, check):
    """concurrency gRPC clients for `seconds`; returns (requests/s, latencies in ms, wrong)."""
    import tritonclient.grpc as grpc
    latencies = [[] for _ in range(concurrency)]
    wrong = [0]
    deadline = [0.0]
    start_barrier = threading.Barrier(concurrency + 1)

    def client(t):
        c = grpc.InferenceServerClient(f"127.0.0.1:{server.grpc}")
        i = 0
        start_barrier.wait()
        while time.monotonic() < deadline[0]:
            k = (t * 7 + i) % len(inputs)
            x = inputs[k]
            inp = grpc.InferInput("x", list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            t0 = time.perf_counter()
            r = c.infer(server.name, [inp])
            latencies[t].append((time.perf_counter() - t0) * 1e3)
            if check:
                y = r.as_numpy("output0").reshape(expected[k].shape)
                if np.linalg.norm(y - expected[k]) > 1e-4 * np.linalg.norm(expected[k]):
                    wrong[0] += 1
            i += 1
        c.close()

    threads = [threading.Thread(target=client, args=(t,)) for t in range(concurrency)]
    for th in threads:
        th.start()
    deadline[0] = time.monotonic() + seconds
    t0 = time.monotonic()
    start_barrier.wait()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - t0
    flat = [v for per in latencies for v in per]
    return len(flat) / elapsed, flat, wrong[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--max-queue-delay-us", type=int, default=2000)
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "serve_load"))
    ap.add_argument("--aotc", default=os.path.join(ROOT, "build", "compiler", "aotc"))
    ap.add_argument("--results", default="", help="append the markdown table here")
    # the torch server (started by this script)
    ap.add_argument("--torch-server", default="", help=argparse.SUPPRESS)
    ap.add_argument("--http-port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--grpc-port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--metrics-port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_server:
        return torch_server(args)

    import torch
    import torchvision
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)
    module = getattr(torchvision.models, args.model)().eval()
    pt = os.path.join(args.workdir, f"{args.model}.pt")
    so = os.path.join(args.workdir, f"{args.model}.so")
    torch.jit.save(torch.jit.script(module), pt)
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(pt):
        print(f"compiling {args.model} with a batch dim B=1..{args.max_batch} ...", flush=True)
        subprocess.run([args.aotc, pt, "-o", so, "--input", "x:Bx3x224x224:float32", "--dim",
                        f"B=1..{args.max_batch}"], check=True)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(8)]
    with torch.no_grad():
        expected = [module(torch.from_numpy(x)).numpy() for x in inputs]

    serve = [sys.executable, "-c", "import sys; sys.argv[0] = 'aotc'; from aotc import _cli; _cli.aotc()", "serve", so,
             "--name", "model", "--max-queue-delay-us", str(args.max_queue_delay_us)]
    me = [sys.executable, os.path.abspath(__file__), "--torch-server", pt,
          "--max-queue-delay-us", str(args.max_queue_delay_us)]
    configs = [("aotc, batching", serve + ["--max-batch", str(args.max_batch)]),
               ("torch, batching", me + ["--max-batch", str(args.max_batch)]),
               ("aotc, no batching", serve + ["--max-batch", "0"]),
               ("torch, no batching", me + ["--max-batch", "0"])]
    servers = [Server(label, command, "model", args.workdir) for label, command in configs]
    results = {}  # (label, concurrency) -> [(rps, p50, p99)]
    try:
        for s in servers:
            s.wait_ready()
        print(f"{len(servers)} servers ready; {os.cpu_count()} cores", flush=True)
        for s in servers:  # warm-up
            load(s, 1, 1.0, inputs, expected, False)
        for r in range(args.rounds):
            for c in args.concurrency:
                for s in (servers if r % 2 == 0 else servers[::-1]):
                    rps, lat, wrong = load(s, c, args.seconds, inputs, expected, r == 0)
                    if wrong:
                        raise RuntimeError(f"{s.label}: {wrong} wrong answers at concurrency {c}")
                    p50, p99 = np.percentile(lat, 50), np.percentile(lat, 99)
                    results.setdefault((s.label, c), []).append((rps, p50, p99))
                    print(f"round {r} concurrency {c:2} {s.label:18}: {rps:7.1f} req/s, p50 {p50:7.2f} ms, "
                          f"p99 {p99:7.2f} ms", flush=True)
    finally:
        for s in servers:
            s.stop()

    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "?")
    lines = [f"\n### {date}: {args.model}, 1x3x224x224 requests, {cpu}, {os.cpu_count()} cores; "
             f"{args.rounds} rounds x {args.seconds:g} s per row; max batch {args.max_batch}, queue delay "
             f"{args.max_queue_delay_us} us\n",
             "| concurrency | batching | aotc req/s [range] | torch req/s [range] | aotc / torch | "
             "aotc p50 / p99 ms | torch p50 / p99 ms |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in args.concurrency:
        for batching in ("batching", "no batching"):
            a, t = results[(f"aotc, {batching}", c)], results[(f"torch, {batching}", c)]

            def med(rows, i):
                return statistics.median(row[i] for row in rows)
            lines.append(f"| {c} | {'dynamic' if batching == 'batching' else 'none'} | {med(a, 0):.1f} "
                         f"[{min(x[0] for x in a):.1f}-{max(x[0] for x in a):.1f}] | {med(t, 0):.1f} "
                         f"[{min(x[0] for x in t):.1f}-{max(x[0] for x in t):.1f}] | "
                         f"**{med(a, 0) / med(t, 0):.2f}** | {med(a, 1):.1f} / {med(a, 2):.1f} | "
                         f"{med(t, 1):.1f} / {med(t, 2):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.results:
        with open(args.results, "a") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
