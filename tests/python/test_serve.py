"""aotc serve: model libraries behind NVIDIA Triton Inference Server (PyTriton), loopback only.

A model with a batch dim (x: BxSx8 float32 with S = 1..32, k: Bx4 int64; B = 1..16) is served
through `aotc serve` (the aotc command's dispatch in _cli.py) with dynamic batching: requests
over HTTP and gRPC (tritonclient) match torch (float outputs within a relative L2 error of
1e-4, integer ones exactly); Triton's model config says batching up to 16 and the library's
names and dtypes; a wrong shape, dtype, input name or batch size gets Triton's error, a size
out of the library's dim range gets aotc's, and the server keeps serving after each; 8 client
threads x 200 requests (batches 1..4, both protocols) are all correct; the health and
metrics endpoints answer; SIGTERM stops it with exit status 0. A model without a batch dim is
served request by request with 2 instances; --max-batch on it, a missing file, a bad option and
a port in use exit 2 with a message and start nothing.

usage: PYTHONPATH=python test_serve.py --workdir DIR
Exits 77 (skipped) without torch or without PyTriton (pip install nvidia-pytriton).
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

try:
    import torch
except ImportError:
    torch = None

from aotc import _paths

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import SKIP, arg_parser, compile_module, expect, finish, rel_l2  # noqa: E402

START_TIMEOUT = 120  # seconds for Triton to load the model


def make_modules():
    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Linear(8, 24)
            self.b = torch.nn.Linear(24, 8)

        def forward(self, x, k):
            y = self.b(torch.relu(self.a(x))).mean(dim=1) + k.sum(dim=1, keepdim=True).float()
            return y, k * 2 + 1

    class Static(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(1)
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x)).amax(dim=(2, 3))

    return Pooled().eval(), Static().eval()


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Server:
    """`aotc serve` in a subprocess on free loopback ports, its output in a log file."""

    def __init__(self, so, workdir, tag, *extra):
        self.name = os.path.basename(so)[:-3]
        self.http, self.grpc, self.metrics = free_ports(3)
        self.log_path = os.path.join(workdir, f"serve_{tag}.log")
        self.log = open(self.log_path, "w")
        # The aotc command of the package (_cli.aotc) with "serve" first, as a user runs it.
        code = "import sys; sys.argv[0] = 'aotc'; from aotc import _cli; _cli.aotc()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", so, "--http-port", str(self.http), "--grpc-port", str(self.grpc),
             "--metrics-port", str(self.metrics), *extra],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)

    def url(self, path, port=None):
        return f"http://127.0.0.1:{port or self.http}{path}"

    def status(self, path, port=None):
        try:
            with urllib.request.urlopen(self.url(path, port), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, ""
        except OSError:
            return None, ""

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            # The server is ready before its model is loaded: the model's own endpoint.
            if self.status(f"/v2/models/{self.name}/ready")[0] == 200:
                return True
            time.sleep(0.5)
        return False

    def tail(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def infer(protocol, port, model, arrays, outputs):
    """arrays: name -> numpy array. Returns name -> numpy output (raises the client's error)."""
    if protocol == "http":
        import tritonclient.http as client
    else:
        import tritonclient.grpc as client
    from tritonclient.utils import np_to_triton_dtype
    c = client.InferenceServerClient(f"127.0.0.1:{port}")
    inputs = []
    for name, a in arrays.items():
        i = client.InferInput(name, list(a.shape), np_to_triton_dtype(a.dtype))
        i.set_data_from_numpy(a)
        inputs.append(i)
    r = c.infer(model, inputs)
    return {o: r.as_numpy(o) for o in outputs}


def request(rng, batch, seq):
    return {"x": rng.standard_normal((batch, seq, 8)).astype(np.float32),
            "k": rng.integers(-50, 50, (batch, 4)).astype(np.int64)}


def matches(module, arrays, got):
    with torch.no_grad():
        y, k2 = module(torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["k"]))
    return (got["output0"].shape == tuple(y.shape) and rel_l2(got["output0"], y.numpy()) <= 1e-4 and
            np.array_equal(got["output1"], k2.numpy()))


