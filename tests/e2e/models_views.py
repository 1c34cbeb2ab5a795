"""End-to-end models for views, slicing, indexing, data movement and factories.
Same contract as models.py: each builder returns (module, inputs). Every model is built
twice, scripted and traced (suffixes _scripted and _traced), on odd sizes; several take or
return int64 and bool tensors, which check_model.py compares exactly."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Slicing(nn.Module):
    """slice (negative bounds, step > 1, open end), select (negative), narrow, None and
    Ellipsis indexing, views of views, squeeze/unsqueeze/flatten/unflatten/view/reshape."""

    def forward(self, x):  # x: [5, 7, 9]
        a = x[1:-1, ::2, -4:]                       # steps and negative bounds
        b = x[:, None, 2]                           # None, then select
        c = x[..., 1:]                              # Ellipsis
        d = x[-2]                                   # negative select
        e = x.narrow(2, -5, 3).narrow(0, 1, 3)      # narrow of narrow
        f = x.transpose(0, 2)[1:, ::3].select(-1, 1)  # view of a view of a view
        g = x[:, 2:5].unflatten(1, (3, 1)).squeeze(2).flatten(0, 1)
        h = x.unsqueeze(-1).unsqueeze(0).squeeze().view(5, -1).reshape(7, 5, 9)
        i = x.squeeze(1).reshape_as(x.view_as(x).clone()).contiguous().detach()
        j = x[2:2]                                  # an empty slice
        k = x[:, 3:100, 7:]                         # an end past the size
        m = x.view(5, 63)[:, 60:].unsqueeze(1)
        return a, b, c, d, e, f, g, h, i, j, k, m


class Permutes(nn.Module):
    """t/transpose/mT/.T/permute/movedim/swapaxes; a view of the input and a view of a
    weight feeding a matmul and an add."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(11, 6))
        self.b = nn.Parameter(torch.randn(5, 4))

    def forward(self, x, y):  # x: [3, 5, 6], y: [4, 6]
        p = x.permute(2, 0, 1)
        q = x.transpose(-1, 0).mT
        r = torch.movedim(x, 0, -1) + 0.5
        s = x.swapaxes(0, 1).swapdims(1, 2)
        t = y.t()
        u = y.T
        mm = torch.matmul(x[:, ::2, :], self.w.t()[:, 1::2])   # [3, 3, 5]
        add = x.transpose(0, 2)[1:4].permute(0, 2, 1) + self.b.t()[1:4, None, :]
        v = torch.movedim(x, (0, 1), (2, 0))
        return p, q, r, s, t, u, mm, add, v


class Splits(nn.Module):
    """chunk, split (int and sizes), split_with_sizes, unbind, unsafe_chunk/unsafe_split,
    tensor_split, on several dims."""

    def forward(self, x):  # x: [4, 7, 5]
        a = x.chunk(3, dim=1)
        b = torch.split(x, 2, dim=-1)
        c = x.split([1, 4, 2], 1)
        d = x.unbind(2)
        e = x.unbind(0)
        f = torch.tensor_split(x, 3, dim=2)
        g = torch.unsafe_chunk(x, 2, 0)
        h = torch.unsafe_split(x, 3, 1)
        k = torch.split_with_sizes(x, [3, 2], -1)
        return a, b, c, d, e, f, g, h, k


class ExpandRepeat(nn.Module):
    """expand/expand_as/broadcast_to (stride 0), repeat, tile, repeat_interleave."""

    def forward(self, x, z):  # x: [3, 1, 5], z: [2, 3, 4, 5]
        a = x.expand(2, 3, 4, 5)
        b = x.expand_as(z) * z
        c = x.expand(-1, 6, -1)[:, 1::2]
        d = x.repeat(2, 1, 3, 1)
        e = torch.tile(x, (2,))
        f = x.repeat_interleave(3, dim=1)
        g = z.repeat_interleave(2, dim=-1)
        h = x.repeat_interleave(2)
        i = torch.broadcast_to(x, (3, 2, 5))
        j = z[:, 1].repeat_interleave(torch.tensor([1, 0, 2, 3]), dim=1)
        return a, b, c, d, e, f, g, h, i, j


