"""Test models of the sequence area: transformers, attention, RNNs, and the
matrix-product, layer-norm and embedding ops they are built from. Same contract as
models.py: each builder returns (module, inputs) with a TorchScript module in eval mode and
inputs as (name, tensor) in forward()'s order; everything is seeded.

Traced transformer modules are traced under torch.no_grad(): that is when nn.MultiheadAttention
and nn.TransformerEncoderLayer take their fused fast paths (aten::_native_multi_head_attention,
aten::_transformer_encoder_layer_fwd), as they do in a user's inference code."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize(module, scale=0.5):
    """Non-trivial values for every parameter and buffer (LayerNorm starts at 1 and 0)."""
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-scale, scale)
    return module


def _trace(module, *inputs):
    with torch.no_grad():
        return torch.jit.trace(module, inputs)


def _padding_mask(batch, seq, lengths):
    """Bool [batch, seq], True for the first lengths[b] positions: every row keeps a key."""
    mask = torch.zeros(batch, seq, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, :n] = True
    return mask


# ---------------------------------------------------------------- op models
class MatmulOps(nn.Module):
    """Every torch.matmul broadcasting case, mm, bmm and baddbmm's self shapes."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(7, 5))
        self.bias_col = nn.Parameter(torch.randn(5))
        self.bias_row = nn.Parameter(torch.randn(3, 1))
        self.bias_full = nn.Parameter(torch.randn(3, 5))
        self.bias_batch = nn.Parameter(torch.randn(4, 1, 5))

    def forward(self, a, b, v):
        # a [4, 3, 7], b [4, 7, 5], v [7]
        outs = [
            torch.matmul(a, self.w),                         # batched @ 2-d: folded into M
            torch.matmul(v, b),                              # 1-d @ batched -> [4, 5]
            torch.matmul(a, v),                              # batched @ 1-d -> [4, 3]
            a * torch.matmul(v, v),                          # 1-d @ 1-d -> 0-d
            torch.matmul(v, self.w),                         # 1-d @ 2-d
            torch.matmul(a.view(2, 2, 3, 7).unsqueeze(0), b.view(2, 2, 7, 5)),  # [1,2,2] x [2,2] batch
            torch.matmul(a.view(4, 1, 3, 7), b.view(1, 4, 7, 5)),  # [4,1] x [1,4] batch -> [4, 4]
            torch.mm(a.view(12, 7), self.w),
            torch.bmm(a, b),
            torch.baddbmm(self.bias_col, a, b),
            torch.baddbmm(self.bias_row, a, b, beta=0.5, alpha=2.0),
            torch.baddbmm(self.bias_full, a, b, alpha=-1.0),
            torch.baddbmm(self.bias_batch, a, b, beta=2.0),
            torch.baddbmm(torch.bmm(a, b), a, b, beta=0.0),
            torch.baddbmm(a.sum() * torch.ones(1), a, b),
        ]
        return outs


def matmul_ops():
    torch.manual_seed(20)
    args = (torch.randn(4, 3, 7), torch.randn(4, 7, 5), torch.randn(7))
    return torch.jit.script(MatmulOps().eval()), [("a", args[0]), ("b", args[1]), ("v", args[2])]


