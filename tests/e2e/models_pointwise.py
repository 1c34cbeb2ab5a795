"""Pointwise test models: dtypes and type promotion, arithmetic, math functions,
comparisons and logic, where/masked_fill, activations, casts and reductions. Each model
exists scripted and traced (the two produce different overloads and constants). Inputs
include int64, int32 and bool tensors; integer and bool outputs must match torch exactly."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Arithmetic(nn.Module):
    """Float arithmetic with broadcasting, scalars, alpha, rounding modes, pow in its
    three forms, math functions, clamp with number and tensor bounds, in-place updates of
    intermediates."""

    def forward(self, x, y):
        pos = x.abs() + 0.25                      # [3, 5, 7], away from 0
        den = y.abs() + 0.5                       # [5, 1]
        a = torch.add(x, y, alpha=2.5) - torch.sub(x, y, alpha=0.5)
        b = 1 - x + (2.0 - y) * 3                 # rsub with scalars
        c = x / den + torch.div(x * 4, den, rounding_mode="trunc") + torch.div(x * 4, den, rounding_mode="floor")
        d = torch.floor_divide(x * 5, den) + torch.remainder(x * 5, den) + torch.fmod(x * 5, den)
        e = x.pow(2) + pos.pow(2.5) + torch.pow(2.0, x) + pos.pow(y) + x ** 3
        f = -x + x.abs() + pos.reciprocal() + pos.sqrt() + pos.rsqrt() + x.exp() + torch.exp2(x)
        g = pos.log() + pos.log2() + pos.log10() + torch.log1p(pos) + torch.expm1(x)
        h = x.sin() + x.cos() + torch.tan(x * 0.5) + x.tanh() + x.sigmoid() + torch.erf(x)
        r = (x * 3).floor() + (x * 3).ceil() + (x * 3).round() + (x * 3).trunc() + x.sign() + x.square()
        k = x.clamp(-0.5, 0.5) + x.clamp(min=-0.2) + x.clamp(max=0.1) + torch.clamp_min(x, 0.3) + torch.clamp_max(x, -0.3)
        m = torch.clamp(x, min=y * 0.5, max=y * 0.5 + 0.3) + torch.minimum(x, y) + torch.maximum(x, y)
        n = torch.addcmul(x, x, y, value=0.5) + torch.addcdiv(x, x, den, value=-2) + torch.lerp(x, y, 0.3)
        n = n + torch.atan2(x, y) + torch.lerp(x, y, torch.sigmoid(x))
        z = x * 2
        z.add_(y)
        z.mul_(0.5)
        z.clamp_(min=-1.0)
        z.sub_(y, alpha=2)
        z.div_(den)
        z.neg_()
        return a, b, c, d, e, f, g, h, r, k, m, n, z


class Dtypes(nn.Module):
    """int64 ids, int32 counts, a bool mask and a float tensor: promotion, integer
    arithmetic, comparisons, logic, where/masked_fill, casts, integer reductions."""

    def forward(self, ids, counts, mask, x):
        other = ids > 3
        i1 = ids + 1
        i2 = ids * 2 - counts                    # int32 with int64 -> int64
        i3 = ids // 3 + ids % 5 + torch.fmod(ids - 7, 3) + torch.div(ids - 7, 2, rounding_mode="trunc")
        i4 = counts * 3 + 1                      # stays int32
        i5 = ids.abs() + (-ids) + ids.sign() + torch.clamp(ids, 2, 6) + ids.pow(2) + torch.square(counts)
        f1 = ids / 2 + ids * 0.5 + x * ids + counts / counts.clamp(min=1)
        f2 = ids.float() * x + counts.to(torch.float32) + mask.float() + ids.sqrt()
        b1 = (ids == 3) | (x > 0.5) & ~mask
        b2 = mask ^ other
        b3 = torch.logical_and(mask, other) | torch.logical_or(ids < 2, x <= -0.5) | torch.logical_xor(mask, x >= 0)
        b4 = torch.logical_not(ids) | (counts != 2) & (ids.eq(counts)) | ids.ge(4)
        b5 = mask + mask                          # bool + bool -> bool
        i6 = mask + 1                             # bool + int -> int64
        i7 = mask.long() * ids + ids.masked_fill(mask, -1) + torch.where(mask, ids, 0) + ids.bitwise_and(6)
        i8 = torch.bitwise_or(ids, counts) + torch.bitwise_xor(ids, 5) + torch.bitwise_not(ids)
        f3 = x.masked_fill(~mask, -1e4) + torch.where(mask, x, 0.5) + torch.where(other, 1.5, x)
        f4 = torch.where(mask, ids, x)            # int64 and float32 -> float32
        f4 = f4 + torch.where(mask, 2.0, -1.0) + x.type_as(x) + (x > 0).type_as(x)
        casts = (x * 10).long() + (x * 10).int() + x.to(torch.bool) + ids.to(torch.int32)
        sums = ids.sum() + mask.sum(1).sum() + counts.sum(dim=0, keepdim=True).sum()
        red = mask.any().long() + mask.all().long() + other.any().long() + mask.any(dim=1).sum() + mask.all(0).sum()
        cum = ids.cumsum(1) + mask.cumsum(dim=-1) + counts.cumsum(0)
        mx = ids.max(dim=1)
        amx = ids.amax(dim=-1) + counts.amin(0).sum() + ids.min() + counts.max()
        arg = x.argmax(dim=1) + x.argmin(dim=0, keepdim=True).sum() + ids.argmax() + x.argmin()
        pr = (counts.clamp(1, 3)).prod(1) + ids.prod(0, keepdim=True).sum()
        z = ids * 1
        z.add_(counts)
        z.masked_fill_(mask, 7)
        z.mul_(3)
        w = x * 1
        w.masked_fill_(mask, 0.25)
        w.add_(ids)
        fl = x.clone()
        fl.eq_(0.5)
        return (i1, i2, i3, i4, i5, f1, f2, b1, b2, b3, b4, b5, i6, i7, i8, f3, f4, casts, sums, red, cum,
                mx[0], mx[1], amx, arg, pr, z, w, fl, torch.isnan(x.log()), torch.isinf(1 / x), torch.isfinite(x.log()))


class Activations2(nn.Module):
    """Activations added for the pointwise family, on odd shapes; in-place forms on
    intermediates."""

    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU(6, init=0.1)
        self.prelu1 = nn.PReLU()
        with torch.no_grad():
            self.prelu.weight.copy_(torch.linspace(-0.5, 0.5, 6))

    def forward(self, x):
        outs = [F.elu(x), F.elu(x, alpha=0.7), F.selu(x), F.celu(x, alpha=1.3), F.softplus(x),
                F.softplus(x, beta=2.0, threshold=1.0), F.mish(x), F.logsigmoid(x), self.prelu(x), self.prelu1(x),
                F.threshold(x, 0.1, -2.0), F.softsign(x), F.tanhshrink(x), F.hardshrink(x, 0.3),
                F.softshrink(x, 0.2), F.gelu(x, approximate="tanh"), F.gelu(x)]
        y = outs[0]
        for i in range(1, len(outs)):
            y = y + outs[i]
        g = F.glu(x, dim=1) + F.glu(x, dim=-1).mean()
        t = x * 1.0
        F.elu_(t)
        torch.relu_(t)
        t.sigmoid_()
        return y, g, t


class Overloads(nn.Module):
    """Aliases and the less common overloads: true_divide, subtract, multiply, divide,
    clip, Scalar-Tensor remainder and pow, fix, negative, absolute, sgn, named
    comparisons, in-place bitwise and cumsum on intermediates, to(other) / to(device,
    dtype) / to(copy=True), softmax of an int tensor with dtype, 0-d tensors promoting
    like numbers, masked_fill with a 0-d tensor value."""

    def forward(self, ids, mask, x):
        f = torch.true_divide(x, 2) + torch.subtract(x, x * x, alpha=3) + torch.multiply(x, 1.5)
        f = f + torch.divide(x * 7, 2.5, rounding_mode="floor") + torch.clip(x, -0.3, 0.3) + torch.fix(x * 4)
        f = f + torch.negative(x) + torch.absolute(x) + torch.sgn(x) + torch.exp2(ids)
        f = f + torch.asin(x * 0.3) + torch.acos(x * 0.3) + torch.atan(x) + torch.sinh(x) + torch.cosh(x) + torch.erfc(x)
        i = torch.remainder(7, ids + 1) + 2 ** ids + torch.floor_divide(ids * 5, -3) + ids.to(x.device, torch.int64)
        b = torch.greater(x, 0.1) | torch.less(ids, 3) | torch.greater_equal(x, ids) | torch.less_equal(ids, 4)
        b = b ^ torch.not_equal(ids, 2)
        m = mask.clone()
        m &= ids > 2
        m |= x > 1.0
        c = ids * 1
        c.cumsum_(1)
        c.clamp_(max=20)
        t = x.to(ids) + x.to(torch.float32, copy=True).to(torch.int32) + ids.to(torch.int32)
        sm = F.softmax(ids, 0, dtype=torch.float32) + F.log_softmax(ids, dim=-1, dtype=torch.float32)
        zero_d_int = ids.sum()                    # 0-d int64
        zero_d_float = x.sum()                    # 0-d float32
        counts = ids.to(torch.int32)
        p0 = counts + zero_d_int                  # int32: a 0-d int64 does not widen it
        p1 = counts * zero_d_float                # float32: a 0-d float raises the category
        p2 = mask + zero_d_int                    # int64
        p3 = x.masked_fill(mask, zero_d_float) + torch.where(mask, x, zero_d_float)
        p4 = ids.masked_fill(mask, ids.max())
        p4 = p4 + torch.count_nonzero(ids, dim=1).unsqueeze(1) + torch.count_nonzero(mask) + torch.count_nonzero(x, (0, 1))
        th = x * 1
        F.threshold(th, 0.2, 5.0, inplace=True)
        c32 = counts * 1
        c32.add_(ids)                             # stays int32: in-place keeps self's dtype
        c32.mul_(ids)
        c32 += 3
        fl = x * 1
        fl.lt_(0.25)                              # stays float32
        return f, i, b, m, c, t, sm, p0, p1, p2, p3, p4, th, c32, fl


class Reductions(nn.Module):
    """Reductions over several and negative dims with keepdim, dtype arguments, var/std
    with corrections, norms, logsumexp, cumsum, softmax on any dim, and aminmax."""

    def forward(self, x):
        s = x.sum(dim=(0, -1), keepdim=True) + x.sum(-2, keepdim=True).sum(dim=[0, 3], keepdim=True)
        s2 = x.sum(dtype=torch.float32) + x.mean() + x.mean(dim=(1, 3)).sum()
        mx = x.amax(dim=(1, -1)) + x.amin(dim=(1, 3)) + x.amin(dim=-2).sum()
        v, i = x.max(dim=2, keepdim=True)
        vmin, imin = torch.min(x, -1)
        full = x.max() + x.min() + x.argmax() + x.argmin(dim=1).sum()
        p = (x * 0.5 + 1).prod(dim=-1) + (x * 0.1 + 1).prod()
        var = x.var() + x.var(dim=1).sum() + x.std(dim=(0, 2), keepdim=True).sum() + torch.var(x, -1, unbiased=False).sum()
        var = var + torch.std(x, dim=[1], correction=0).sum() + torch.var(x, dim=2, correction=2, keepdim=True).sum()
        vm = torch.var_mean(x, dim=1)
        sm = torch.std_mean(x, dim=(0, 3), keepdim=True)
        n = x.norm() + x.norm(p=2, dim=-1).sum() + torch.linalg.vector_norm(x, ord=1, dim=(0, 2)).sum()
        n = n + torch.linalg.vector_norm(x, ord=float("inf")) + torch.norm(x, p=3, dim=1, keepdim=True).sum()
        lse = torch.logsumexp(x, dim=-1) + torch.logsumexp(x * 3, dim=(0, 2), keepdim=True).sum()
        c = x.cumsum(dim=-2) + torch.cumsum(x, 0) * 0.5
        sm0 = torch.softmax(x, dim=0) + F.log_softmax(x, dim=-2) + F.softmax(x, dim=1, dtype=torch.float32)
        mm = torch.aminmax(x, dim=1)
        mm_all = torch.aminmax(x)
        mm_keep = torch.aminmax(x, dim=-1, keepdim=True)
        return (s, s2, mx, v, i, vmin, imin, full, p, var, vm[0], vm[1], sm[0], sm[1], n, lse, c, sm0,
                mm[0], mm[1], mm_all[0], mm_all[1], mm_keep[0] - mm_keep[1])


class CompositeOps(nn.Module):
    """Ops that aotc composes of other IR ops: rms_norm (nn.RMSNorm with a weight, over two
    dims with eps, F.rms_norm with neither), cosine_similarity (broadcast, a zero norm that
    eps clamps), one_hot, and pointwise functions on special values: nan_to_num of NaN and
    infinities (defaults and given), hypot past float32's square range, logit with and
    without eps, sinc and heaviside at 0, frac and an in-place form, xlogy at x = 0 and of
    NaN and infinities, with a number on either side, diff (orders 1 and 2, prepend and
    append, bool), and cross products (broadcast, and torch.cross's default dim)."""

    def __init__(self, one_hot: bool = True, float32_limits: bool = False):
        super().__init__()
        self.one_hot = one_hot  # (int64 and bool arithmetic: not on the CUDA target, which is float32 only)
        # nan_to_num's default limits are the dtype's: the GPU suite compares with a float64
        # run of the model, so its variant names float32's.
        self.float32_limits = float32_limits
        self.rms = nn.RMSNorm(8)
        self.rms2 = nn.RMSNorm([3, 8], eps=1e-3, elementwise_affine=False)
        with torch.no_grad():
            self.rms.weight.normal_()

    def forward(self, x, special, big, ids):
        # x [2, 3, 8]; special: NaN, +-inf, 0 and ordinary values; big: +-1e30 .. 1e-30; ids int64
        p = torch.sigmoid(x)
        return (self.rms(x), self.rms2(x), F.rms_norm(x, [8]),
                F.cosine_similarity(x, x[:, :1] + 1.0, dim=-1), F.cosine_similarity(x, x * 0.0, dim=1),
                F.one_hot(ids, 7) if self.one_hot else x,
                torch.nan_to_num(special, posinf=3.4028234663852886e38, neginf=-3.4028234663852886e38)
                if self.float32_limits else torch.nan_to_num(special),
                torch.nan_to_num(special, nan=1.5, posinf=7.0, neginf=-7.0),
                torch.hypot(x, x * 3.0), torch.hypot(big, big.flip(0)),
                torch.logit(p), torch.logit(p * 1.2 - 0.1, eps=1e-3),
                torch.sinc(torch.cat([x.flatten(), x.flatten() * 0.0])),
                torch.heaviside(torch.round(x), x * 2.0),
                torch.frac(x * 3.0), (x * 5.0).frac_(),
                torch.xlogy(torch.round(x), x.abs()), torch.xlogy(special * 0.0, special),
                torch.xlogy(2.0, x.abs() + 1.0), torch.xlogy(special, 3.0), torch.special.xlogy(x, x * x),
                torch.diff(x), torch.diff(x, n=2, dim=1, prepend=x[:, :1], append=x[:, -2:]),
                torch.diff(x > 0, dim=0) if self.one_hot else x,
                torch.linalg.cross(x, x.flip(2), dim=1), torch.linalg.cross(x[:, :, :1], x, dim=1),
                torch.cross(x, x * 2.0 + 1.0))


def _composite_inputs():
    torch.manual_seed(6)
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -2.5, 3.25, 1e30, -1e-30])
    big = torch.tensor([1e30, -2e30, 0.0, 3e-30, 5.0, -4e25, 1e-38, 0.0])
    return [("x", torch.randn(2, 3, 8)), ("special", special), ("big", big), ("ids", _ints(8, (2, 5), 0, 7, torch.int64))]