class Combine(nn.Module):
    """cat (negative dim, zero-size part, cat of slices and transposes), stack, flip, roll,
    tril/triu with diagonals."""

    def forward(self, x, y):  # x: [3, 5, 4], y: [3, 2, 4]
        a = torch.cat([x, y, x[:, :0]], dim=-2)
        b = torch.cat([x[:, 1:3], x.flip(1).transpose(1, 2)[:, :, ::2].transpose(1, 2)], 1)
        c = torch.stack([x, x * 2.0, x + 1.0], dim=-1)
        d = torch.stack([y, y], 0)
        e = x.flip(0, 2)
        f = torch.roll(x, shifts=(1, -2), dims=(1, 2))
        g = torch.roll(x, 7)
        h = torch.tril(x, diagonal=-1)
        i = x.triu(2)
        j = torch.cat((x, y), 1).flip(-1).tril()
        k = torch.fliplr(x[0])
        return a, b, c, d, e, f, g, h, i, j, k


class Pads(nn.Module):
    """F.pad in every mode for 1d, 2d and 3d, negative (cropping) constant pads."""

    def __init__(self):
        super().__init__()
        self.reflect = nn.ReflectionPad2d(2)
        self.replicate = nn.ReplicationPad1d((1, 3))
        self.zero = nn.ZeroPad2d((1, 0, 2, 1))

    def forward(self, x3, x4, x5):  # [2, 3, 7], [2, 3, 5, 6], [1, 2, 4, 5, 3]
        return (F.pad(x3, (2, 3)), F.pad(x3, (2, 1), value=1.5), F.pad(x3, (3, 2), mode="reflect"),
                F.pad(x3, (2, 4), mode="replicate"), F.pad(x3, (3, 1), mode="circular"),
                F.pad(x4, (1, 2, 3, 0), value=-2.0), F.pad(x4, (2, 1, 1, 3), mode="reflect"),
                F.pad(x4, (3, 1, 2, 2), mode="replicate"), F.pad(x4, (1, 2, 2, 1), mode="circular"),
                F.pad(x4, (-1, 2, 0, -2)), F.pad(x4, (1, 1, 1, 1, 1, 1)),
                F.pad(x5, (1, 2, 2, 1, 1, 2), mode="reflect"), F.pad(x5, (2, 1, 1, 0, 2, 1), mode="replicate"),
                F.pad(x5, (1, 1, 2, 1, 1, 2), mode="circular"), F.pad(x5, (1, 0, 0, 1, 1, 0), value=3.0),
                self.reflect(x4), self.replicate(x3), self.zero(x4))


class ChannelShuffle(nn.Module):
    """A shufflenet-style unit: conv, channel shuffle by view/transpose/contiguous/view,
    chunk, cat; pixel_shuffle and pixel_unshuffle."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(12, 12, 3, padding=1)
        self.shuffle = nn.ChannelShuffle(3)

    def forward(self, x):  # x: [2, 12, 5, 7]
        y = self.conv(x)
        n, c, h, w = y.shape
        s = y.view(n, 3, c // 3, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        a, b = s.chunk(2, dim=1)
        z = torch.cat((F.relu(a), b), 1)
        ps = F.pixel_shuffle(x, 2)
        pu = F.pixel_unshuffle(x[:, :, :4, :6], 2)
        return z, ps, pu, F.pixel_unshuffle(ps, 2), self.shuffle(x)


class Indexing(nn.Module):
    """index_select, gather, take_along_dim, x[idx] with int64 index tensors (constant and
    run-time), x[:, idx], x[i, j] broadcast, non-adjacent index tensors, a constant bool
    mask, masked_select with a constant mask, diagonal, unfold, scatter, take, rot90."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.tensor([4, 0, -1, 2, 2]))
        self.register_buffer("cols", torch.tensor([6, 0, 3, 3, 1], dtype=torch.int32))
        self.register_buffer("perm", torch.tensor([2, 0, 4, 1, 3]).view(5, 1, 1))
        self.register_buffer("one_per_row", torch.randint(0, 6, (5, 7, 1)))
        self.register_buffer("mask", torch.tensor([True, False, True, True, False, False, True]))

    def forward(self, x, idx):  # x: [5, 7, 6], idx: int64 [3, 4] in [0, 5)
        a = torch.index_select(x, 1, self.cols)
        b = x.index_select(0, idx.flatten())
        c = x[idx]                                     # [3, 4, 7, 6]
        d = x[:, self.rows]                            # [5, 5, 6]
        e = x[idx[0], idx[1]]                          # [4, 6]
        f = x[idx[:, :1], :, idx[1:2]]                 # non-adjacent: [3, 4, 7]
        g = x[:, self.mask]                            # constant mask: [5, 4, 6]
        h = torch.gather(x, 2, idx[:, None, :].expand(3, 7, 4))
        i = torch.take_along_dim(x, idx[:2, :1, None], dim=0)
        j = torch.masked_select(x[0], self.mask[:, None])
        k = torch.diagonal(x, offset=1, dim1=1, dim2=2)
        m = x.unfold(1, 3, 2)
        n = x[:, :, self.rows[1:3]]
        o = torch.scatter(x, 0, self.perm.expand(5, 7, 6), x.flip(2) * 2.0)
        p = x.scatter(2, self.one_per_row, 9.5)
        q = torch.take(x, idx)
        r = (torch.rot90(x, 1, (1, 2)), torch.rot90(x, -1), torch.rot90(x, 2, (2, 0)))
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r