class EinsumOps(nn.Module):
    """torch.einsum's forms (batch, contraction, outer product, diagonal, trace, ellipsis
    with broadcasting, implicit output with upper case, a size-1 label broadcast, three
    operands, a weight operand, operands that are views) and the products lowered through
    it: dot, vdot, outer, ger, mv, inner, tensordot, trace, bilinear, chain_matmul and
    linalg.multi_dot."""

    def __init__(self):
        super().__init__()
        self.rel = nn.Parameter(torch.randn(5, 3, 6))  # mvit's "byhwc,hkc->byhwk" table
        self.bilinear = nn.Bilinear(6, 7, 4)
        self.bilinear_nb = nn.Bilinear(6, 6, 3, bias=False)
        self.sq = nn.Parameter(torch.randn(6, 6))

    def forward(self, q, k, v):
        # q [2, 3, 5, 6], k [2, 3, 7, 6], v [2, 3, 7, 6]
        s = torch.einsum("bhid,bhjd->bhij", q, k)                 # no copy either side
        o = torch.einsum("B H I J, B H J D -> B H I D", s, v)     # spaces, upper case
        t = torch.einsum("bhjd,bhid->bhij", k.transpose(2, 3).transpose(2, 3), q * 0.5)
        rel = torch.einsum("bhwc,wkc->bhwk", q, self.rel)          # weight operand
        outer = torch.einsum("i,j->ij", q[0, 0, 0], k[0, 0, :, 1])
        diag = torch.einsum("ii->i", self.sq) + torch.einsum("ii", self.sq)
        red = torch.einsum("...ij->ij", q) + torch.einsum("bhid->d", q)
        bcast = torch.einsum("...id,...jd->...ij", q[:, :1], k)    # ellipsis broadcast
        imp = torch.einsum("bD,Dc", q[0, 0], self.sq)              # implicit output "bc"
        three = torch.einsum("ij,jk,kl->il", q[0, 0], self.sq, k[1, 2].t())
        lab1 = torch.einsum("ij,ij->ij", q[0, :1, 0], q[1, :, 2])  # size-1 label broadcast
        perm = torch.einsum("abcd->dbca", q)
        prods = [
            torch.dot(q[0, 0, 0], k[1, 1, 1]),
            torch.vdot(q[1, 0, 0], q[0, 1, 2]),
            torch.outer(q[0, 0, 1], k[0, 0, 0, :5]),
            torch.ger(q[0, 1, 1], k[1, 0, 0]),
            torch.mv(k[0, 0], q[0, 0, 0]),
            torch.inner(q[0], k[1, 0]),
            torch.inner(q[0, 0], q[1, 1, 1, 1]),
            torch.tensordot(q, k, dims=([1, 3], [1, 3])),
            torch.tensordot(q[0], self.rel.permute(0, 2, 1), dims=2),
            torch.trace(self.sq) + torch.trace(q[0, 0]),
            self.bilinear(q[:, 0, :, :], v[:, 0, :5, :].repeat(1, 1, 2)[..., :7]),
            self.bilinear_nb(q[0, 0], k[0, 0, :5]),
            torch.chain_matmul(q[0, 0], self.sq, k[0, 0].t()),
            torch.linalg.multi_dot([q[0, 0, 0], self.sq, k[0, 0].t()]),
            torch.linalg.multi_dot([q[0, 0], self.sq, k[0, 0, 0]]),
        ]
        return (s, o, t, rel, outer, diag, red, bcast, imp, three, lab1, perm), prods


def einsum_ops():
    torch.manual_seed(21)
    args = (torch.randn(2, 3, 5, 6), torch.randn(2, 3, 7, 6), torch.randn(2, 3, 7, 6))
    return torch.jit.script(EinsumOps().eval()), [("q", args[0]), ("k", args[1]), ("v", args[2])]


def einsum_ops_traced():
    torch.manual_seed(21)
    args = (torch.randn(2, 3, 5, 6), torch.randn(2, 3, 7, 6), torch.randn(2, 3, 7, 6))
    m = EinsumOps().eval()
    return torch.jit.trace(m, args, check_trace=False), [("q", args[0]), ("k", args[1]), ("v", args[2])]


class LayerNormOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_last = nn.LayerNorm(9)
        self.ln_two = nn.LayerNorm((5, 9), eps=1e-3)
        self.ln_plain = nn.LayerNorm(9, elementwise_affine=False)
        self.ln_no_bias = nn.LayerNorm(9, bias=False)
        # rows whose width is a multiple of 4 (CUDA: one warp per row, up to 1024) and wider
        self.ln_516 = nn.LayerNorm(516)
        self.ln_1024 = nn.LayerNorm(1024, bias=False)
        self.ln_1028 = nn.LayerNorm(1028)

    def forward(self, x, w):
        # x [3, 5, 9], with an offset: the mean is large against the spread; w [7, 1028]
        return (self.ln_last(x), self.ln_two(x), self.ln_plain(x + 100.0), self.ln_no_bias(x),
                F.layer_norm(x, (9,), None, None, 1e-6), self.ln_516(w[:, :516]), self.ln_1024(w[:, 4:]),
                self.ln_1028(w), F.layer_norm(w[:, :128] + 50.0, (128,)))


def layer_norm_ops():
    torch.manual_seed(21)
    m = _randomize(LayerNormOps().eval())
    return torch.jit.script(m), [("x", torch.randn(3, 5, 9) * 2 + 1), ("w", torch.randn(7, 1028) * 3 - 1)]


class SdpaOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("float_mask", torch.randn(6, 10))
        keep = torch.rand(3, 1, 10) > 0.3
        keep[..., 0] = True
        self.register_buffer("head_mask", keep)  # per head, shared by the query rows

    def forward(self, q, k, v, bool_mask, k6, v6, kb, vb, qp, kp, vp):
        # q [2, 3, 6, 8], k [2, 3, 10, 8], v [2, 3, 10, 5], bool_mask [2, 1, 6, 10],
        # k6/v6 with 6 keys (causal), kb/vb [1, 3, 10, *] (broadcast over the batch),
        # qp/kp/vp [2, L, 3, E] as a projection lays them out (read through the views' strides)
        return (
            F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, attn_mask=self.float_mask),
            F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask, scale=0.3),
            F.scaled_dot_product_attention(q, k6, v6, is_causal=True),
            F.scaled_dot_product_attention(q.view(6, 6, 8), k.view(6, 10, 8), v.view(6, 10, 5), dropout_p=0.0),
            F.scaled_dot_product_attention(q, kb, vb, attn_mask=self.head_mask),
            F.scaled_dot_product_attention(qp.transpose(1, 2), kp.transpose(1, 2), vp.transpose(1, 2),
                                           attn_mask=bool_mask),
            F.scaled_dot_product_attention(q[:, :, ::2], k[:, :, 1:], v[:, :, 1:], is_causal=True),
            F.scaled_dot_product_attention(q, k.flip(2), v.flip(2)),
            F.scaled_dot_product_attention(qp.permute(2, 0, 1, 3), kb[0].unsqueeze(1), vb[0].unsqueeze(1)),
            # the heads put back side by side, as BERT does (written there by the attention)
            F.scaled_dot_product_attention(qp.transpose(1, 2), kp.transpose(1, 2),
                                           vp.transpose(1, 2)).transpose(1, 2).reshape(2, 6, 15),
            F.scaled_dot_product_attention(qp[:1].transpose(1, 2), kp[:1].transpose(1, 2),
                                           vp[:1].transpose(1, 2)).transpose(1, 2).reshape(1, 6, 15),
            # one query row (its view's row stride is never stepped), the output permuted
            F.scaled_dot_product_attention(q[:, :, :1], k, v).permute(1, 0, 2, 3),
            # batch dims whose view strides do not fold to (batch, heads): read densely
            F.scaled_dot_product_attention(qp.reshape(2, 6, 24).view(2, 6, 3, 2, 4).permute(0, 3, 2, 1, 4),
                                           kp.reshape(2, 10, 24).view(2, 10, 3, 2, 4).permute(0, 3, 2, 1, 4),
                                           kp.reshape(2, 10, 24).view(2, 10, 3, 2, 4).permute(0, 3, 2, 1, 4)),
        )