class MaskOps(nn.Module):
    """Masks as models build them from token ids and scores: comparisons of int64 and
    float tensors, logical ops on their bools, casts between bool, int32, int64 and float
    (truncation toward zero), where."""

    def forward(self, x, ids):
        keep = ids != 0
        both = torch.logical_and(x > 0.5, keep)
        either = torch.logical_or(x < -1.0, ids == 3)
        y = torch.where(both, x, -x) * keep.float() + either.float()
        z = (x * 3.0).to(torch.int64).float() + (x * 2.0).to(torch.int32).float()
        w = (x > 0).to(torch.int32).float() - torch.logical_xor(keep, x > 0).float()
        return y, z, w


def _mask_inputs():
    torch.manual_seed(7)
    return [("x", torch.randn(4, 9) * 2), ("ids", _ints(9, (4, 9), 0, 5, torch.int64))]


class SortOps(nn.Module):
    """topk (largest and smallest, on any dim, k = 1, 0 and the whole dim, sorted=False summed
    since its order is free), sort and argsort (descending, stable, any dim) and msort, on
    float32 with NaNs and signed zeros, int64 with ties, int32 and bool. topk gets no ties:
    torch leaves their order unspecified."""

    def forward(self, x, ids, small):
        v, i = x.topk(3, dim=1)
        v2, i2 = torch.topk(x, 1, dim=-1, largest=False)
        v3, i3 = x.topk(x.shape[0], dim=0)
        empty = x.topk(0, dim=2)[0]
        free = torch.topk(x, 2, dim=-1, sorted=False)[0].sum(-1)
        s, si = torch.sort(x, dim=0, descending=True)
        s2, si2 = x.sort(stable=True, dim=2)
        a = torch.argsort(ids, dim=1, stable=True)
        a2 = torch.argsort(ids, dim=0, descending=True, stable=True)
        m = torch.msort(small)
        b, bi = (ids > 2).sort(dim=-1, descending=True, stable=True)
        return v, i, v2, i2, v3, i3, empty, free, s, si, s2, si2, a, a2, m, b, bi


