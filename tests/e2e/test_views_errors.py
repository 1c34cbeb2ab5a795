"""Compile errors of the view, indexing, sorting, unfolding, folding, embedding-bag and data-movement ops and of einsum
and the products lowered through it: what aotc cannot compile with static shapes (boolean
masks and repeats computed at run time) and invalid arguments must fail with a message that
names the op, the Python file:line and the reason, scripted and traced. Never a crash, never
a .so."""
import inspect
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, failures, finish, run_aotc, save_module  # noqa: E402


class MaskIndex(nn.Module):
    def forward(self, x, mask):
        return x[mask]  # LINE


class MaskPutValues(nn.Module):
    def forward(self, x, mask):
        y = x.clone()
        y[mask] = x[0, :2]  # LINE
        return y


class ScatterAddBool(nn.Module):
    def forward(self, x, mask):
        return mask.scatter_add(0, torch.zeros(1, 4, dtype=torch.long), mask[:1])  # LINE


class MaskedSelect(nn.Module):
    def forward(self, x, mask):
        return torch.masked_select(x, mask)  # LINE


class RuntimeRepeats(nn.Module):
    def forward(self, x, reps):
        return x.repeat_interleave(reps, dim=0)  # LINE


class BadChunk(nn.Module):
    def forward(self, x, mask):
        return x.chunk(0, dim=1)  # LINE


class BadSplit(nn.Module):
    def forward(self, x, mask):
        a, b = torch.split(x, [1, 1], dim=1)  # LINE
        return a + b


class EinsumTerms(nn.Module):
    def forward(self, x, y):
        return torch.einsum("ij,jk->ik", [x])  # LINE


class EinsumLetter(nn.Module):
    def forward(self, x, y):
        return torch.einsum("i1,jk->ik", x, y)  # LINE


class EinsumSizes(nn.Module):
    def forward(self, x, y):
        return torch.einsum("ij,jk->ik", x, x)  # LINE


class EinsumOutput(nn.Module):
    def forward(self, x, y):
        return torch.einsum("ij,jk->iz", x, y)  # LINE


class OneHotRuntimeClasses(nn.Module):
    def forward(self, x, ids):
        return torch.nn.functional.one_hot(ids)  # LINE


class TensordotSizes(nn.Module):
    def forward(self, x, y):
        return torch.tensordot(x, y, dims=([0], [0]))  # LINE


class NegBool(nn.Module):
    def forward(self, x):
        return torch.neg(x > 0)  # LINE


class TopkTooMany(nn.Module):
    def forward(self, x):
        return x.topk(5, dim=1)[0]  # LINE


# name -> (module, inputs, words the message must contain)
CASES = {
    "mask_index": (MaskIndex, [("x", torch.randn(3, 4)), ("mask", torch.rand(3, 4) > 0.5)],
                   ["aten::index", "boolean mask", "run time"]),
    "mask_put_values": (MaskPutValues, [("x", torch.randn(3, 4)),
                                        ("mask", torch.tensor([[True, False, False, True]] + [[False] * 4] * 2))],
                        ["aten::index_put", "single value", "run time"]),
    "scatter_add_bool": (ScatterAddBool, [("x", torch.randn(3, 4)), ("mask", torch.rand(3, 4) > 0.5)],
                         ["aten::scatter_add", "float32, int64 or int32", "got bool"]),
    "masked_select": (MaskedSelect, [("x", torch.randn(3, 4)), ("mask", torch.rand(3, 4) > 0.5)],
                      ["aten::masked_select", "shape depends on the mask"]),
    "runtime_repeats": (RuntimeRepeats, [("x", torch.randn(3, 4)), ("reps", torch.tensor([1, 2, 0]))],
                        ["aten::repeat_interleave", "computed at run time"]),
    "one_hot_classes": (OneHotRuntimeClasses, [("x", torch.randn(3, 4)), ("ids", torch.tensor([1, 2, 0]))],
                        ["aten::one_hot", "known only at run time", "pass num_classes"]),
}
# torch itself rejects invalid arguments when tracing; scripted, aotc must report them.
class UnfoldNoBlock(nn.Module):
    def forward(self, x):
        return torch.nn.functional.unfold(x, 5, padding=(1, 0))  # LINE


class FoldBlocks(nn.Module):  # (torch 2.11 scripts F.fold's call site without a source range)
    def forward(self, x):
        return torch._C._nn.col2im(x, [5, 5], [2, 2], [1, 1], [0, 0], [1, 1])  # LINE


class NuclearNorm(nn.Module):
    def forward(self, x):
        return torch.linalg.matrix_norm(x, ord="nuc")  # LINE


class SearchRows(nn.Module):
    def forward(self, x, y):
        return torch.searchsorted(x, y)  # LINE


class DiagEmbedDims(nn.Module):
    def forward(self, x):
        return torch.diag_embed(x, 0, 0, 2)  # LINE


class ScatterReduceMax(nn.Module):
    def forward(self, x):
        return x.scatter_reduce(0, torch.zeros(1, 4, dtype=torch.long), x, "max")  # LINE


class BagWeightsMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(10, 4))

    def forward(self, ids, offsets, w):
        return torch.nn.functional.embedding_bag(ids, self.weight, offsets, mode="mean",  # LINE
                                                 per_sample_weights=w)