def sdpa_ops():
    torch.manual_seed(22)
    mask = torch.rand(2, 1, 6, 10) > 0.4
    mask[..., 0] = True  # no fully masked row
    inputs = [("q", torch.randn(2, 3, 6, 8)), ("k", torch.randn(2, 3, 10, 8)), ("v", torch.randn(2, 3, 10, 5)),
              ("bool_mask", mask), ("k6", torch.randn(2, 3, 6, 8)), ("v6", torch.randn(2, 3, 6, 5)),
              ("kb", torch.randn(1, 3, 10, 8)), ("vb", torch.randn(1, 3, 10, 5)),
              ("qp", torch.randn(2, 6, 3, 8)), ("kp", torch.randn(2, 10, 3, 8)), ("vp", torch.randn(2, 10, 3, 5))]
    return torch.jit.script(SdpaOps().eval()), inputs


class AttentionPieces(nn.Module):
    """Attention written out as its pieces, in the forms passes/fuse_attention.cpp fuses and
    those it must leave: (a) cross attention (7 queries, 9 keys, value width 5 != 6) with the
    scale after the product and two constant biases, one per head and one per (image, query),
    q, k and v sliced from one projection; (b) q / sqrt(d) and a full-size mask that is a
    run-time input; (c) the scores also returned (not fused); (d) k stored as k^T by its own
    transpose, the mask repeating over the batch with period 2 (windows per image); (e) a
    Hugging Face padding mask, (1 - keep[:, None, None, :]) * -10000, broadcast over heads and
    queries; (f) a run-time mask and a constant bias together (not fused)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 18)
        self.head_bias = nn.Parameter(torch.randn(2, 7, 9))
        self.query_bias = nn.Parameter(torch.randn(3, 1, 7, 1))
        self.window_mask = nn.Parameter(torch.randn(2, 1, 7, 7))

    def forward(self, x, mem, v, run_mask, keep):
        # x [3, 7, 6], mem [3, 9, 6], v [3, 2, 9, 5], run_mask [3, 2, 7, 9], keep [3, 9] (0 or 1)
        q = self.proj(x)[..., :6].view(3, 7, 2, 3).transpose(1, 2)
        k = self.proj(mem)[..., 6:12].view(3, 9, 2, 3).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * 0.5 + self.head_bias + self.query_bias
        a = s.softmax(-1) @ v
        s2 = (q / 1.7320508) @ k.transpose(-2, -1) + run_mask
        b = s2.softmax(-1) @ v
        k2 = self.proj(mem)[..., 12:].view(3, 9, 2, 3).transpose(1, 2)
        s3 = q @ k2.transpose(-2, -1)
        c = s3.softmax(-1) @ v
        qq = self.proj(x)[..., 12:].reshape(6, 7, 3)  # 3 images x 2 windows
        kt = qq.transpose(1, 2).contiguous()
        s4 = (qq @ kt).view(3, 2, 7, 7) + self.window_mask.transpose(0, 1)
        d = s4.view(6, 7, 7).softmax(-1) @ qq
        k3 = self.proj(x)[..., 6:12].view(3, 7, 2, 3).transpose(1, 2)
        v3 = self.proj(x)[..., 12:].view(3, 7, 2, 3).transpose(1, 2)
        ext = (1.0 - keep[:, None, None, :7]) * -10000.0
        e = ((q @ k3.transpose(-2, -1)) * 0.3 + ext).softmax(-1) @ v3
        f = ((q * 1.1) @ k2.transpose(-2, -1) + run_mask + self.head_bias).softmax(-1) @ v
        return a, b, c, s3, d, e, f


def attention_pieces():
    torch.manual_seed(23)
    m = AttentionPieces().eval()
    keep = (torch.rand(3, 9) > 0.3).float()
    keep[:, 0] = 1.0
    inputs = [("x", torch.randn(3, 7, 6)), ("mem", torch.randn(3, 9, 6)), ("v", torch.randn(3, 2, 9, 5)),
              ("run_mask", torch.randn(3, 2, 7, 9)), ("keep", keep)]
    return torch.jit.trace(m, tuple(t for _, t in inputs)), inputs


class EmbeddingOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 12, padding_idx=0)

    def forward(self, ids):
        return self.emb(ids), F.embedding(ids.view(-1), self.emb.weight)


def embedding_ops():
    torch.manual_seed(23)
    ids = torch.randint(0, 50, (3, 7), dtype=torch.int64)
    ids[0, 0] = 0
    return torch.jit.script(EmbeddingOps().eval()), [("ids", ids)]


class EmbeddingBagOps(nn.Module):
    """nn.EmbeddingBag and F.embedding_bag: bags of a flat text by offsets (one bag empty) in
    mean mode with a padding id, sum with per-sample weights and int32 ids, sum with
    include_last_offset, max over a 2-d batch of fixed-length bags; and a text classifier
    (bag of embeddings then a linear layer, torchtext's tutorial model)."""

    def __init__(self):
        super().__init__()
        self.mean_bag = nn.EmbeddingBag(50, 12, mode="mean", padding_idx=2)
        self.max_bag = nn.EmbeddingBag(50, 12, mode="max")
        self.classifier_bag = nn.EmbeddingBag(50, 16)
        self.fc = nn.Linear(16, 4)

    def forward(self, text, offsets, weights, batch):
        w = self.mean_bag.weight
        return (self.mean_bag(text, offsets),
                F.embedding_bag(text.int(), w, offsets.int(), mode="sum", per_sample_weights=weights),
                F.embedding_bag(text, w, torch.cat([offsets, offsets.new_full([1], text.shape[0])]),
                                mode="sum", include_last_offset=True),
                self.max_bag(batch),
                self.fc(self.classifier_bag(text, offsets)))


def _embedding_bag_inputs():
    torch.manual_seed(23)
    text = torch.randint(0, 50, (17,), dtype=torch.int64)
    text[[1, 5, 6]] = 2  # padding ids (mean mode skips them)
    return [("text", text), ("offsets", torch.tensor([0, 4, 4, 9, 13])),  # bag 1 empty
            ("weights", torch.rand(17) + 0.5), ("batch", torch.randint(0, 50, (3, 5), dtype=torch.int64))]


def embedding_bag_ops():
    torch.manual_seed(23)
    return torch.jit.script(_randomize(EmbeddingBagOps()).eval()), _embedding_bag_inputs()


def embedding_bag_ops_traced():
    torch.manual_seed(23)
    inputs = _embedding_bag_inputs()
    return _trace(_randomize(EmbeddingBagOps()).eval(), *(t for _, t in inputs)), inputs


# ---------------------------------------------------------------- transformers
def _encoder():
    torch.manual_seed(24)
    post = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True), 2, enable_nested_tensor=False)
    pre = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(64, 4, dim_feedforward=96, activation="gelu", norm_first=True, batch_first=True),
        1, enable_nested_tensor=False)
    return _randomize(nn.Sequential(post, pre), 0.3).eval(), torch.randn(2, 11, 64)