class ScanOps(nn.Module):
    """The scans besides cumsum: cumprod (float32, with dtype, int64 and bool, in place),
    logcumsumexp over -inf, inf and NaN, cummax and cummin with ties, NaNs, int32 and bool
    inputs (values and indices)."""

    def forward(self, x, special, ids):
        p = torch.cumprod(x, 1) + torch.cumprod(x * 0.5, dim=-1, dtype=torch.float32)
        p_int = torch.cumprod(ids, 0)
        p_bool = torch.cumprod(ids > 1, 1)
        z = x.clone()
        z.cumprod_(0)
        lse = torch.logcumsumexp(x * 3.0, 1) + torch.logcumsumexp(x, dim=0)
        lse_special = torch.logcumsumexp(special, 0)
        mx = torch.cummax(torch.round(x), 1)
        mn = torch.cummin(x, 0)
        mx_special = torch.cummax(special, 0)
        mn_special = torch.cummin(special, -1)
        mx_int = torch.cummax(ids.int(), 1)
        mn_bool = torch.cummin(ids > 2, 1)
        return (p, p_int, p_bool, z, lse, lse_special, mx[0], mx[1], mn[0], mn[1], mx_special[0], mx_special[1],
                mn_special[0], mn_special[1], mx_int[0], mx_int[1], mn_bool[0], mn_bool[1])


