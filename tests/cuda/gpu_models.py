"""Models of the CUDA suite (tests/cuda/check_cuda_models.py, bench/gpu_bench.py): the
torchvision classifiers of the GPU benchmark and the transformers (vit_b_16 at 224x224, a BERT-base
encoder: 12 layers, width 768, 12 heads, sequence 128) with seeded random weights, and the
small op models of the CPU suite (tests/e2e/models.py), which cover every op kind the CUDA
target has.
Each builder returns (TorchScript module, [(input name, tensor)], eager nn.Module or None)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from models import MODELS  # noqa: E402


def _torchvision(name, seed, batch, size=224, script=False):
    def build():
        import torchvision
        torch.manual_seed(seed)
        m = getattr(torchvision.models, name)().eval()
        x = torch.randn(batch, 3, size, size)
        ts = torch.jit.script(m) if script else torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


def _vit_b_16(size, batch=1):
    """torchvision's vit_b_16 (at 224x224: 197 tokens), traced under no_grad as a user's
    inference code runs it: its attention is the MHA fast path (_native_multi_head_attention).
    torchvision initialises the classifier head to zeros, which would make every output 0 and
    any comparison pass: it gets random weights here."""
    def build():
        import torchvision
        torch.manual_seed(9)
        m = torchvision.models.vit_b_16(image_size=size).eval()
        with torch.no_grad():
            m.heads.head.weight.normal_(0.0, 0.05)
            m.heads.head.bias.normal_(0.0, 0.05)
        x = torch.randn(batch, 3, size, size)
        with torch.no_grad():
            ts = torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


def _encoder_layers(norm_first, activation, layers):
    """nn.TransformerEncoder traced under no_grad: each layer one fused
    aten::_transformer_encoder_layer_fwd (post-norm or pre-norm, relu or GELU)."""
    def build():
        import torch.nn as nn
        from models_sequence import _randomize
        torch.manual_seed(32)
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=96, activation=activation, norm_first=norm_first,
                                           batch_first=True)
        m = _randomize(nn.TransformerEncoder(layer, layers, enable_nested_tensor=False), 0.3).eval()
        x = torch.randn(2, 11, 64)
        with torch.no_grad():
            ts = torch.jit.trace(m, x)
        return ts, [("src", x)], m
    return build


class _MlpGelu(torch.nn.Module):
    """Linear layers followed by GELUs (tanh, then erf), which the CUDA generator fuses into
    the GEMMs' epilogue, and one whose result is also read by the add after its GELU, which
    it must not."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(37, 64)
        self.b = torch.nn.Linear(64, 48)
        self.c = torch.nn.Linear(48, 48)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.a(x), approximate="tanh")
        h = torch.nn.functional.gelu(self.b(h))
        g = self.c(h)
        return torch.nn.functional.gelu(g) + g


def _mlp_gelu():
    torch.manual_seed(3)
    m = _MlpGelu().eval()
    x = torch.randn(7, 37) * 3.0
    return torch.jit.script(m), [("x", x)], m


def _bert_base(batch=1):
    """The BERT-style encoder of the CPU suite (tests/e2e/models_sequence.py) at BERT-base
    size: vocabulary 30522, 12 layers, width 768, 12 heads, feed-forward 3072, sequence 128;
    at batch 1 the last 28 positions are padding, at larger batches entry b keeps
    128 - 28 b % 128 (bool mask, True = attend)."""
    def build():
        from models_sequence import BertEncoder, _padding_mask
        torch.manual_seed(10)
        m = BertEncoder(vocab=30522, d=768, heads=12, ff=3072, layers=12, seq=128).eval()
        ids = torch.randint(1, 30522, (batch, 128), dtype=torch.int64)
        lengths = [128 - (28 * (b + 1)) % 128 for b in range(batch)]
        mask = _padding_mask(batch, 128, lengths)
        for b, n in enumerate(lengths):
            ids[b, n:] = 0
        with torch.no_grad():
            ts = torch.jit.trace(m, (ids, mask))
        return ts, [("ids", ids), ("mask", mask)], m
    return build


def _mc3_18_clip():
    """torchvision's mc3_18 video classifier on a Kinetics-sized clip: 16 frames of 112x112."""
    def build():
        import torchvision
        torch.manual_seed(29)
        m = torchvision.models.video.mc3_18(weights=None).eval()
        x = torch.randn(1, 3, 16, 112, 112)
        with torch.no_grad():
            ts = torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


class _SegmentationOut(torch.nn.Module):
    """A torchvision segmentation model's "out" map (its forward returns a dict)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def _fcn_resnet50(size):
    """torchvision's fcn_resnet50 (a dilated resnet50, bilinear upsampling to the input)."""
    def build():
        import torchvision
        torch.manual_seed(31)
        m = _SegmentationOut(torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None,
                                                                          aux_loss=False)).eval()
        x = torch.randn(1, 3, size, size)
        with torch.no_grad():
            ts = torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