class BagWeightsMax(nn.Module):  # the op itself, which F.embedding_bag's own check guards
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(10, 4))

    def forward(self, ids, offsets, w):
        return torch.embedding_bag(self.weight, ids, offsets, False, 2, False, w, False, None)[0]  # LINE


SCRIPT_ONLY = {
    "bad_chunk": (BadChunk, [("x", torch.randn(3, 4)), ("mask", torch.rand(3, 4) > 0.5)],
                  ["aten::chunk", "greater than 0"]),
    "bad_split": (BadSplit, [("x", torch.randn(3, 4)), ("mask", torch.rand(3, 4) > 0.5)],
                  ["aten::split", "do not sum"]),
    "einsum_terms": (EinsumTerms, [("x", torch.randn(3, 4)), ("y", torch.randn(4, 5))],
                     ["aten::einsum", "'ij,jk->ik'", "2 operand term(s) for 1 tensor(s)"]),
    "einsum_letter": (EinsumLetter, [("x", torch.randn(3, 4)), ("y", torch.randn(4, 5))],
                      ["aten::einsum", "'1' is not a subscript"]),
    "unfold_no_block": (UnfoldNoBlock, [("x", torch.randn(1, 2, 3, 4))],
                        ["aten::im2col", "spatial size (3, 4)", "leaves no sliding block"]),
    "fold_blocks": (FoldBlocks, [("x", torch.randn(1, 8, 10))],
                    ["aten::col2im", "10 blocks", "4 x 4 = 16"]),
    "nuclear_norm": (NuclearNorm, [("x", torch.randn(3, 4))],
                     ["aten::linalg_matrix_norm", "'nuc'", "singular values"]),
    "searchsorted_rows": (SearchRows, [("x", torch.randn(2, 5)), ("y", torch.randn(3, 4))],
                          ["aten::searchsorted", "[2, 5]", "[3, 4]", "same dims but the last"]),
    "diag_embed_dims": (DiagEmbedDims, [("x", torch.randn(2, 3))],
                        ["aten::diag_embed", "dim1=0, dim2=2"]),
    "bag_weights_mean": (BagWeightsMean, [("ids", torch.tensor([1, 2, 3, 4])), ("offsets", torch.tensor([0, 2])),
                                          ("w", torch.rand(4))],
                         ["the model raises", "per_sample_weights", "mode='sum'"]),
    "bag_weights_max": (BagWeightsMax, [("ids", torch.tensor([1, 2, 3, 4])), ("offsets", torch.tensor([0, 2])),
                                        ("w", torch.rand(4))],
                        ["aten::embedding_bag", "per_sample_weights", "mode 'sum'", "'max'"]),
    "einsum_sizes": (EinsumSizes, [("x", torch.randn(3, 4)), ("y", torch.randn(4, 5))],
                     ["aten::einsum", "subscript j has size 3 in operand 1", "size 4"]),
    "einsum_output": (EinsumOutput, [("x", torch.randn(3, 4)), ("y", torch.randn(4, 5))],
                      ["aten::einsum", "output subscript z does not appear"]),
    "tensordot_sizes": (TensordotSizes, [("x", torch.randn(3, 4)), ("y", torch.randn(4, 5))],
                        ["aten::tensordot", "[3, 4]", "[4, 5]", "differ in size"]),
    "neg_bool": (NegBool, [("x", torch.randn(3, 4))], ["aten::neg", "negation of a bool tensor", "logical_not"]),
    "scatter_reduce_max": (ScatterReduceMax, [("x", torch.randn(3, 4))],
                           ["aten::scatter_reduce", "\"amax\"", "got \"max\""]),
    "topk_too_many": (TopkTooMany, [("x", torch.randn(3, 4))], ["aten::topk", "k = 5 is out of range", "4 values"]),
}

def source_line(cls):
    lines, start = inspect.getsourcelines(cls)
    return start + next(i for i, text in enumerate(lines) if "# LINE" in text)


def check(name, cls, inputs, words, how, aotc, workdir):
    pt = save_module(cls().eval(), os.path.join(workdir, f"{name}_{how}.pt"),
                     None if how == "scripted" else tuple(t for _, t in inputs))
    so = os.path.join(workdir, f"{name}_{how}.so")
    if os.path.exists(so):
        os.remove(so)
    r = run_aotc(aotc, pt, so, inputs)
    where = f"{os.path.basename(__file__)}:{source_line(cls)}"
    problems = []
    if r.returncode != 1:
        problems.append(f"exit status {r.returncode}, expected 1")
    if os.path.exists(so):
        problems.append("a .so was written")
    for word in words + [where]:
        if word not in r.stderr:
            problems.append(f"message lacks '{word}'")
    print(f"{'FAIL' if problems else 'ok'}   {name} ({how}): {r.stderr.strip().splitlines()[0] if r.stderr else ''}")
    for p in problems:
        print(f"       {p}\n       stderr: {r.stderr.strip()}")
    if problems:
        failures.append(f"{name} ({how})")


def main():
    args = arg_parser().parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for how in ["scripted", "traced"]:
        for name, (cls, inputs, words) in CASES.items():
            check(name, cls, inputs, words, how, args.aotc, args.workdir)
    for name, (cls, inputs, words) in SCRIPT_ONLY.items():
        check(name, cls, inputs, words, "scripted", args.aotc, args.workdir)
    return finish("every view, indexing and einsum error names the op, the line and the reason")


if __name__ == "__main__":
    sys.exit(main())