def _scan_inputs():
    torch.manual_seed(11)
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([-inf, -inf, 1.0, 1.0, inf, inf, 2.0, nan, 3.0, -inf, nan])
    return [("x", torch.randn(4, 9)), ("special", special), ("ids", _ints(12, (3, 7), 0, 4, torch.int64))]


class SearchOps(nn.Module):
    """searchsorted and bucketize: left and right (right=True, side="right"), int32 output,
    a row of boundaries per line, a number as the value, integer boundaries and values,
    sorter over unsorted boundaries; values on the boundaries, NaN and infinities."""

    def forward(self, x, bounds, rows, ids, unsorted):
        a = torch.searchsorted(bounds, x)
        b = torch.searchsorted(bounds, x, right=True)
        c = torch.bucketize(x, bounds, right=True, out_int32=True)
        d = torch.bucketize(x, bounds)
        e = torch.searchsorted(rows, x[:3, :4], side="right")
        f = torch.searchsorted(bounds, 0.5)
        g = torch.bucketize(ids, torch.tensor([0, 2, 2, 5]))
        h = torch.searchsorted(unsorted, x, sorter=torch.argsort(unsorted))
        return a, b, c, d, e, f, g, h


def _search_inputs():
    torch.manual_seed(12)
    x = torch.randn(4, 6) * 2
    x[0, :4] = torch.tensor([-1.0, 0.0, 0.5, 2.0])  # on the boundaries
    x[1, 0], x[1, 1], x[1, 2] = float("nan"), float("inf"), -float("inf")
    bounds = torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0])
    rows = torch.sort(torch.randn(3, 5), dim=1).values
    rows[1, 2] = rows[1, 3]
    return [("x", x), ("bounds", bounds), ("rows", rows), ("ids", _ints(13, (3, 5), -1, 7, torch.int64)),
            ("unsorted", torch.tensor([0.5, -1.0, 2.0, 0.0, 1.0]))]