def transformer_encoder():
    """Traced: two post-norm relu layers and one pre-norm GELU layer, each one fused
    aten::_transformer_encoder_layer_fwd."""
    m, x = _encoder()
    return _trace(m, x), [("input", x)]


def transformer_encoder_scripted():
    m, x = _encoder()
    return torch.jit.script(m), [("input", x)]


class MhaModel(nn.Module):
    """Self-attention with a (constant) bool causal attention mask and a bool key padding
    mask input; returns the output and the head-averaged weights."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)
        self.register_buffer("causal", torch.ones(9, 9, dtype=torch.bool).triu(1))

    def forward(self, x, key_padding_mask):
        return self.mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=self.causal)


def _mha():
    torch.manual_seed(25)
    m = _randomize(MhaModel(), 0.4).eval()
    x = torch.randn(3, 9, 32)
    pad = ~_padding_mask(3, 9, [9, 5, 2])  # True = padding (ignored)
    return m, x, pad


def multihead_attention():
    m, x, pad = _mha()
    return _trace(m, x, pad), [("x", x), ("key_padding_mask", pad)]


class MhaConstMasks(nn.Module):
    """Both masks fixed (buffers): torch merges them at compile time into one [B, H, T, S]
    mask (mask_type 2); need_weights=False, per-head weights off."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)
        self.register_buffer("causal", torch.ones(9, 9, dtype=torch.bool).triu(1))
        self.register_buffer("padding", ~_padding_mask(3, 9, [9, 5, 2]))

    def forward(self, x):
        out, _ = self.mha(x, x, x, key_padding_mask=self.padding, attn_mask=self.causal, need_weights=False)
        per_head = self.mha(x, x, x, key_padding_mask=self.padding, average_attn_weights=False)
        return out, per_head[0], per_head[1]