def expect_error(name, fn, *needles):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (tritonclient's InferenceServerException)
        text = str(e)
        return expect(name, all(n in text for n in needles), text[:300])
    return expect(name, False, "no error")


def check_batched(pooled, so, workdir):
    import tritonclient.http as http_client
    server = Server(so, workdir, "batched", "--max-queue-delay-us", "500")
    try:
        if not expect("batched server ready", server.wait_ready(), server.tail()):
            return
        rng = np.random.default_rng(0)
        for protocol, port in (("http", server.http), ("grpc", server.grpc)):
            for batch, seq in ((1, 1), (3, 7), (16, 32)):
                a = request(rng, batch, seq)
                got = infer(protocol, port, "pooled", a, ["output0", "output1"])
                expect(f"{protocol} batch {batch} S={seq} matches torch", matches(pooled, a, got))
        config = http_client.InferenceServerClient(f"127.0.0.1:{server.http}").get_model_config("pooled")
        ins = {i["name"]: (i["data_type"], i["dims"]) for i in config["input"]}
        expect("config: max_batch_size 16, dynamic batching", config["max_batch_size"] == 16 and
               "dynamic_batching" in config, config.get("max_batch_size"))
        expect("config: the library's names, dtypes and dims", ins == {"x": ("TYPE_FP32", [-1, 8]),
                                                                       "k": ("TYPE_INT64", [4])}, ins)
        good = request(rng, 2, 5)
        # Triton's own checks
        expect_error("wrong shape refused", lambda: infer("http", server.http, "pooled",
                                                          {"x": good["x"][:, :, :7].copy(), "k": good["k"]},
                                                          ["output0"]), "unexpected shape", "'x'")
        expect_error("wrong dtype refused", lambda: infer("http", server.http, "pooled",
                                                          {"x": good["x"].astype(np.float64), "k": good["k"]},
                                                          ["output0"]), "FP64", "FP32")
        expect_error("wrong input name refused", lambda: infer("grpc", server.grpc, "pooled",
                                                               {"y": good["x"], "k": good["k"]}, ["output0"]),
                     "'y'")
        expect_error("batch over 16 refused", lambda: infer("http", server.http, "pooled",
                                                            request(rng, 17, 2), ["output0"]), "batch-size")
        # aotc's check: S is 1..32 in the library; Triton only knows "-1"
        expect_error("a size out of the library's range gets aotc's message",
                     lambda: infer("http", server.http, "pooled", request(rng, 2, 33), ["output0"]),
                     "33", "1..32")
        got = infer("http", server.http, "pooled", good, ["output0", "output1"])
        expect("still serving after the errors", matches(pooled, good, got))

        # 8 client threads x 200 requests, batches 1..4, both protocols
        bad = []
        counts = [0] * 8

        def client(t):
            r = np.random.default_rng(100 + t)
            protocol, port = ("http", server.http) if t % 2 == 0 else ("grpc", server.grpc)
            for _ in range(200):
                a = request(r, int(r.integers(1, 5)), int(r.integers(1, 33)))
                try:
                    if matches(pooled, a, infer(protocol, port, "pooled", a, ["output0", "output1"])):
                        counts[t] += 1
                    else:
                        bad.append(f"thread {t}: wrong result")
                except Exception as e:  # noqa: BLE001
                    bad.append(f"thread {t}: {str(e)[:200]}")
        threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.monotonic() - start
        expect(f"8 threads x 200 requests all correct ({seconds:.1f} s)", sum(counts) == 1600 and not bad, bad[:3])

        expect("health: live", server.status("/v2/health/live")[0] == 200)
        expect("health: model ready", server.status("/v2/models/pooled/ready")[0] == 200)
        code, text = server.status("/metrics", server.metrics)
        served = [line for line in text.splitlines() if line.startswith('nv_inference_request_success{model="pooled"')]
        count = float(served[0].rsplit(" ", 1)[1]) if served else 0
        expect("metrics: successful requests counted", code == 200 and count >= 1600 + 7, served)
    finally:
        status = server.stop()
        log = server.tail()
    expect("SIGTERM: exit status 0", status == 0, (status, log[-500:]))
    expect("SIGTERM: says it stopped", "aotc serve: stopped" in log, log[-500:])
    expect("SIGTERM: the port is free again", Server.__new__(Server).status("/v2/health/ready",
                                                                          server.http)[0] is None)


def check_static(static, so, workdir):
    import tritonclient.http as http_client
    server = Server(so, workdir, "static", "--instances", "2")
    try:
        if not expect("static server ready", server.wait_ready(), server.tail()):
            return
        config = http_client.InferenceServerClient(f"127.0.0.1:{server.http}").get_model_config("static")
        expect("static: no batching, 2 instances", config["max_batch_size"] == 0 and
               sum(g["count"] for g in config["instance_group"]) == 2, config.get("instance_group"))
        x = np.random.default_rng(3).standard_normal((1, 3, 9, 9)).astype(np.float32)
        got = infer("grpc", server.grpc, "static", {"x": x}, ["output0"])["output0"]
        with torch.no_grad():
            want = static(torch.from_numpy(x)).numpy()
        expect("static: gRPC result matches torch", got.shape == want.shape and rel_l2(got, want) <= 1e-4)
        expect_error("static: a batch of 2 refused", lambda: infer("http", server.http, "static",
                                                                   {"x": np.zeros((2, 3, 9, 9), np.float32)},
                                                                   ["output0"]), "unexpected shape")
    finally:
        status = server.stop()
    expect("static: SIGTERM exit status 0", status == 0, status)


def run_refused(workdir, *args):
    code = "import sys; sys.argv[0] = 'aotc'; from aotc import _cli; _cli.aotc()"
    return subprocess.run([sys.executable, "-c", code, "serve", *args], capture_output=True, text=True,
                          cwd=workdir, timeout=120)


def main():
    args = arg_parser(aotc=False).parse_args()
    if torch is None:
        print("SKIP: no torch")
        return SKIP
    try:
        import pytriton  # noqa: F401
        import tritonclient.grpc  # noqa: F401
        import tritonclient.http  # noqa: F401
    except ImportError as e:
        print(f"SKIP: no PyTriton ({e}): pip install nvidia-pytriton")
        return SKIP
    os.makedirs(args.workdir, exist_ok=True)
    pooled, static = make_modules()
    aotc = _paths.aotc_executable()
    pooled_so = compile_module(aotc, pooled, os.path.join(args.workdir, "pooled.so"),
                               ["x:BxSx8:float32", "k:Bx4:int64"], dims=["B=1..16", "S=1..32"])
    static_so = compile_module(aotc, static, os.path.join(args.workdir, "static.so"),
                               [("x", torch.zeros(1, 3, 9, 9))])
    check_batched(pooled, pooled_so, args.workdir)
    check_static(static, static_so, args.workdir)

    r = run_refused(args.workdir, static_so, "--max-batch", "4")
    expect("--max-batch without a batch dim: exit 2, says why",
           r.returncode == 2 and "no batch dim" in r.stderr, (r.returncode, r.stderr[-300:]))
    r = run_refused(args.workdir, os.path.join(args.workdir, "missing.so"))
    expect("a missing library: exit 2, names it", r.returncode == 2 and "missing.so" in r.stderr,
           (r.returncode, r.stderr[-300:]))
    r = run_refused(args.workdir, static_so, "--instances", "0")
    expect("--instances 0: exit 2", r.returncode == 2 and "--instances" in r.stderr, (r.returncode, r.stderr[-300:]))
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    start = time.monotonic()
    r = run_refused(args.workdir, static_so, "--grpc-port", str(port))
    busy.close()
    expect("a port in use: exit 2 at once, names the port",
           r.returncode == 2 and str(port) in r.stderr and "--grpc-port" in r.stderr and
           time.monotonic() - start < 60, (r.returncode, r.stderr[-300:]))
    return finish("aotc serve answers over HTTP and gRPC like torch")


if __name__ == "__main__":
    sys.exit(main())