class IndexPut(nn.Module):
    """x[...] = v (aten::index_put_): a mask computed at run time with a number, a 0-d tensor
    and accumulate=True, a mask over the trailing dims (x[:, m] = v), a constant mask with a
    value per selected element, int64 / int32 index tensors on one dim and on two adjacent
    ones (negative indices, a repeated position: the last write wins), values broadcast
    along the other dims, the functional index_put; index_copy and index_fill (a number and
    a 0-d tensor, in place)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.tensor([3, -1, 0]))
        self.register_buffer("cols", torch.tensor([4, 1, 1, -2], dtype=torch.int32))
        self.register_buffer("keep", torch.tensor([True, False, True, False, False, True, True]))

    def forward(self, x, v, idx):  # x: [4, 7, 5], v: [5], idx: int64 [2, 3] in [-4, 4)
        a = x.clone()
        a[a > 0.5] = 0.0
        a[a < -1.0] = v[0]
        b = x.clone()
        b[:, x[0] > 0] = 2.5
        b.index_put_((b[:, 0, 0] > 0.3,), torch.tensor(1.5), accumulate=True)
        c = x.clone()
        c[:, self.keep] = torch.arange(4 * 4 * 5, dtype=torch.float32).view(4, 4, 5)
        d = x.clone()
        d[self.rows] = v                      # rows 3, 3 (as -1) and 0: the last write of 3 wins
        d[idx] = -7.0
        e = x.clone()
        e[:, :, self.cols[:2]] = x[:, :, :2] * 3.0
        f = x.clone()
        f[self.rows[:2], self.cols[:2]] = v * 10.0
        g = torch.index_put(x, (idx[0], idx[1].abs()), v[:1])
        h = x.index_copy(1, self.cols[:3].long() % 7, x[:, :3].flip(1) * 2.0)
        i = x.clone()
        i.index_fill_(2, idx[1].abs(), -3.5)
        j = x.index_fill(0, self.rows[:1], v[2])
        return a, b, c, d, e, f, g, h, i, j


class ScatterReduce(nn.Module):
    """Scatters that fold repeated positions (aten::scatter_reduce and its forms): scatter_add
    along dims 0 and 1, scatter_reduce with every reduction with and without self, of float32,
    int64 (mean floors) and int32 tensors, scatter(reduce="add" / "multiply") of a tensor and
    of a number, index_add with alpha of 300 messages into 11 nodes (a graph network's
    aggregation: lines longer than the CUDA kernel folds a thread each), index_reduce, and
    x.index_put_(indices, v, accumulate=True) with index tensors."""

    def forward(self, x, src, idx, msg, dst):  # x [6, 9], src [8, 9], idx int64 [8, 9] in [0, 6)
        a = x.scatter_add(0, idx, src)
        b = x.scatter_add(1, idx[:6, :5] + 3, src[:6, :5])
        c = x.scatter_reduce(0, idx, src, "sum", include_self=False)
        d = x.scatter_reduce(0, idx, src, "prod")
        e = x.scatter_reduce(0, idx, src, "prod", include_self=False)
        f = x.scatter_reduce(0, idx, src, "mean")
        g = x.scatter_reduce(0, idx, src, "mean", include_self=False)
        h = x.scatter_reduce(0, idx, src, "amax")
        i = x.scatter_reduce(0, idx, src, "amax", include_self=False)
        j = x.scatter_reduce(0, idx, src, "amin")
        k = x.scatter_reduce(0, idx, src, "amin", include_self=False)
        xi = (x * 10).long()
        si = (src * 10).long()
        m = xi.scatter_reduce(0, idx, si, "mean")
        n = xi.scatter_reduce(0, idx, si, "amax", include_self=False)
        o = xi.int().scatter_add(0, idx, si.int())
        p = x.scatter(0, idx, src, reduce="add")
        q = x.scatter(0, idx, 1.5, reduce="multiply")
        nodes = torch.zeros(11, 9)
        r = nodes.index_add(0, dst, msg, alpha=0.5)
        t = x.index_add(1, idx[0] + 3, src[:6, :9])
        u = nodes.index_reduce(0, dst, msg, "mean", include_self=False)
        v = nodes.index_reduce(0, dst, msg, "amax")
        w = x.clone()
        w.index_put_((idx[:, 0], idx[:, 1] - 6), src[:, 2], accumulate=True)
        cube = msg[:14].reshape(3, 6, 7)  # 3-d: along the middle dim and the last
        z1 = cube.index_add(1, dst[:40] % 6, msg[:120, :7].reshape(3, 40, 7))
        z2 = cube.scatter_reduce(2, idx[:3, :5].unsqueeze(1).expand(3, 6, 5) % 7, cube[:, :, :5] * 2.0, "mean")
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r, t, u, v, w, z1, z2


class Im2col(nn.Module):
    """F.unfold (aten::im2col): padded and strided, dilated with uneven padding, padding wider
    than the window, patches (kernel == stride, one strided copy), an unbatched input, and
    the columns of a convolution written as unfold + matmul."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 4 * 9))

    def forward(self, x):  # x: [2, 4, 11, 9]
        a = F.unfold(x, 3, padding=1, stride=2)
        b = F.unfold(x, (2, 3), dilation=(2, 1), padding=(0, 2), stride=(1, 3))
        c = F.unfold(x[:, :, :8, 1:], 4, stride=4)
        d = F.unfold(x[0], (3, 2), padding=(3, 0))
        conv = (self.w @ F.unfold(x, 3, padding=1)).view(2, 5, 11, 9)
        e = F.unfold(x.transpose(2, 3), (1, 5), dilation=(1, 2), padding=(2, 4), stride=(3, 1))
        return a, b, c, d, conv, e