class OrderStatistics(nn.Module):
    """median and nanmedian of every value and along a dim (odd and even counts, keepdim, lines
    with NaNs, where median gives the first NaN's index), kthvalue (NaN the largest), quantile
    and nanquantile (a number, a tensor of q and a 0-d one, every value and along a dim, the
    five interpolations, a line of NaNs only), an integer median. Indices only where torch's
    are defined (no ties, lines with numbers)."""

    def forward(self, x, y, z, q, ints):
        a = torch.median(y)
        b = torch.median(x, dim=1)
        c = torch.median(y, 0, keepdim=True)
        d = torch.nanmedian(x, 1)
        e = torch.nanmedian(z)
        f = torch.nanmedian(z, dim=0).values
        g = torch.kthvalue(y, 3, 1)
        h = torch.kthvalue(x, 2, 0, True)
        i = torch.quantile(y, 0.3, dim=1)
        j = torch.quantile(x, q, dim=1, keepdim=True)
        k = torch.nanquantile(x, 0.75, dim=1, interpolation="nearest")
        m = torch.nanquantile(x, q, dim=1, interpolation="midpoint")
        n = torch.quantile(y, q, interpolation="lower")
        o = torch.quantile(y, q[1], dim=0, keepdim=True, interpolation="higher")
        p = torch.nanquantile(z, q, dim=1, keepdim=True)
        r = torch.quantile(y, 0.5, keepdim=True)
        s = torch.median(ints, 1).values
        t = torch.median(ints)
        return (a, b.values, b.indices, c.values, c.indices, d.values, d.indices, e, f, g.values, g.indices,
                h.values, h.indices, i, j, k, m, n, o, p, r, s, t)


def _order_inputs():
    torch.manual_seed(14)
    x = torch.randn(5, 7)
    x[1, 3] = float("nan")
    x[2, 0], x[2, 5] = float("nan"), float("nan")
    x[4, 6] = 1e6  # far out (an infinity makes torch's lerp NaN or not by dtype and device)
    y = torch.randn(4, 6)
    z = torch.randn(3, 4)
    z[1, :] = float("nan")  # a line of NaNs only
    z[2, 1] = float("nan")
    q = torch.tensor([0.0, 0.25, 0.6, 1.0])
    return [("x", x), ("y", y), ("z", z), ("q", q), ("ints", _ints(15, (3, 5), -9, 9, torch.int64))]


class Shifts(nn.Module):
    """<< and >> and bitwise_left_shift / bitwise_right_shift on int64 and int32 (promoted
    together), by tensors and numbers, in place, with shifts past the width and negative ones
    (torch: 0 left, the sign right) and negative values."""

    def forward(self, a, b, c):
        d = c.clone()
        d <<= 3
        e = c.clone()
        e >>= 1
        return (a << b, a >> b, torch.bitwise_left_shift(c, 5), torch.bitwise_right_shift(a, 70), c << b,
                c >> 31, d, e, torch.bitwise_right_shift(c, b[:, :1].int()))


def _shift_inputs():
    a = _ints(16, (3, 6), -(1 << 40), 1 << 40, torch.int64)
    b = _ints(17, (3, 6), -3, 70, torch.int64)
    b[0, :4] = torch.tensor([0, 63, 64, -1])
    c = _ints(18, (3, 6), -(1 << 20), 1 << 20, torch.int32)
    return [("a", a), ("b", b), ("c", c)]


