"""Models compiled once for a range of sizes (aotc --dim), run by aotc-run at many sizes and
compared with torch there:
- a BERT-style encoder (ids and an attention mask, both [B, S]) for B=1..32, S=1..512, at
  (1, 1), (1, 7), (3, 128), (8, 384) and (32, 512);
- resnet18, mobilenet_v2 and efficientnet_b0 for N=1..64 at N = 1, 3, 17 and 64;
- an LSTM over a sequence of T=1..40 steps;
- a graph network's aggregations (index_add, scatter_reduce) over E=1..600 edges;
- a view that needs S to be a multiple of 4: a clear run-time error for another S;
- ones_like / new_zeros of a [B, S] input, under 64 KiB at small sizes and over it at the
  largest (a static build makes small ones at compile time; a --dim build must not);
- sizes out of range refused, naming the dim;
- contexts for smaller largest sizes (aotc-run --max-dim: aotc_context_options.dim_limits):
  less memory (--info), the same results up to the limit, a clear refusal above it;
- compile errors: a branch on a dim (naming the line and the dim), a dim without --dim.

--target cuda (on a GPU machine: scripts/gpu_dynamic.sh) compiles the same models for CUDA
and runs them there, but for the LSTM (the CUDA target has no recurrent op yet).
Exit status 77 (meson's skip) without numpy or torchvision."""
import os
import subprocess
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_run_dynamic as harness  # noqa: E402  (Runner, np)
from common import SKIP, arg_parser, expect, finish  # noqa: E402
from models_sequence import BertLayer  # noqa: E402


class BertStyle(nn.Module):
    """Word and learned position embeddings (positions 0..S-1), LayerNorm, 2 post-norm
    layers whose attention takes the [B, S] mask (True = attend)."""

    def __init__(self, vocab=100, d=48, heads=4, ff=96, layers=2, max_len=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d, heads, ff) for _ in range(layers)])

    def forward(self, ids, mask):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.ln(self.word(ids) + self.position(positions))
        attn_mask = mask.view(mask.size(0), 1, 1, mask.size(1))
        for layer in self.layers:
            x = layer(x, attn_mask)
        return x


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1]), y


class GraphAggregate(nn.Module):
    """A graph network's aggregations over E edges (index_add, scatter_reduce mean and amax
    with an expanded index): E short (a line a thread on CUDA) and long (sorted)."""

    def forward(self, x, src, dst):
        index = dst.unsqueeze(1).expand(-1, x.shape[1])
        summed = torch.zeros_like(x).index_add_(0, dst, x[src])
        mean = x.scatter_reduce(0, index, x[src] * 2.0, "mean", include_self=False)
        return summed + mean + x.scatter_reduce(0, index, x[src], "amax")