class Col2im(nn.Module):
    """F.fold (aten::col2im): patches back into an image (kernel == stride: strided copies),
    patches with padding and a stride past the window (gaps of zeros), overlapping blocks
    (summed: a transposed convolution), dilated and padded overlapping blocks with an uneven
    last stride from a transposed view, an unbatched input, and fold(unfold(x)): each
    position times the blocks that cover it."""

    def forward(self, x, cols):  # x: [2, 3, 12, 10], cols: [2, 3 * 4, 30]
        a = F.fold(F.unfold(x, 2, stride=2), (12, 10), 2, stride=2)
        b = F.fold(cols[:, :, :16], (11, 14), 2, padding=(1, 0), stride=(3, 4))
        c = F.fold(cols, (6, 7), 2)
        d = F.fold(cols.transpose(0, 1).reshape(12, 60)[:, 7:23], (7, 8), (2, 2), dilation=(2, 1),
                   padding=(1, 2), stride=(2, 3))
        e = F.fold(cols[0], (6, 7), (2, 2))
        f = F.fold(F.unfold(x, 3, padding=1), (12, 10), 3, padding=1)
        return a, b, c, d, e, f


class IntViews(nn.Module):
    """int64, int32 and bool tensors through views and data movement (bytes, not math)."""

    def forward(self, ids, mask, pos, small):  # int64 [4, 9], bool [4, 9], int64 [4, 9] in [0, 9), int32 [3, 5]
        a = ids[:, 1::2].t()
        b = torch.cat([ids, ids.flip(1)], 0)
        c = ids.unsqueeze(1).expand(4, 3, 9)
        d = F.pad(ids, (1, 2), value=7.0)
        e = mask.transpose(0, 1)[::3]
        f = torch.roll(mask, 2, 1)
        g = torch.stack(ids.chunk(3, 1), 0)
        h = ids.gather(1, pos)
        i = torch.tril(ids, 1)
        j = ids.repeat(2, 1)[:, -3:]
        k = F.pad(mask, (1, 1), mode="constant", value=1.0)
        m = small[1:3].flip(0)
        n = torch.cat([small, small.t()[:, :2].t()], 0).roll(1, 1).scatter(1, torch.tensor([[4], [0], [2], [1], [3]]), -3)
        o = F.pad(small, (2, 1), mode="reflect")
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o