class NumericBuilders(nn.Module):
    """trapezoid and trapz (sample points of 1-d and full shape, a spacing, a dim),
    cumulative_trapezoid, vander (N, increasing, integers), linalg.vander, cov (correction,
    1-d), corrcoef, angle (negative, zero, -0.0, NaN), ldexp (exponents -27 to 27)."""

    def forward(self, y, xs, v, ids, obs):
        a = torch.trapezoid(y, xs)
        b = torch.trapezoid(y, dx=0.5, dim=0)
        c = torch.trapz(y, xs.expand(3, 7), dim=1)
        d = torch.cumulative_trapezoid(y, xs)
        e = torch.cumulative_trapezoid(y, dx=2.0, dim=0)
        f = torch.vander(v)
        g = torch.vander(v, 3, True)
        h = torch.vander(ids, 4)
        i = torch.linalg.vander(y[:, :4])
        j = torch.cov(obs)
        k = torch.cov(obs, correction=0)
        m = torch.cov(obs[0])
        n = torch.corrcoef(obs)
        o = torch.angle(y)
        p = torch.angle(ids)
        q = torch.ldexp(y, ids[:1, None].expand(3, 7) * 9)
        r = torch.ldexp(ids.float(), ids)
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r


def _numeric_builder_inputs():
    torch.manual_seed(19)
    y = torch.randn(3, 7)
    y[0, 1], y[1, 2], y[2, 3] = 0.0, -0.0, float("nan")
    xs = torch.sort(torch.rand(7) * 4).values
    v = torch.tensor([0.5, -1.5, 2.0, 0.0, 1.25])
    return [("y", y), ("xs", xs), ("v", v), ("ids", _ints(20, (4,), -3, 4, torch.int64)),
            ("obs", torch.randn(3, 9))]


class SpecialFunctions(nn.Module):
    """lgamma, digamma (poles, negative values), erfinv, ndtri and ndtr (tails, 0 and 1),
    entr, xlog1py, signbit of -0.0, copysign (tensor and number), logaddexp and logaddexp2
    over infinities, deg2rad, rad2deg, rrelu in evaluation, and torch.special's names."""

    def __init__(self):
        super().__init__()
        self.rrelu = nn.RReLU(0.1, 0.3)

    def forward(self, x, special, p):
        g = torch.lgamma(x * 3.0) + torch.special.gammaln(x.abs() + 0.1)
        dg = torch.digamma(x * 3.0) + torch.special.psi(x.abs() * 10.0 + 0.01)
        dg_special = torch.special.digamma(special)
        ei = torch.erfinv(x.tanh()) + torch.special.erfinv(p * 2.0 - 1.0)
        ei_special = torch.erfinv(special)
        nd = torch.special.ndtri(p) + torch.special.ndtr(x * 4.0)
        nd_special = torch.special.ndtri(special.clamp(0.0, 1.0))
        en = torch.special.entr(special)
        xl = torch.special.xlog1py(x, x.abs())
        xl_special = torch.special.xlog1py(special, special.flip(0))
        sb = torch.signbit(special)
        cs = torch.copysign(x, special[:8].reshape(1, 8)) + torch.copysign(x, -1.0)
        la = torch.logaddexp(x, x * 2.0) + torch.logaddexp2(x, x.flip(0))
        la_special = torch.logaddexp(special, special.flip(0)) + torch.logaddexp2(special, special)
        ang = torch.deg2rad(x * 90.0) + torch.rad2deg(x)
        rr = F.rrelu(x, training=False) + self.rrelu(x)
        return g, dg, dg_special, ei, ei_special, nd, nd_special, en, xl, xl_special, sb, cs, la, la_special, ang, rr


def _special_inputs():
    torch.manual_seed(14)
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([nan, inf, -inf, 0.0, -0.0, -2.0, -2.5, 1.0, 0.5, 1e-30, -1.0, 1e-7])
    p = torch.rand(3, 8)
    p[0, 0], p[0, 1], p[0, 2], p[0, 3] = 0.0, 1.0, 1e-30, 1.0 - 2.0 ** -24
    return [("x", torch.randn(3, 8)), ("special", special), ("p", p)]


class DistanceOps(nn.Module):
    """cdist (p = 2 by a matrix product past 25 rows and by differences below, p = 1, inf,
    compute_mode, batched), pdist, pairwise_distance (keepdim, broadcast), dist."""

    def forward(self, a, b, big):
        d_small = torch.cdist(a, b)                     # [2, 5, 7]: differences
        d_big = torch.cdist(big, a[0])                  # 30 rows: the matrix product
        d_forced = torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist")
        d_p1 = torch.cdist(a, b, p=1.0) + torch.cdist(a, b, p=float("inf")) + torch.cdist(a, b, p=3.0)
        pd = F.pdist(a[0]) + F.pdist(a[1], p=1.5)
        pw = F.pairwise_distance(a, b[:, :5]) + F.pairwise_distance(a, b[0, :1], p=1.0, eps=0.0)
        pw_keep = F.pairwise_distance(a[0], b[0, :5], keepdim=True)
        dd = torch.dist(a, b[:, :5]) + torch.dist(a, b[:, :5], 3.0)
        return d_small, d_big, d_forced, d_p1, pd, pw, pw_keep, dd