class Quads(nn.Module):
    """Takes the S rows 4 at a time: S must be a multiple of 4."""

    def forward(self, x):
        b, s, d = x.shape
        return x.view(b, s // 4, 4 * d).sum(1)


class SizedFactories(nn.Module):
    def forward(self, ids):
        ones = torch.ones_like(ids)
        zeros = ids.new_zeros((ids.size(0), ids.size(1)))
        return (ids * ones + zeros).float() * 0.5


class Branch(nn.Module):
    def forward(self, x):
        if x.size(1) > 40:
            return x * 2.0
        return x + 1.0


def bert_inputs(batch, seq, generator):
    ids = torch.randint(1, 100, (batch, seq), generator=generator)
    mask = torch.rand(batch, seq, generator=generator) > 0.3
    mask[:, 0] = True  # every row attends somewhere
    return {"ids": ids.numpy(), "mask": mask.numpy()}


def context_bytes(runner, so, *limits):
    """The context memory aotc-run --info reports for one thread, with --max-dim limits."""
    args = [a for limit in limits for a in ("--max-dim", limit)]
    result = runner.run(so, "--info", *args)
    for line in result.stdout.splitlines():
        if line.startswith("context memory: "):
            return int(line.split()[2])
    expect(f"{os.path.basename(so)} --info {' '.join(args)}", False, (result.returncode, result.stderr))
    return None


def check_limited(runner, name, so, limits, smaller, runs, refused):
    """A context with --max-dim limits holds less memory than the model's largest (smaller:
    whether it must be strictly less), runs every (label, module, arrays) of runs like torch,
    and refuses refused (label, arrays, words) above its limits."""
    extra = [a for limit in limits for a in ("--max-dim", limit)]
    full, limited = context_bytes(runner, so), context_bytes(runner, so, *limits)
    expect(f"{name} with {', '.join(limits)}: context memory {limited} {'<' if smaller else '<='} {full}",
           full is not None and limited is not None and (limited < full if smaller else limited <= full))
    for label, module, arrays in runs:
        runner.check_run(f"{name} with {', '.join(limits)} at {label}", so, module, arrays,
                         f"{name}_limited_{label}".replace(" ", "").replace(",", "_").replace("=", ""), extra)
    for label, arrays, words in refused:
        runner.check_fails(f"{name} with {', '.join(limits)} refuses {label}", so, arrays,
                           words + ["dim_limits"], f"{name}_limited_refused", extra)


def compile_fails(runner, name, module, inputs, dims, words):
    """aotc refuses the model: a non-zero exit, a message holding words, no NAME.so."""
    result = subprocess.run(runner.aotc_command(name, module, inputs, dims), capture_output=True, text=True)
    ok = result.returncode != 0 and all(w in result.stderr for w in words) and \
        not os.path.exists(runner.path(name + ".so"))
    expect(name, ok, (result.returncode, result.stderr))


def main():
    ap = arg_parser(aotc_run=True)
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    if harness.np is None:
        print("numpy is not installed: skipped")
        return SKIP
    try:
        import torchvision
    except ImportError:
        print("torchvision is not installed: skipped")
        return SKIP
    np = harness.np
    os.makedirs(args.workdir, exist_ok=True)
    runner = harness.Runner(args)
    generator = torch.Generator().manual_seed(35)

    torch.manual_seed(35)
    bert = BertStyle().eval()
    so = runner.compile("bert", bert, ["ids:BxS:int64", "mask:BxS:bool"], ["B=1..32", "S=1..512"])
    info = runner.info(so)
    expect("bert --info names B and S with their ranges",
           "ids: int64 [B, S] with B in 1..32, S in 1..512" in info and "[B, S, 48]" in info, info)
    for batch, seq in [(1, 1), (1, 7), (3, 128), (8, 384), (32, 512)]:
        runner.check_run(f"bert at B={batch}, S={seq}", so, bert, bert_inputs(batch, seq, generator),
                         f"bert_{batch}_{seq}")
    runner.check_fails("bert refuses B=33", so, bert_inputs(33, 4, generator), ["B = 33", "1..32"], "bert_b33")
    runner.check_fails("bert refuses S=513", so, bert_inputs(1, 513, generator), ["S = 513", "1..512"],
                       "bert_s513")
    mismatch = bert_inputs(2, 5, generator)
    mismatch["mask"] = bert_inputs(2, 6, generator)["mask"]
    runner.check_fails("bert refuses ids and mask of two lengths", so, mismatch, ["S = 6", "S = 5"], "bert_s56")
    check_limited(runner, "bert", so, ["B=8", "S=128"], True,
                  [(f"B={b}, S={s}", bert, bert_inputs(b, s, generator)) for b, s in [(8, 128), (3, 77), (1, 1)]],
                  [("S=129", bert_inputs(2, 129, generator), ["S = 129", "above 128"]),
                   ("B=9", bert_inputs(9, 4, generator), ["B = 9", "above 8"])])
    check_limited(runner, "bert", so, ["S=1"], True, [("B=32, S=1", bert, bert_inputs(32, 1, generator))],
                  [("S=2", bert_inputs(1, 2, generator), ["S = 2", "above 1"])])
    for bad, words in [("S=0", ["S max 0", "1..512"]), ("S=513", ["S max 513"]), ("Q=3", ["no dim 'Q'", "B, S"])]:
        result = runner.run(so, "--info", "--max-dim", bad)
        expect(f"bert refuses --max-dim {bad}", result.returncode == 1 and all(w in result.stderr for w in words),
               (result.returncode, result.stderr))

    factories = SizedFactories().eval()
    so = runner.compile("factories", factories, ["ids:BxS:int64"], ["B=1..32", "S=1..512"])
    for batch, seq in [(1, 1), (3, 77), (32, 512)]:
        ids = torch.randint(0, 100, (batch, seq), generator=generator).numpy()
        runner.check_run(f"factories at B={batch}, S={seq}", so, factories, {"ids": ids},
                         f"factories_{batch}_{seq}")

    # efficientnet_b0: on CUDA its depthwise layers take the input-SiLU tiles, which pool as
    # they store, at N = 17 and 64, and the register kernels and a pooling after them at
    # N = 1 and 3 (grids too small to fill the GPU), in one library; on the CPU its
    # squeeze-and-excitation layers are GEMMs with a row per image
    # (single_pixel_conv_to_gemm.cpp), a matrix-vector product at N = 1.
    for name in ["resnet18", "mobilenet_v2", "efficientnet_b0"]:
        torch.manual_seed(36)
        model = getattr(torchvision.models, name)(weights=None).eval()
        so = runner.compile(name, model, ["x:Nx3x112x112"], ["N=1..64"])
        for n in [1, 3, 17, 64]:
            x = torch.randn(n, 3, 112, 112, generator=generator).numpy()
            runner.check_run(f"{name} at N={n}", so, model, {"x": x}, f"{name}_{n}")
        check_limited(runner, name, so, ["N=3"], True,
                      [(f"N={n}", model, {"x": torch.randn(n, 3, 112, 112, generator=generator).numpy()})
                       for n in [3, 2]],
                      [("N=4", {"x": np.zeros((4, 3, 112, 112), np.float32)}, ["N = 4", "above 3"])])

    torch.manual_seed(37)
    lstm = Lstm().eval()
    if args.target == "cpu":
        so = runner.compile("lstm", lstm, ["x:2xTx16"], ["T=1..40"])
        for steps in [1, 2, 9, 40]:
            x = torch.randn(2, steps, 16, generator=generator).numpy()
            runner.check_run(f"lstm at T={steps}", so, lstm, {"x": x}, f"lstm_{steps}")
        check_limited(runner, "lstm", so, ["T=9"], False,
                      [(f"T={t}", lstm, {"x": torch.randn(2, t, 16, generator=generator).numpy()}) for t in [9, 1]],
                      [("T=10", {"x": np.zeros((2, 10, 16), np.float32)}, ["T = 10", "above 9"])])
    else:
        print("lstm: not for --target cuda (the CUDA target has no recurrent op)")

    graph = GraphAggregate().eval()
    so = runner.compile("graph", graph, ["x:50x8", "src:E:int64", "dst:E:int64"], ["E=1..600"])
    for edges in [1, 20, 33, 600]:
        feeds = {"x": torch.randn(50, 8, generator=generator).numpy(),
                 "src": torch.randint(0, 50, (edges,), generator=generator).numpy(),
                 "dst": torch.randint(0, 50 if edges > 20 else 4, (edges,), generator=generator).numpy()}
        runner.check_run(f"graph aggregation at E={edges}", so, graph, feeds, f"graph_{edges}")

    quads = Quads().eval()
    so = runner.compile("quads", quads, ["x:BxSx8"], ["B=1..4", "S=1..64"])
    info = runner.info(so)
    expect("quads --info says S is a multiple of 4", "multiple of 4" in info, info)
    for batch, seq in [(1, 4), (3, 12), (4, 64)]:
        x = torch.randn(batch, seq, 8, generator=generator).numpy()
        runner.check_run(f"quads at B={batch}, S={seq}", so, quads, {"x": x}, f"quads_{batch}_{seq}")
    runner.check_fails("quads refuses S=6", so, {"x": np.zeros((2, 6, 8), np.float32)},
                       ["S = 6", "multiple of 4", "aten::view"], "quads_6")
    # A limit between two multiples of the step: the largest multiple below it.
    check_limited(runner, "quads", so, ["S=30"], False,
                  [("B=4, S=28", quads, {"x": torch.randn(4, 28, 8, generator=generator).numpy()})],
                  [("S=32", {"x": np.zeros((1, 32, 8), np.float32)}, ["S = 32", "above 28"])])

    compile_fails(runner, "branch on a dim", Branch(), ["x:2xT"], ["T=1..64"],
                  ["if x.size(1) > 40", "T"])
    compile_fails(runner, "dim without --dim", Branch(), ["x:2xT"], [], ["--dim T=MIN..MAX"])
    return finish("every dynamic model matches torch")


if __name__ == "__main__":
    sys.exit(main())
