"""Quantized models (torch.ao.quantization) for the end-to-end suite: under torch's engine
"fbgemm", torchvision's quantizable classifiers quantized in eager mode and in FX graph mode, a
transformer-style stack of quantized linear layers, and a model that reaches every
quantized op form aotc lowers (strides, padding, dilation, groups, per-tensor weights with
a zero point, both average-pooling layouts, clamps, views of quantized tensors); under torch's
default engine "x86" (oneDNN's rounding on convolutions, QRequant::acc_scale), resnet50 in FX
mode (deep enough that the two engines' rare one-step differences reach the outputs),
mobilenet_v2 in eager mode (depthwise layers on both sides of torch's 100-group line) and two
BERT-style encoder blocks in FX mode (quantized::layer_norm).

Same contract as models.py: each builder returns (module, inputs), seeded, in eval mode.
Calibration uses random data (seeded), so the scales are arbitrary but realistic. The check
(check_model.py) compares the dequantized outputs with torch's in quantization steps: aotc
does torch's integer and float arithmetic in the same order, so every value should be
equal; QUANTIZED_STEP_BOUND states what a pass allows."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.ao.nn.quantized as nnq
from torch.ao import quantization as tq

# A quantized model passes when no output element is more than one quantization step from
# torch's and at most this fraction of them is off by one step.
QUANTIZED_STEP_BOUND = 0.001


def _cpu_has_avx512_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512_vnni" in line for line in f)
    except OSError:
        return False


def aotc_engine_args():
    """aotc's --quantized-engine for the engine torch runs now: torch's "x86" runs convolutions
    on oneDNN only where the CPU has AVX512-VNNI (torch's should_use_onednn_quant), else on
    fbgemm."""
    if torch.backends.quantized.engine == "x86" and _cpu_has_avx512_vnni():
        return ["--quantized-engine", "x86"]
    return ["--quantized-engine", "fbgemm"]


def _calibrate(model, shape, seed, batches=3):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*shape, generator=gen))


def _randomize_norms(module, seed):
    gen = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.rand(c, generator=gen) * 0.4 - 0.2)


def _eager(model, shape, seed, qconfig=None, engine="fbgemm"):
    """Eager-mode post-training quantization: fuse, observe, calibrate, convert, script."""
    torch.backends.quantized.engine = engine
    model.eval()
    if hasattr(model, "fuse_model"):
        model.fuse_model()
    model.qconfig = qconfig or tq.get_default_qconfig(engine)
    tq.prepare(model, inplace=True)
    _calibrate(model, shape, seed)
    tq.convert(model, inplace=True)
    torch.manual_seed(seed + 1)
    x = torch.randn(*shape)
    return torch.jit.script(model), [("x", x)]


def _fx(model, shape, seed, engine="fbgemm"):
    """FX graph-mode post-training quantization, traced."""
    from torch.ao.quantization import quantize_fx
    torch.backends.quantized.engine = engine
    model.eval()
    example = (torch.randn(*shape),)
    prepared = quantize_fx.prepare_fx(model, tq.get_default_qconfig_mapping(engine), example)
    _calibrate(prepared, shape, seed)
    converted = quantize_fx.convert_fx(prepared)
    torch.manual_seed(seed + 1)
    x = torch.randn(*shape)
    return torch.jit.trace(converted, x), [("x", x)]


def _torchvision_eager(name, seed, size, engine="fbgemm"):
    from torchvision.models import quantization as qmodels
    torch.manual_seed(seed)
    model = getattr(qmodels, name)(weights=None, quantize=False)
    with torch.no_grad():
        _randomize_norms(model, seed)
    return _eager(model, (1, 3, size, size), seed, engine=engine)


def _torchvision_fx(name, seed, size, engine="fbgemm"):
    import torchvision
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None)
    with torch.no_grad():
        _randomize_norms(model, seed)
    return _fx(model, (1, 3, size, size), seed, engine=engine)


class LinearStack(nn.Module):
    """A transformer block's linear layers: projections with a fused ReLU, a residual add,
    on [batch, tokens, features] (rank 3) and odd feature counts."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.up = nn.Linear(72, 150)
        self.relu = nn.ReLU()
        self.down = nn.Linear(150, 72)
        self.residual = nnq.FloatFunctional()
        self.head = nn.Linear(72, 33)
        self.dequant = tq.DeQuantStub()

    def fuse_model(self):
        tq.fuse_modules(self, [["up", "relu"]], inplace=True)

    def forward(self, x):
        x = self.quant(x)
        h = self.down(self.relu(self.up(x)))
        x = self.residual.add(x, h)
        return self.dequant(self.head(x))


class QuantOps(nn.Module):
    """Every quantized op form aotc lowers: stride 2, padding 3, 5x5 and 1x1 kernels,
    dilation, groups, depthwise; ceil-mode max pooling; adaptive average pooling of an NCHW
    tensor (straight from the quantize) and of NHWC ones (after convolutions); relu, relu6,
    hardtanh and clamp; a channel shuffle (view, transpose, contiguous, view); chunk; add
    and add_relu; flatten and linear; two outputs."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.stem = nn.Conv2d(3, 16, 5, stride=2, padding=3)
        self.grouped = nn.Conv2d(16, 24, 3, padding=2, dilation=2, groups=2, bias=False)
        self.depthwise = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24)
        self.pointwise = nn.Conv2d(12, 12, 1)
        self.add = nnq.FloatFunctional()
        self.add_relu = nnq.FloatFunctional()
        self.fc = nn.Linear(12 * 3 * 2, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        q = self.quant(x)
        early = F.adaptive_avg_pool2d(q, (2, 2))  # NCHW: torch rounds half away here
        y = F.relu(self.stem(q))
        y = F.max_pool2d(y, 3, stride=2, padding=1, ceil_mode=True)
        y = F.hardtanh(self.grouped(y), -0.5, 3.0)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        y = torch.clamp(self.depthwise(y), 0.0, 6.0)
        a, b = y.chunk(2, dim=1)
        z = self.add.add(self.pointwise(a), b)
        z = self.add_relu.add_relu(z, F.relu6(a))
        pooled = F.adaptive_avg_pool2d(z, (3, 2))  # NHWC after the convolutions
        return self.dequant(self.fc(torch.flatten(pooled, 1))), self.dequant(early)


def _quant_ops():
    torch.manual_seed(70)
    # Per-tensor affine weights: a non-zero weight zero point. The activations keep fbgemm's
    # 7-bit range (reduce_range): with all 8 bits, torch's own depthwise kernel saturates its
    # int16 pair sums and gives results up to tens of steps from the exact ones, which aotc
    # computes.
    qconfig = tq.QConfig(activation=tq.HistogramObserver.with_args(reduce_range=True),
                         weight=tq.MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_affine))
    return _eager(QuantOps(), (2, 3, 33, 29), 70, qconfig)


class QuantEncoder(nn.Module):
    """Two BERT-style blocks (AttentionBlock, below) for FX-mode static quantization: quantized
    linear layers, adds and layer norms (quantized::layer_norm), attention in float between
    them."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(AttentionBlock(), AttentionBlock())

    def forward(self, x):
        return self.blocks(x)


def _encoder_fx_x86():
    torch.manual_seed(74)
    return _fx(QuantEncoder(), (2, 19, 64), 74, engine="x86")


class Conv1dStack(nn.Module):
    """Audio-style 1-d convolutions: strided with a fused ReLU, depthwise, pointwise, a residual
    add (quantized::conv1d and conv1d_relu, which torch runs as a conv2d of height 1)."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv1d(8, 24, 5, stride=2, padding=2)
        self.relu = nn.ReLU()
        self.depthwise = nn.Conv1d(24, 24, 3, padding=2, dilation=2, groups=24)
        self.pointwise = nn.Conv1d(24, 24, 1)
        self.add = nnq.FloatFunctional()
        self.dequant = tq.DeQuantStub()

    def fuse_model(self):
        tq.fuse_modules(self, [["conv", "relu"]], inplace=True)

    def forward(self, x):
        y = self.relu(self.conv(self.quant(x)))
        return self.dequant(self.add.add(y, self.pointwise(self.depthwise(y))))


def _conv1d_x86():
    torch.manual_seed(75)
    return _eager(Conv1dStack(), (2, 8, 61), 75, engine="x86")


def _linear_stack():
    torch.manual_seed(71)
    return _eager(LinearStack(), (2, 17, 72), 71)


MODELS_QUANTIZED = {
    "q_resnet18": lambda: _torchvision_eager("resnet18", 60, 96),
    "q_resnet18_fx": lambda: _torchvision_fx("resnet18", 61, 96),
    "q_mobilenet_v2": lambda: _torchvision_eager("mobilenet_v2", 62, 96),
    "q_mobilenet_v2_fx": lambda: _torchvision_fx("mobilenet_v2", 63, 96),
    "q_mobilenet_v3_large": lambda: _torchvision_eager("mobilenet_v3_large", 64, 96),
    "q_mobilenet_v3_large_fx": lambda: _torchvision_fx("mobilenet_v3_large", 65, 96),
    "q_shufflenet_v2": lambda: _torchvision_eager("shufflenet_v2_x1_0", 66, 96),
    "q_shufflenet_v2_fx": lambda: _torchvision_fx("shufflenet_v2_x1_0", 67, 96),
    "q_resnet50_fx_x86": lambda: _torchvision_fx("resnet50", 68, 64, engine="x86"),
    "q_mobilenet_v2_x86": lambda: _torchvision_eager("mobilenet_v2", 69, 96, engine="x86"),
    "q_encoder_fx_x86": lambda: _encoder_fx_x86(),
    "q_conv1d_x86": lambda: _conv1d_x86(),
    "q_linear_stack": _linear_stack,
    "q_ops": _quant_ops,
}


# ---- dynamic quantization (torch.ao.quantization.quantize_dynamic): float in and out, the
# linear layers' inputs quantized at each run from their own range. The outputs are float,
# compared as float models are (relative L2 error).

class AttentionBlock(nn.Module):
    """A BERT-style encoder block of plain nn.Linear layers (which quantize_dynamic replaces):
    fused q/k/v projection, scaled dot-product attention, output projection, residual and
    layer norm, a ReLU feed-forward of odd width."""

    def __init__(self, d=64, heads=4, ff=150):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
        x = self.norm1(x + self.proj(a.transpose(1, 2).reshape(b, t, d)))
        return self.norm2(x + self.ff2(torch.relu(self.ff1(x))))


class DynamicEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(AttentionBlock(), AttentionBlock())
        self.head = nn.Linear(64, 5, bias=False)

    def forward(self, x):
        return self.head(self.blocks(x))


def _dynamic(model, shape, seed, engine, qconfig_spec=None, input_name="x"):
    torch.backends.quantized.engine = engine
    model.eval()
    q = tq.quantize_dynamic(model, qconfig_spec or {nn.Linear}, dtype=torch.qint8)
    torch.manual_seed(seed + 1)
    x = torch.randn(*shape)
    return torch.jit.script(q), [(input_name, x)]


def _dynamic_encoder():
    torch.manual_seed(72)
    return _dynamic(DynamicEncoder(), (2, 19, 64), 72, "x86")


def _dynamic_mlp_per_channel():
    """Per-channel weights, a fused linear + ReLU (linear_relu_dynamic) and one row at a time."""
    torch.manual_seed(73)
    from torch.ao.nn.intrinsic import LinearReLU
    model = nn.Sequential(LinearReLU(nn.Linear(37, 90), nn.ReLU()), nn.Linear(90, 11)).eval()
    spec = {LinearReLU: tq.per_channel_dynamic_qconfig, nn.Linear: tq.per_channel_dynamic_qconfig}
    return _dynamic(model, (1, 37), 73, "fbgemm", spec, input_name="input")


MODELS_QUANTIZED_DYNAMIC = {
    "qd_encoder": _dynamic_encoder,
    "qd_mlp_per_channel": _dynamic_mlp_per_channel,
}