def multihead_attention_const_masks():
    torch.manual_seed(31)
    m = _randomize(MhaConstMasks(), 0.4).eval()
    x = torch.randn(3, 9, 32)
    return _trace(m, x), [("x", x)]


def multihead_attention_scripted():
    m, x, pad = _mha()
    return torch.jit.script(m), [("x", x), ("key_padding_mask", pad)]


class BertLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1 = nn.Linear(d, ff)
        self.act = nn.GELU()
        self.ff2 = nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        b, s, d = x.shape
        h = self.heads
        q = self.q(x).view(b, s, h, d // h).transpose(1, 2)
        k = self.k(x).view(b, s, h, d // h).transpose(1, 2)
        v = self.v(x).view(b, s, h, d // h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        a = a.transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.ff2(self.act(self.ff1(x))))


class BertEncoder(nn.Module):
    """BERT-style: word + position + token-type embeddings, LayerNorm, then post-norm layers
    whose attention takes a bool mask (True = attend) built from the [B, S] padding mask."""

    def __init__(self, vocab=100, d=48, heads=4, ff=96, layers=2, seq=13):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=0)
        self.position = nn.Parameter(torch.randn(1, seq, d) * 0.1)
        self.token_type = nn.Parameter(torch.randn(d) * 0.1)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d, heads, ff) for _ in range(layers)])

    def forward(self, ids, mask):
        x = self.ln(self.word(ids) + self.position + self.token_type)
        attn_mask = mask.view(mask.size(0), 1, 1, mask.size(1))
        for layer in self.layers:
            x = layer(x, attn_mask)
        return x


def _bert():
    torch.manual_seed(26)
    m = BertEncoder().eval()
    ids = torch.randint(1, 100, (2, 13), dtype=torch.int64)
    mask = _padding_mask(2, 13, [13, 8])
    ids[1, 8:] = 0
    return m, ids, mask


def bert_encoder():
    m, ids, mask = _bert()
    return _trace(m, ids, mask), [("ids", ids), ("mask", mask)]


def bert_encoder_scripted():
    m, ids, mask = _bert()
    return torch.jit.script(m), [("ids", ids), ("mask", mask)]