class Factories(nn.Module):
    """zeros_like/ones_like/full_like/empty_like and new_* on run-time tensors, with and
    without dtype; zero_ and fill_ of run-time tensors; arange and friends (constant)."""

    def forward(self, x, ids):  # x: [3, 5], ids: int64 [2, 4]
        a = torch.zeros_like(x)
        b = torch.ones_like(x, dtype=torch.int64)
        c = torch.full_like(ids, 7)
        d = torch.full_like(x, -2.5)
        e = x.new_zeros((2, 3))
        f = x.new_ones(4)
        g = ids.new_full((3, 2), 5)
        h = torch.empty_like(ids).zero_()
        i = x.clone().fill_(3.25)
        j = torch.arange(x.size(1))
        k = torch.full_like(x, 1.0, dtype=torch.bool)
        m = x + torch.arange(0.5, 3.0, 0.5)[:5]
        n = torch.ones_like(ids, dtype=torch.int32)
        return a, b, c, d, e, f, g, h, i, j, k, m, n


class WindowMask(nn.Module):
    """A Swin transformer's shifted-window attention mask as torchvision builds it: slices of
    x.new_zeros filled with counters, windowed, compared and added to the scores (the frontend
    makes such a small factory at compile time, so all of it folds); beside it a factory too
    large to fold (over 64 KiB), which stays a fill at run time."""

    def forward(self, x, big):  # x: [B, 12, 8, C] (windows of 4 x 4, shift 2), big: [130, 131]
        b, h, w, c = x.shape
        ws, ss = 4, 2
        mask = x.new_zeros((h, w))
        count = 0
        for hs in ((0, -ws), (-ws, -ss), (-ss, None)):
            for wsl in ((0, -ws), (-ws, -ss), (-ss, None)):
                mask[hs[0]:hs[1], wsl[0]:wsl[1]] = count
                count += 1
        windows = (h // ws) * (w // ws)
        mask = mask.view(h // ws, ws, w // ws, ws).permute(0, 2, 1, 3).reshape(windows, ws * ws)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        t = torch.roll(x, shifts=(-ss, -ss), dims=(1, 2))
        t = t.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b * windows, ws * ws, c)
        scores = (t @ t.transpose(1, 2)).view(b, windows, ws * ws, ws * ws) + mask.unsqueeze(0)
        large = big.new_zeros((big.shape[0], big.shape[1])) + torch.ones_like(big) * 2.0
        return scores.softmax(-1), large - big


class ViewsOfInputs(nn.Module):
    """Returns views of its input directly (no op after them) and through matmul/add."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(7, 5))

    def forward(self, x):  # x: [6, 7]
        return x[1:4], x[:, 2], x.t()[2:], x.view(7, 6), x @ self.w[:, ::2], x[::2] + self.w.t()[1, :]


class InplaceViews(nn.Module):
    """In-place updates through views (slice assignment with a step, select, transpose),
    which the frontend writes back with slice_scatter / select_scatter."""

    def forward(self, x):  # x: [4, 6, 5]
        y = x * 1.0
        y[:, ::2] = y[:, 1::2] * 3.0
        y[1] = 0.5
        z = y.clone()
        z[..., 1:4:2].mul_(2.0)
        v = z.transpose(0, 1)[2]
        v.add_(1.0)
        return y, z


def _inputs_slicing():
    return [("x", torch.randn(5, 7, 9))]


def _inputs_permutes():
    return [("x", torch.randn(3, 5, 6)), ("y", torch.randn(4, 6))]


def _inputs_splits():
    return [("x", torch.randn(4, 7, 5))]


def _inputs_expand():
    return [("x", torch.randn(3, 1, 5)), ("z", torch.randn(2, 3, 4, 5))]


def _inputs_combine():
    return [("x", torch.randn(3, 5, 4)), ("y", torch.randn(3, 2, 4))]


def _inputs_pads():
    return [("x3", torch.randn(2, 3, 7)), ("x4", torch.randn(2, 3, 5, 6)), ("x5", torch.randn(1, 2, 4, 5, 3))]


def _inputs_shuffle():
    return [("x", torch.randn(2, 12, 5, 7))]


def _inputs_indexing():
    return [("x", torch.randn(5, 7, 6)), ("idx", torch.randint(0, 5, (3, 4)))]


def _inputs_int():
    return [("ids", torch.randint(-50, 50, (4, 9))), ("mask", torch.rand(4, 9) > 0.5),
            ("pos", torch.randint(0, 9, (4, 9))), ("small", torch.randint(-9, 9, (3, 5), dtype=torch.int32))]


def _inputs_factories():
    return [("x", torch.randn(3, 5)), ("ids", torch.randint(0, 9, (2, 4)))]


def _inputs_views_of_inputs():
    return [("x", torch.randn(6, 7))]


_CASES = {
    "views_slicing": (Slicing, _inputs_slicing),
    "views_permutes": (Permutes, _inputs_permutes),
    "views_splits": (Splits, _inputs_splits),
    "views_expand_repeat": (ExpandRepeat, _inputs_expand),
    "views_combine": (Combine, _inputs_combine),
    "views_pads": (Pads, _inputs_pads),
    "views_channel_shuffle": (ChannelShuffle, _inputs_shuffle),
    "views_indexing": (Indexing, _inputs_indexing),
    "views_index_put": (IndexPut, lambda: [("x", torch.randn(4, 7, 5)), ("v", torch.randn(5)),
                                          ("idx", torch.randint(-4, 4, (2, 3)))]),
    "views_scatter_reduce": (ScatterReduce, lambda: [("x", torch.randn(6, 9)), ("src", torch.randn(8, 9)),
                                                    ("idx", torch.randint(0, 6, (8, 9))),
                                                    ("msg", torch.randn(300, 9)),
                                                    ("dst", torch.randint(0, 11, (300,)))]),
    "views_im2col": (Im2col, lambda: [("x", torch.randn(2, 4, 11, 9))]),
    "views_col2im": (Col2im, lambda: [("x", torch.randn(2, 3, 12, 10)), ("cols", torch.randn(2, 12, 30))]),
    "views_int": (IntViews, _inputs_int),
    "views_factories": (Factories, _inputs_factories),
    "views_of_inputs": (ViewsOfInputs, _inputs_views_of_inputs),
    "views_window_mask": (WindowMask, lambda: [("x", torch.randn(2, 12, 8, 5)), ("big", torch.randn(130, 131))]),
    "views_inplace": (InplaceViews, lambda: [("x", torch.randn(4, 6, 5))]),
}


def _builder(cls, make_inputs, traced):
    def build():
        torch.manual_seed(0)
        module = cls().eval()
        inputs = make_inputs()
        if traced:
            with torch.no_grad():
                ts = torch.jit.trace(module, tuple(t for _, t in inputs), check_trace=False)
        else:
            ts = torch.jit.script(module)
        return ts, inputs
    return build


MODELS_VIEWS = {}
for _name, (_cls, _make) in _CASES.items():
    MODELS_VIEWS[_name + "_scripted"] = _builder(_cls, _make, traced=False)
    MODELS_VIEWS[_name + "_traced"] = _builder(_cls, _make, traced=True)
