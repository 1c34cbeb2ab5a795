"""Test models for the frontend (control flow): scripted models whose loops, ifs,
lists, dicts and strings are decided by the input shapes, so that aotc unrolls and folds
them, and in-place updates through views. Same contract as models.py: each builder
returns (module, inputs) with seeded weights and inputs."""
import math
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoopAccumulate(nn.Module):
    """for i in range(x.size(1)) building a list, a loop over that list, int arithmetic."""

    def forward(self, x):
        outs: List[torch.Tensor] = []
        for i in range(x.size(1)):
            outs.append(x * float(i + 1))
        acc = x
        for t in outs:
            acc = acc + t
        total = 0
        for i in range(len(outs)):
            total += i * i
        step = 0
        for j in range(1, x.size(0) * 3, 2):  # a range with a start and a step
            step += j
        return torch.cat(outs, dim=1) / float(total + step), acc


class NestedShapeIfs(nn.Module):
    """Nested ifs on ranks and sizes, elif chains, and/or, shape tuples and floor division."""

    def forward(self, x):
        n, c = x.shape[0], x.shape[1]
        if x.dim() == 4:
            if c > 4:
                y = torch.relu(x)
            elif c == 3:
                y = x * 2.0
            else:
                y = x
        else:
            y = x - 1.0
        h = x.size(-1)
        if h % 2 == 0 and (n >= 1 or c < 0):
            y = y.reshape(n, c, x.size(2), h // 2, 2).sum(-1)
        else:
            y = y + 1.0
        if not (y.size(-1) == h):
            y = y * float(h) / 2.0
        return y


class WhileStatic(nn.Module):
    """while loops whose bounds the shapes decide, with break and continue."""

    def forward(self, x):
        i = 0
        y = x
        while i < 4:
            y = torch.tanh(y) + x
            i += 1
        k = x.size(0)
        halvings = 0
        while k > 1:
            k = k // 2
            halvings += 1
        for j in range(10):
            if j % 2 == 1:
                continue
            if j > 6:
                break
            y = y + float(j)
        return y * float(halvings)


class ModuleListLoop(nn.Module):
    """Loops over nn.ModuleList (with enumerate) and nn.ModuleDict; a dict output built
    with item assignment; list slicing, negative indexing, list concatenation."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(6, 2), "b": nn.Linear(6, 3)})

    def forward(self, x) -> Dict[str, torch.Tensor]:
        feats: List[torch.Tensor] = []
        for i, blk in enumerate(self.blocks):
            x = F.relu(blk(x)) + x * float(i)
            feats.append(x)
        out: Dict[str, torch.Tensor] = {}
        for name, head in self.heads.items():
            out[name] = head(feats[-1])
        later = feats[1:] + [feats[0]]
        out["feats"] = torch.cat(later, dim=1)
        if "a" in out:
            out["a"] = out["a"] * 2.0
        return out


class StringsAndTuples(nn.Module):
    """String formatting and tests, a tuple unpacked, a list comprehension over x.shape,
    a string attribute compared in forward, dict lookups with a default."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def forward(self, x) -> Tuple[torch.Tensor, torch.Tensor]:
        key = "n{}c{}".format(x.shape[0], x.shape[1])
        if key.startswith("n2") and self.mode in ["sum", "mean"]:
            y = x.sum(1, keepdim=True) if self.mode == "sum" else x.mean(1, keepdim=True)
        else:
            y = x
        t = (y, x.size(1), key)
        a, c, k = t
        sizes = [int(s) for s in x.shape]
        scale: Dict[str, float] = {"n2c5": 0.5}
        factor = scale.get(key, 3.0) + scale.get("missing", 0.25)
        parts = key.split("c")
        return a * float(c) + float(len(k)) + float(sizes[-1]) * factor, x + float(len(parts[0]))


class DictOfTensorsLoop(nn.Module):
    """A dict of run-time tensors iterated with items(), keys() and values(), and a list
    popped and reversed."""

    def forward(self, x, y):
        d: Dict[str, torch.Tensor] = {"x": x, "y": y}
        d["xy"] = x * y
        total = x * 0.0
        for k, v in d.items():
            if k != "y":
                total = total + v
        names: List[str] = []
        for k in d.keys():
            names.append(k)
        vals = list(d.values())
        last = vals.pop()
        vals.reverse()
        return total + last + vals[0] + float(len(names))


class InPlaceViews(nn.Module):
    """In-place updates of views that must land in the base: x.view(...).add_(...), through
    a transpose, a second update of the same view, and a view read after its base changed."""

    def forward(self, x):
        y = x * 1.0
        flat = y.view(-1)
        flat.add_(1.0)  # y sees it
        t = y.transpose(0, 1)
        t.mul_(2.0)  # y sees it
        t.mul_(0.5)
        z = y.view(y.size(0), -1)
        y.sub_(3.0)  # z, a view of y taken earlier, sees it
        return y + 0.0, z * 1.0, flat * 1.0


class InPlaceSliceViews(nn.Module):
    """Indexed assignment and in-place updates of select/slice/narrow views (x[:, 0] += 1,
    x[1:3] = ..., a view of a view), and a view taken before its base changes again."""

    def forward(self, x):
        y = x.clone()
        y[:, 0] += 1.0
        y[:, -1] *= 3.0
        y[1:3] = y[1:3] * 2.0
        row = y[0]  # a view: it sees the updates below
        y[2:, 1] -= 5.0
        y.narrow(1, 2, 2).mul_(0.5)
        y[0, 1:4] += 10.0
        return y, row * 1.0


class ShapeMath(nn.Module):
    """Shape arithmetic with math, min/max, **, % and // on sizes; traced, the sizes become
    prim::NumToTensor and tensor arithmetic that aotc evaluates at compile time."""

    def forward(self, x):
        n, c, h, w = x.shape
        scale = 1.0 / math.sqrt(float(c * w))
        half = int(math.ceil(h / 2))
        y = x.reshape(n, c * h * w // (half * 2 if h % 2 == 0 else h), -1) * scale
        k = max(min(h, w), 2) ** 2 - abs(h - w)
        return y + float(k) + float(half)


class OptionalArguments(nn.Module):
    """Arguments with defaults that no --input gives: they keep their default values."""

    def forward(self, x, mask: Optional[torch.Tensor] = None, scale: float = 2.0, square: bool = False):
        if mask is not None:
            x = x * mask
        if square:
            x = x * x
        return x * scale


def shape_math():
    torch.manual_seed(0)
    return torch.jit.script(ShapeMath().eval()), [("x", torch.randn(2, 3, 4, 5))]


def shape_math_traced():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 5)
    return torch.jit.trace(ShapeMath().eval(), (x,)), [("x", x)]


def optional_arguments():
    torch.manual_seed(0)
    return torch.jit.script(OptionalArguments().eval()), [("x", torch.randn(3, 4))]


def loop_accumulate():
    torch.manual_seed(0)
    return torch.jit.script(LoopAccumulate().eval()), [("x", torch.randn(2, 3, 5))]


def nested_shape_ifs():
    torch.manual_seed(0)
    return torch.jit.script(NestedShapeIfs().eval()), [("x", torch.randn(2, 3, 4, 6))]


def while_static():
    torch.manual_seed(0)
    return torch.jit.script(WhileStatic().eval()), [("x", torch.randn(5, 7))]


def module_list_loop():
    torch.manual_seed(0)
    return torch.jit.script(ModuleListLoop().eval()), [("x", torch.randn(4, 6))]


def strings_and_tuples():
    torch.manual_seed(0)
    return torch.jit.script(StringsAndTuples("sum").eval()), [("x", torch.randn(2, 5, 3))]


def dict_of_tensors_loop():
    torch.manual_seed(0)
    return torch.jit.script(DictOfTensorsLoop().eval()), [("x", torch.randn(3, 4)), ("y", torch.randn(3, 4))]


def inplace_views():
    torch.manual_seed(0)
    return torch.jit.script(InPlaceViews().eval()), [("x", torch.randn(4, 6))]


def inplace_slice_views():
    torch.manual_seed(0)
    return torch.jit.script(InPlaceSliceViews().eval()), [("x", torch.randn(4, 6))]


MODELS_FRONTEND = {
    "loop_accumulate": loop_accumulate,
    "nested_shape_ifs": nested_shape_ifs,
    "while_static": while_static,
    "module_list_loop": module_list_loop,
    "strings_and_tuples": strings_and_tuples,
    "dict_of_tensors_loop": dict_of_tensors_loop,
    "inplace_views": inplace_views,
    "optional_arguments": optional_arguments,
    "shape_math": shape_math,
    "shape_math_traced": shape_math_traced,
    "inplace_slice_views": inplace_slice_views,
}