# ---------------------------------------------------------------- RNNs
class RnnModel(nn.Module):
    """2 layers, bidirectional, batch_first, with the initial state given; then a second
    RNN, time-major, without one. Subclasses give forward()."""

    def __init__(self, cls):
        super().__init__()
        self.rnn = cls(10, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.rnn2 = cls(32, 8, num_layers=1, batch_first=False)


class LstmModel(RnnModel):
    def __init__(self):
        super().__init__(nn.LSTM)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        z, (h2, c2) = self.rnn2(y.transpose(0, 1))
        return y, h, c, z, h2, c2


class GruModel(RnnModel):
    def __init__(self):
        super().__init__(nn.GRU)

    def forward(self, x, h0):
        y, h = self.rnn(x, h0)
        z, h2 = self.rnn2(y.transpose(0, 1))
        return y, h, z, h2


def _lstm_inputs():
    torch.manual_seed(27)
    return [("x", torch.randn(3, 7, 10)), ("h0", torch.randn(4, 3, 16)), ("c0", torch.randn(4, 3, 16))]


def lstm():
    inputs = _lstm_inputs()
    m = LstmModel().eval()
    return _trace(m, *[t for _, t in inputs]), inputs


def lstm_scripted():
    inputs = _lstm_inputs()
    return torch.jit.script(LstmModel().eval()), inputs


def _gru_inputs():
    torch.manual_seed(28)
    return [("x", torch.randn(3, 7, 10)), ("h0", torch.randn(4, 3, 16))]


def gru():
    inputs = _gru_inputs()
    m = GruModel().eval()
    return _trace(m, *[t for _, t in inputs]), inputs


def gru_scripted():
    inputs = _gru_inputs()
    return torch.jit.script(GruModel().eval()), inputs


# ---------------------------------------------------------------- torchvision
def vit_b_16():
    """vit_b_16 itself (12 layers, width 768, 12 heads) at a 64x64 input (4x4 patches + the
    class token: 17 tokens); its attention is the MHA fast path when traced. torchvision
    initialises the classifier head to zeros (every output would be 0 and the comparison
    could not fail): it gets random weights."""
    import torchvision
    torch.manual_seed(29)
    m = torchvision.models.vit_b_16(image_size=64).eval()
    with torch.no_grad():
        m.heads.head.weight.normal_(0.0, 0.05)
        m.heads.head.bias.normal_(0.0, 0.05)
    x = torch.randn(1, 3, 64, 64)
    return _trace(m, x), [("x", x)]


def vit_b_16_scripted():
    """vit_b_16 scripted: its attention goes through nn.MultiheadAttention's Python code
    (in_projection_packed, scaled_dot_product_attention) rather than the traced fast path.
    The classifier gets random weights, as in vit_b_16 (torchvision's zeros hide any error)."""
    import torchvision
    torch.manual_seed(29)
    m = torchvision.models.vit_b_16(image_size=64).eval()
    with torch.no_grad():
        m.heads.head.weight.normal_(0.0, 0.05)
        m.heads.head.bias.normal_(0.0, 0.05)
    return torch.jit.script(m), [("x", torch.randn(1, 3, 64, 64))]


def convnext_tiny():
    import torchvision
    torch.manual_seed(30)
    m = torchvision.models.convnext_tiny().eval()
    x = torch.randn(1, 3, 64, 64)
    return _trace(m, x), [("x", x)]


def convnext_tiny_scripted():
    import torchvision
    torch.manual_seed(30)
    m = torchvision.models.convnext_tiny().eval()
    return torch.jit.script(m), [("x", torch.randn(1, 3, 64, 64))]


MODELS_SEQUENCE = {
    "matmul_ops": matmul_ops,
    "einsum_ops": einsum_ops,
    "einsum_ops_traced": einsum_ops_traced,
    "layer_norm_ops": layer_norm_ops,
    "sdpa_ops": sdpa_ops,
    "attention_pieces": attention_pieces,
    "embedding_ops": embedding_ops,
    "embedding_bag_ops": embedding_bag_ops,
    "embedding_bag_ops_traced": embedding_bag_ops_traced,
    "transformer_encoder": transformer_encoder,
    "transformer_encoder_scripted": transformer_encoder_scripted,
    "multihead_attention": multihead_attention,
    "multihead_attention_scripted": multihead_attention_scripted,
    "multihead_attention_const_masks": multihead_attention_const_masks,
    "bert_encoder": bert_encoder,
    "bert_encoder_scripted": bert_encoder_scripted,
    "lstm": lstm,
    "lstm_scripted": lstm_scripted,
    "gru": gru,
    "gru_scripted": gru_scripted,
    "vit_b_16": vit_b_16,
    "vit_b_16_scripted": vit_b_16_scripted,
    "convnext_tiny": convnext_tiny,
    "convnext_tiny_scripted": convnext_tiny_scripted,
}