class FakeQuantOps(nn.Module):
    """Fake quantization per tensor (number and tensor parameters) and per channel (integer
    and float zero points), as a QAT model exported before conversion runs it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([0.05]))
        self.register_buffer("zero_point", torch.tensor([3], dtype=torch.int32))
        self.register_buffer("ch_scale", torch.tensor([0.02, 0.1, 0.05, 0.3]))
        self.register_buffer("ch_zero", torch.tensor([0, -3, 5, 1], dtype=torch.int32))
        self.register_buffer("ch_zero_float", torch.tensor([0.5, -2.0, 1.25, 0.0]))

    def forward(self, a, b, big):
        x = big * 2.0
        fq = torch.fake_quantize_per_tensor_affine(x, 0.03, 2, -128, 127)
        fq_t = torch.fake_quantize_per_tensor_affine(x, self.scale, self.zero_point, 0, 255)
        y = x[:, :4]
        fq_c = torch.fake_quantize_per_channel_affine(y, self.ch_scale, self.ch_zero, 1, -128, 127)
        fq_f = torch.fake_quantize_per_channel_affine(y, self.ch_scale, self.ch_zero_float, 1, 0, 15)
        return fq, fq_t, fq_c, fq_f


def _distance_inputs():
    torch.manual_seed(15)
    return [("a", torch.randn(2, 5, 4)), ("b", torch.randn(2, 7, 4)), ("big", torch.randn(30, 4))]


class NanNormOps(nn.Module):
    """nansum and nanmean (over dims, keepdim, all; a row of NaNs only), integer nansum, and
    torch.linalg.norm / matrix_norm: Frobenius, 1, -1, inf, -inf over chosen dims, vector
    norms through linalg.norm, keepdim."""

    def forward(self, x, ids):
        ns = torch.nansum(x, 1) + torch.nansum(x, dim=(0, 2), keepdim=True).sum()
        nm = torch.nanmean(x, dim=-1)
        nm_all = torch.nanmean(x)
        ns_int = torch.nansum(ids, 0)
        y = torch.nan_to_num(x)
        fro = torch.linalg.norm(y) + torch.linalg.matrix_norm(y).sum()
        m1 = torch.linalg.matrix_norm(y, ord=1) + torch.linalg.matrix_norm(y, ord=-1, dim=(0, 2))[0]
        minf = torch.linalg.matrix_norm(y, ord=float("inf"), keepdim=True)
        mninf = torch.linalg.norm(y[0], ord=float("-inf"))
        vec = torch.linalg.norm(y, dim=1) + torch.linalg.norm(y, ord=3.0, dim=1)
        fro_dims = torch.linalg.norm(y, ord="fro", dim=(1, 2), keepdim=True)
        return ns, nm, nm_all, ns_int, fro, m1, minf, mninf, vec, fro_dims


def _nan_norm_inputs():
    torch.manual_seed(16)
    x = torch.randn(3, 4, 5)
    x[0, 1, 2] = float("nan")
    x[1, 2, :] = float("nan")
    return [("x", x), ("ids", _ints(17, (3, 6), -5, 9, torch.int64))]


class MatrixBuilders(nn.Module):
    """kron (equal and mixed ranks, integers), diag (a vector on diagonals above and below,
    a matrix's diagonal), diag_embed (batched, offsets, infinities and NaN off the
    diagonal), diagflat, block_diag (0-d, 1-d and 2-d blocks, int and float), cartesian_prod,
    isin (NaN, integers, a number, invert)."""

    def forward(self, x, v, ids):
        k = torch.kron(x[:2, :3], x[:3, :2]) + torch.kron(v[:3], x[:2, :2]).sum()
        k_int = torch.kron(ids[:2, :2], ids[1:3, :3])
        d = torch.diag(v) + torch.diag(v, 0)
        d_up = torch.diag(v, 2) + torch.diag(v, -2)
        d_of = torch.diag(x) + torch.diag(x, 1)[:3].sum() + torch.diag(x, -1).sum()
        special = torch.tensor([float("inf"), float("nan"), -1.0])
        de = torch.diag_embed(x) + torch.diag_embed(x, offset=1)[:, :5, :5]
        de_special = torch.diag_embed(special, -1)
        df = torch.diagflat(x[:2, :3]) + torch.diagflat(v[:6], 0)
        bd = torch.block_diag(x[:2, :3], v[:4], torch.tensor(7.0), ids[:2, :2])
        cp = torch.cartesian_prod(v[:3], v[3:5], v[:2])
        cp_int = torch.cartesian_prod(ids[0, :3], ids[1, :2])
        tests = torch.tensor([0.5, float("nan"), 1.25])
        w = torch.round(x * 4.0) / 4.0
        w[0, 0] = float("nan")
        ii = torch.isin(w, tests)
        ii_int = torch.isin(ids, ids[0, :3]) & torch.isin(ids, ids[1, :3], invert=True)
        ii_scalar = torch.isin(ids, 3)
        return k, k_int, d, d_up, d_of, de, de_special, df, bd, cp, cp_int, ii, ii_int, ii_scalar


def _builder_inputs():
    torch.manual_seed(18)
    x = torch.randn(4, 5)
    x[1, 2] = 0.5
    x[3, 1] = 1.25
    return [("x", x), ("v", torch.randn(6)), ("ids", _ints(19, (3, 4), 0, 5, torch.int64))]


def _sort_inputs():
    torch.manual_seed(8)
    x = torch.randn(4, 7, 6)
    x[1, 2, 0] = float("nan")
    x[3, 5, 4] = -0.0
    return [("x", x), ("ids", _ints(9, (5, 11), 0, 6, torch.int64)), ("small", _ints(10, (9, 3), -50, 50, torch.int32))]


def _ints(seed, shape, lo, hi, dtype):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


def _arith_inputs():
    torch.manual_seed(1)
    return [("x", torch.randn(3, 5, 7)), ("y", torch.randn(5, 1))]


def _dtype_inputs():
    torch.manual_seed(2)
    ids = _ints(3, (4, 6), 0, 10, torch.int64)
    counts = _ints(4, (4, 6), -3, 5, torch.int32)
    mask = _ints(5, (4, 6), 0, 2, torch.int64).bool()
    x = torch.randn(4, 6)
    x[0, 0] = 0.5
    x[1, 2] = 0.0
    return [("ids", ids), ("counts", counts), ("mask", mask), ("x", x)]


def _overload_inputs():
    torch.manual_seed(5)
    ids = _ints(6, (3, 5), 0, 7, torch.int64)
    mask = _ints(7, (3, 5), 0, 2, torch.int64).bool()
    return [("ids", ids), ("mask", mask), ("x", torch.randn(3, 5))]


def _act_inputs():
    torch.manual_seed(3)
    return [("x", torch.randn(2, 6, 3, 8) * 2)]


def _reduce_inputs():
    torch.manual_seed(4)
    return [("x", torch.randn(3, 5, 4, 7))]


def _scripted(cls, inputs):
    def build():
        torch.manual_seed(0)
        return torch.jit.script(cls().eval()), inputs()
    return build


def _traced(cls, inputs):
    def build():
        torch.manual_seed(0)
        ins = inputs()
        with torch.no_grad():
            module = torch.jit.trace(cls().eval(), tuple(t for _, t in ins), check_trace=False)
        return module, ins
    return build


MODELS_POINTWISE = {
    "pw_arith": _scripted(Arithmetic, _arith_inputs),
    "pw_arith_traced": _traced(Arithmetic, _arith_inputs),
    "pw_dtypes": _scripted(Dtypes, _dtype_inputs),
    "pw_dtypes_traced": _traced(Dtypes, _dtype_inputs),
    "pw_activations": _scripted(Activations2, _act_inputs),
    "pw_activations_traced": _traced(Activations2, _act_inputs),
    "pw_reduce": _scripted(Reductions, _reduce_inputs),
    "pw_reduce_traced": _traced(Reductions, _reduce_inputs),
    "pw_overloads": _scripted(Overloads, _overload_inputs),
    "pw_overloads_traced": _traced(Overloads, _overload_inputs),
    "pw_composite": _scripted(CompositeOps, _composite_inputs),
    "pw_composite_traced": _traced(CompositeOps, _composite_inputs),
    "pw_masks": _scripted(MaskOps, _mask_inputs),
    "pw_masks_traced": _traced(MaskOps, _mask_inputs),
    "pw_sort": _scripted(SortOps, _sort_inputs),
    "pw_sort_traced": _traced(SortOps, _sort_inputs),
    "pw_scan": _scripted(ScanOps, _scan_inputs),
    "pw_scan_traced": _traced(ScanOps, _scan_inputs),
    "pw_search": _scripted(SearchOps, _search_inputs),
    "pw_search_traced": _traced(SearchOps, _search_inputs),
    "pw_order_stats": _scripted(OrderStatistics, _order_inputs),
    "pw_order_stats_traced": _traced(OrderStatistics, _order_inputs),
    "pw_shifts": _scripted(Shifts, _shift_inputs),
    "pw_shifts_traced": _traced(Shifts, _shift_inputs),
    "pw_numeric_builders": _scripted(NumericBuilders, _numeric_builder_inputs),
    "pw_numeric_builders_traced": _traced(NumericBuilders, _numeric_builder_inputs),
    "pw_special": _scripted(SpecialFunctions, _special_inputs),
    "pw_special_traced": _traced(SpecialFunctions, _special_inputs),
    "pw_distance": _scripted(DistanceOps, _distance_inputs),
    "pw_distance_traced": _traced(DistanceOps, _distance_inputs),
    "pw_fake_quantize": _scripted(FakeQuantOps, _distance_inputs),
    "pw_fake_quantize_traced": _traced(FakeQuantOps, _distance_inputs),
    "pw_nan_norms": _scripted(NanNormOps, _nan_norm_inputs),
    "pw_nan_norms_traced": _traced(NanNormOps, _nan_norm_inputs),
    "pw_builders": _scripted(MatrixBuilders, _builder_inputs),
    "pw_builders_traced": _traced(MatrixBuilders, _builder_inputs),
    "pw_composite_float": _traced(lambda: CompositeOps(one_hot=False, float32_limits=True),
                                  _composite_inputs),  # the GPU suite's
}