class _LstmTagger(torch.nn.Module):
    """A 2-layer LSTM over a sequence (batch first) and a linear layer on every step."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.lstm = torch.nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y)


def _lstm_tagger(batch, steps):
    def build():
        torch.manual_seed(33)
        m = _LstmTagger(128, 256, 32).eval()
        x = torch.randn(batch, steps, 128)
        with torch.no_grad():
            ts = torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


class _LongSorts(torch.nn.Module):
    """Sorts of lines longer than a block sorts in shared memory: a top-k over a GPT-2
    vocabulary (sampling), a full descending sort with indices, row argsorts and medians."""

    def forward(self, logits, v, rows, m):
        top_v, top_i = torch.topk(logits, 50, dim=-1)
        s, si = torch.sort(v, descending=True)
        return top_v, top_i, s, si, torch.argsort(rows, dim=1), torch.median(m, dim=1).values


def _long_sorts():
    def build():
        torch.manual_seed(35)
        # Distinct values (a permutation, scaled), so that every order is the one order.
        def distinct(*shape):
            n = 1
            for d in shape:
                n *= d
            return (torch.randperm(n).float() / 7.0 - n / 14.0).reshape(shape)
        inputs = [("logits", distinct(4, 50257)), ("v", distinct(262144)), ("rows", distinct(64, 1000)),
                  ("m", distinct(8, 10001))]
        m = _LongSorts().eval()
        return torch.jit.script(m), inputs, m
    return build


class _GraphConv(torch.nn.Module):
    """Two rounds of message passing as graph networks write them (PyTorch Geometric's
    GraphConv / SAGEConv with plain torch ops): each edge's message is its source node's
    features, summed (index_add_) and averaged (scatter_reduce "mean") at its destination,
    with a max-aggregated branch; 10000 nodes, 200000 edges, 64 features."""

    def __init__(self, features=64):
        super().__init__()
        self.lin1 = torch.nn.Linear(2 * features, features)
        self.lin2 = torch.nn.Linear(2 * features, features)

    def forward(self, x, src, dst):
        n, f = x.shape
        index = dst.unsqueeze(1).expand(-1, f)
        summed = torch.zeros_like(x).index_add_(0, dst, x[src])
        h = torch.relu(self.lin1(torch.cat([x, summed], dim=1)))
        mean = torch.zeros_like(h).scatter_reduce(0, index, h[src], "mean", include_self=False)
        peak = h.scatter_reduce(0, index, h[src], "amax", include_self=True)
        return self.lin2(torch.cat([mean, peak], dim=1))


def _graph_conv():
    def build():
        torch.manual_seed(36)
        nodes, edges = 10000, 200000
        inputs = [("x", torch.randn(nodes, 64)), ("src", torch.randint(0, nodes, (edges,))),
                  ("dst", torch.randint(0, nodes, (edges,)))]
        m = _GraphConv().eval()
        return torch.jit.script(m), inputs, m
    return build


def _small(name):
    def build():
        module, inputs = MODELS[name]()
        return module, inputs, None
    return build


GPU_MODELS = {
    "resnet18": _torchvision("resnet18", 5, 1),
    "resnet50": _torchvision("resnet50", 8, 1),
    "mobilenet_v2": _torchvision("mobilenet_v2", 6, 1, script=True),
    "mobilenet_v2_b32": _torchvision("mobilenet_v2", 6, 32),
    "resnet50_b32": _torchvision("resnet50", 8, 32),
    "efficientnet_b0": _torchvision("efficientnet_b0", 22, 1),
    "efficientnet_b0_b32": _torchvision("efficientnet_b0", 22, 32),
    # squeeze-and-excitation with a relu and a hardsigmoid (tests/e2e's mobilenet_v3_small: batch 1)
    "mobilenet_v3_small_b32": _torchvision("mobilenet_v3_small", 21, 32),
    "convnext_tiny": _torchvision("convnext_tiny", 23, 1),
    "convnext_tiny_b32": _torchvision("convnext_tiny", 23, 32),
    "swin_t": _torchvision("swin_t", 24, 1),
    "swin_t_b32": _torchvision("swin_t", 24, 32),
}
GPU_MODELS["vit_b_16"] = _vit_b_16(224)
GPU_MODELS["vit_b_16_64"] = _vit_b_16(64)
GPU_MODELS["vit_b_16_b8"] = _vit_b_16(224, 8)
GPU_MODELS["bert_base"] = _bert_base()
GPU_MODELS["bert_base_b8"] = _bert_base(8)
GPU_MODELS["encoder_post_relu"] = _encoder_layers(False, "relu", 2)
GPU_MODELS["encoder_pre_gelu"] = _encoder_layers(True, "gelu", 1)
GPU_MODELS["mlp_gelu"] = _mlp_gelu
GPU_MODELS["mc3_18_clip"] = _mc3_18_clip()
GPU_MODELS["fcn_resnet50"] = _fcn_resnet50(224)
GPU_MODELS["lstm_tagger"] = _lstm_tagger(1, 64)
GPU_MODELS["long_sorts"] = _long_sorts()
GPU_MODELS["graph_conv"] = _graph_conv()
for _name in ["mlp", "small_cnn", "conv_shapes", "winograd_shapes", "two_inputs", "activations", "dict_out",
              # transformer ops (layer_norm, attention with every mask kind, embedding, assemble)
              "layer_norm_ops", "sdpa_ops", "embedding_ops", "transformer_encoder", "multihead_attention",
              "multihead_attention_const_masks", "bert_encoder",
              # einsum and the products lowered through it (batched GEMMs with transposed operands)
              "einsum_ops", "maxvit_t",
              # ops composed of other IR ops (rms_norm, cosine_similarity, one_hot, hypot, ...)
              "pw_composite_float", "pw_arith", "pw_activations", "pw_activations_traced", "pw_masks",
              # views read at an offset (slices with a step, select, flip), permutes, expands, pads
              "views_slicing_traced", "views_permutes_traced", "views_splits_traced", "views_pads_traced",
              "views_channel_shuffle_traced"]:
    GPU_MODELS[_name] = _small(_name)
