"""Test models for the end-to-end suite: each builder returns (module, inputs), where
module is a scripted or traced TorchScript module in eval mode and inputs is a list of
(name, tensor) in forward()'s order. Weights and inputs are seeded: runs are repeatable.

MODELS holds every model: this file's (CORE_MODELS) and those of models_*.py. The meson suite
(tests/meson.build) makes one test e2e_NAME per model of each table, in the table's order,
from `models.py --list` (see GROUPS, NOT_IN_GROUP and AARCH64 at the end): a model added to a
table is a test without a change to tests/meson.build."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(37, 64)
        self.fc2 = nn.Linear(64, 19)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


class SmallCNN(nn.Module):
    """Conv + BatchNorm (folded), a standalone BatchNorm, every pooling kind, groups."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, (3, 5), padding=(1, 2), dilation=1, groups=2, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.bn_standalone = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
        x = F.relu6(self.bn2(self.conv2(x)))
        x = self.bn_standalone(F.avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False))
        x = F.hardswish(self.dw(x))
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return F.log_softmax(self.fc(x), dim=1)


class TwoInputs(nn.Module):
    """Two inputs, a tuple of three outputs; matmul, bmm, addmm, cat, views, reductions."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(24, 16))
        self.b = nn.Parameter(torch.randn(16))

    def forward(self, x, y):
        h = torch.matmul(x, self.w)                      # [2, 5, 16]
        g = torch.bmm(h, y.transpose(1, 2))              # [2, 5, 7]
        a = torch.addmm(self.b, x.reshape(-1, 24), self.w)  # [10, 16]
        c = torch.cat([h, h - 1.0], dim=-1)  # [2, 5, 32]
        s = torch.softmax(g, dim=-1).mean(dim=(0, 2), keepdim=True)
        return g.permute(2, 0, 1).contiguous(), a.view(2, 5, 16).sum(-1) / 3.0, (c.unsqueeze(0).squeeze(0), s)


class Activations(nn.Module):
    def forward(self, x):
        outs = [torch.relu(x), F.relu6(x * 4), F.hardtanh(x, -0.5, 0.7), F.leaky_relu(x, 0.2),
                torch.sigmoid(x), torch.tanh(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x),
                F.hardswish(x * 3), F.hardsigmoid(x * 3), torch.clamp(x, min=-0.1, max=0.3)]
        y = outs[0]
        for o in outs[1:]:
            y = y + o
        return y - 2 * x / 3 + 1, (x + 1) - x.mean(1, keepdim=True)


class DictOut(nn.Module):
    def forward(self, x):
        return {"doubled": x * 2, "flat": torch.flatten(x, 1), "t": x.transpose(-1, -2) + 0.0}


def mlp():
    torch.manual_seed(0)
    return torch.jit.script(MLP().eval()), [("x", torch.randn(5, 37))]


def small_cnn():
    torch.manual_seed(1)
    m = SmallCNN()
    for bn in [m.bn1, m.bn2, m.bn_standalone]:  # non-trivial running statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    m.eval()
    x = torch.randn(2, 3, 37, 29)
    return torch.jit.trace(m, x), [("x", x)]


def small_cnn_scripted():
    m, inputs = small_cnn()
    torch.manual_seed(1)
    return m, inputs


def two_inputs():
    torch.manual_seed(2)
    return torch.jit.script(TwoInputs().eval()), [("x", torch.randn(2, 5, 24)), ("y", torch.randn(2, 7, 16))]


def activations():
    torch.manual_seed(3)
    x = torch.randn(3, 17, 9) * 3
    return torch.jit.script(Activations().eval()), [("x", x)]


def dict_out():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 5)
    return torch.jit.script(DictOut().eval()), [("x", x)]


def resnet18():
    import torchvision
    torch.manual_seed(5)
    m = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    return torch.jit.trace(m, x), [("x", x)]


def mobilenet_v2():
    import torchvision
    torch.manual_seed(6)
    m = torchvision.models.mobilenet_v2().eval()
    return torch.jit.script(m), [("x", torch.randn(1, 3, 224, 224))]


def resnet18_scripted():
    import torchvision
    torch.manual_seed(5)
    m = torchvision.models.resnet18().eval()
    return torch.jit.script(m), [("x", torch.randn(1, 3, 224, 224))]


def mobilenet_v2_traced():
    import torchvision
    torch.manual_seed(6)
    m = torchvision.models.mobilenet_v2().eval()
    x = torch.randn(1, 3, 224, 224)
    return torch.jit.trace(m, x), [("x", x)]


def mobilenet_v2_64():
    """mobilenet_v2 at 64x64: every layer kind of the 224x224 model, for slow runners
    (the aarch64 tests run under qemu)."""
    import torchvision
    torch.manual_seed(7)
    m = torchvision.models.mobilenet_v2().eval()
    return torch.jit.script(m), [("x", torch.randn(1, 3, 64, 64))]


class ConvShapes(nn.Module):
    """Ungrouped convolutions of every shape the GEMM paths unfold: rectangular kernels,
    unequal strides, padding and dilation, a strided 1x1, output planes whose size is not a
    multiple of 4 (425, 117, 35 positions), and a residual add after a biased convolution
    (on CUDA: the residual in cuBLASLt, the per-channel bias and relu in the epilogue pass)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
        self.c2 = nn.Conv2d(8, 12, 7, stride=2, padding=3)
        self.c3 = nn.Conv2d(12, 16, 1, stride=2)
        self.c4 = nn.Conv2d(12, 16, 3, padding=2, dilation=2)

    def forward(self, x):
        y = F.relu(self.c1(x))  # 2 x 8 x 17 x 25
        y = F.relu(self.c2(y))  # 2 x 12 x 9 x 13
        return F.relu(self.c4(y)[:, :, ::2, ::2] + self.c3(y))  # 2 x 16 x 5 x 7


def conv_shapes():
    torch.manual_seed(11)
    m = ConvShapes().eval()
    x = torch.randn(2, 3, 33, 29)
    return torch.jit.trace(m, x), [("x", x)]


class WinogradShapes(nn.Module):
    """3x3 stride-1 convolutions on the CPU's Winograd paths: F(4x4, 3x3) on a 23 x 37 plane
    (6 x 10 tiles, the batch of 5 in groups of 3 and 2) and on a 14 x 13 one (16 tiles per
    image: F(4x4) by the per-image rule), F(2x2, 3x3) on 7 x 7 and 5 x 5 planes (the whole
    batch in one group), 16 to 32 input channels, a ResNet-style residual add and relu fused
    into the output transform, unpadded and 3-channel outputs, and an 8-channel input that
    stays on the implicit GEMM."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 32, 3, padding=1)
        self.c = nn.Conv2d(32, 32, 3, padding=1)
        self.d = nn.Conv2d(32, 24, 3, padding=1)
        self.e = nn.Conv2d(24, 3, 3)
        self.f = nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):  # 5 x 8 x 23 x 37
        y = F.relu(self.a(x))
        y = F.relu(self.b(y))
        y = F.relu(self.c(y) + y)
        y = F.relu(self.f(F.adaptive_avg_pool2d(y, (14, 13))))
        y = F.relu(self.d(F.adaptive_avg_pool2d(y, (7, 7))))
        return self.e(y)  # 5 x 3 x 5 x 5


def winograd_shapes():
    torch.manual_seed(13)
    m = WinogradShapes().eval()
    x = torch.randn(5, 8, 23, 37)
    return torch.jit.trace(m, x), [("x", x)]


def randomize_batch_norms(module):
    """Gives every BatchNorm2d of module statistics and an affine part that are not the
    identity, so that folding them into the convolutions is tested."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.2, 0.2)
            nn.init.uniform_(m.running_mean, -0.1, 0.1)
            nn.init.uniform_(m.running_var, 0.5, 1.5)


class PointwiseRowsShapes(nn.Module):
    """1x1 stride-1 convolutions that the CPU target runs with the positions as the tile's
    rows (passes/select_pointwise_rows.cpp): a 13 x 13 plane (169 = 24 x 7 + 1 positions),
    batch 2, a batch norm folded in, relu6, a residual add and relu after a convolution
    (fuse_conv_residual), 208 outputs (13 panels: a last group of one), no bias; and one that
    stays on the implicit GEMM (40 outputs). The pass runs only where the compiling machine
    has AVX-512; elsewhere the model checks the implicit GEMM on the same shapes."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(16, 192, 3, padding=1), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(192, 208, 1, bias=False), nn.BatchNorm2d(208), nn.ReLU6())
        self.c = nn.Conv2d(208, 192, 1)
        self.d = nn.Conv2d(192, 32, 1, bias=False)
        self.e = nn.Conv2d(192, 40, 1)
        randomize_batch_norms(self)

    def forward(self, x):  # 2 x 16 x 13 x 13
        y = self.a(x)
        y = F.relu(self.c(self.b(y)) + y)
        return self.d(y), self.e(y)


def pointwise_rows_shapes():
    torch.manual_seed(19)
    m = PointwiseRowsShapes().eval()
    x = torch.randn(2, 16, 13, 13)
    return torch.jit.trace(m, x), [("x", x)]


class ExpandDepthwiseShapes(nn.Module):
    """1x1 expansions into depthwise convolutions, which the CPU target runs as one op
    (passes/fuse_expand_depthwise.cpp): batch norms folded, relu6, relu and no activation
    on the expansion; 5x5 stride 2, 3x3 dilation 2, 3x1 stride (1, 2); channel counts that
    are not multiples of 8; an odd plane; an expansion that another op also reads (stays
    apart); a silu between expansion and depthwise (efficientnet's blocks: fused too) and a
    silu that another op also reads (stays apart). Every depthwise output is wider than 16
    columns: on AVX-512 hosts narrower pairs stay apart (their depthwise runs a row per
    vector), and mobilenet_v2 and efficientnet_b0 test those."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(6, 44, 1, bias=False), nn.BatchNorm2d(44), nn.ReLU6())
        self.d1 = nn.Sequential(nn.Conv2d(44, 44, 5, stride=2, padding=2, groups=44, bias=False),
                                nn.BatchNorm2d(44), nn.ReLU6())
        self.p1 = nn.Conv2d(44, 8, 1)
        self.e2 = nn.Conv2d(8, 37, 1)
        self.d2 = nn.Conv2d(37, 37, 3, padding=2, dilation=2, groups=37)
        self.p2 = nn.Conv2d(37, 8, 1)
        self.e3 = nn.Conv2d(8, 24, 1)
        self.d3 = nn.Conv2d(24, 24, (3, 1), stride=(1, 2), padding=(1, 0), groups=24)
        self.e4 = nn.Conv2d(24, 40, 1)
        self.d4 = nn.Conv2d(40, 40, 5, padding=2, groups=40)
        self.e5 = nn.Conv2d(24, 40, 1)
        self.d5 = nn.Conv2d(40, 40, 3, padding=1, groups=40)
        randomize_batch_norms(self)

    def forward(self, x):  # 3 x 6 x 27 x 67
        y = self.p1(self.d1(self.e1(x)))  # 3 x 8 x 14 x 34
        e = F.relu(self.e2(y))
        y = y + self.p2(self.d2(e)) + e.mean(1, keepdim=True)  # e read twice: not fused
        z = self.d3(self.e3(y))  # 3 x 24 x 14 x 17
        a = F.silu(self.d4(F.silu(self.e4(z))))  # 3 x 40 x 14 x 17
        t = F.silu(self.e5(z))
        return a + self.d5(t) + t.mean(1, keepdim=True)  # t read twice: not fused


def expand_depthwise_shapes():
    torch.manual_seed(17)
    m = ExpandDepthwiseShapes().eval()
    x = torch.randn(3, 6, 27, 67)
    return torch.jit.trace(m, x), [("x", x)]


class ConvActivationShapes(nn.Module):
    """Elementwise activations straight after convolutions on every CPU convolution path:
    depthwise on a narrow plane (a row per vector on AVX-512) and on a wide one, a depthwise
    fused with its expansion (silu between and after), a dilated depthwise, Winograd, the
    implicit GEMM, a grouped convolution, a 3-channel stem, 1x1 layers that Zen 4 hosts put
    on the positions-as-rows kernel, a squeeze-excitation gate; activations with parameters
    (elu, leaky_relu); after a relu6, after a residual add, and one whose convolution is read
    twice."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, stride=2, padding=1)  # -> 24 x 13 x 29
        self.dw_wide = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.dw_narrow = nn.Conv2d(24, 24, 5, stride=2, padding=2, groups=24)  # -> 24 x 7 x 15
        self.dw_dilated = nn.Conv2d(24, 24, 3, padding=2, dilation=2, groups=24)
        self.expand = nn.Conv2d(24, 60, 1)
        self.dw_fused = nn.Conv2d(60, 60, 3, padding=1, groups=60)
        self.wino = nn.Conv2d(60, 32, 3, padding=1)
        self.grouped = nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=4)  # -> 32 x 7 x 15
        self.se_reduce = nn.Conv2d(32, 8, 1)
        self.se_expand = nn.Conv2d(8, 32, 1)
        self.up = nn.Conv2d(32, 192, 1)
        self.rows = nn.Conv2d(192, 208, 1)
        self.project = nn.Conv2d(208, 24, 1)
        self.clamped = nn.Sequential(nn.Conv2d(24, 24, 1), nn.ReLU6())
        self.shared = nn.Conv2d(24, 24, 1)

    def forward(self, x):  # 2 x 3 x 25 x 57
        y = F.leaky_relu(self.stem(x), 0.2)
        y = torch.sigmoid(self.dw_wide(y)) * y
        e = F.silu(self.dw_fused(F.silu(self.expand(y))))  # 2 x 60 x 13 x 29
        n = F.silu(self.dw_narrow(y))  # 2 x 24 x 7 x 15
        n = F.hardswish(self.dw_dilated(n))
        w = F.elu(self.wino(e), 0.7)
        g = F.gelu(self.grouped(w))
        gate = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(g.mean((2, 3), keepdim=True)))))
        g = g * gate
        r = F.mish(self.rows(F.gelu(self.up(g), approximate="tanh")))
        p = self.project(r) + n
        c = torch.tanh(self.clamped(p))  # after a relu6
        s = self.shared(p)
        res = torch.sigmoid(self.dw_wide(n) + n)  # after a residual add
        return c + torch.sigmoid(s) + s, res  # s read twice


def conv_activation_shapes():
    torch.manual_seed(23)
    m = ConvActivationShapes().eval()
    x = torch.randn(2, 3, 25, 57)
    return torch.jit.trace(m, x), [("x", x)]


CORE_MODELS = {
    "mlp": mlp,
    "small_cnn": small_cnn,
    "conv_shapes": conv_shapes,
    "winograd_shapes": winograd_shapes,
    "expand_depthwise_shapes": expand_depthwise_shapes,
    "pointwise_rows_shapes": pointwise_rows_shapes,
    "conv_activation_shapes": conv_activation_shapes,
    "two_inputs": two_inputs,
    "activations": activations,
    "dict_out": dict_out,
    "resnet18": resnet18,
    "resnet18_scripted": resnet18_scripted,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v2_traced": mobilenet_v2_traced,
    "mobilenet_v2_64": mobilenet_v2_64,
}
MODELS = dict(CORE_MODELS)
from models_views import MODELS_VIEWS  # noqa: E402
MODELS.update(MODELS_VIEWS)

# Vision: convolutional classifiers, U-Net, 1-d and 3-d models (models_vision.py).
from models_vision import MODELS_VISION  # noqa: E402

MODELS.update(MODELS_VISION)
from models_sequence import MODELS_SEQUENCE  # noqa: E402  (sequence area: transformers, RNNs)
MODELS.update(MODELS_SEQUENCE)
from models_frontend import MODELS_FRONTEND; MODELS.update(MODELS_FRONTEND)  # noqa: E402,E702 frontend
from models_pointwise import MODELS_POINTWISE  # noqa: E402
MODELS.update(MODELS_POINTWISE)
from models_quantized import MODELS_QUANTIZED, MODELS_QUANTIZED_DYNAMIC  # noqa: E402  (int8: torch.ao)
MODELS.update(MODELS_QUANTIZED)
MODELS.update(MODELS_QUANTIZED_DYNAMIC)

# ---- the meson suite's lists (tests/meson.build reads `models.py --list`) ----
# A group per table: tests/meson.build gives each group its suites and time limit.
GROUPS = {
    "core": CORE_MODELS,
    "vision": MODELS_VISION,
    "sequence": MODELS_SEQUENCE,
    "views": MODELS_VIEWS,
    "pointwise": MODELS_POINTWISE,
    "frontend": MODELS_FRONTEND,
    "quantized": {**MODELS_QUANTIZED, **MODELS_QUANTIZED_DYNAMIC},
}
# Models of those tables that are not a test e2e_NAME of their group, and what runs them.
NOT_IN_GROUP = {
    "mobilenet_v2_64": "the aarch64 group (AARCH64)",
    "pw_composite_float": "the GPU suite (tests/cuda/gpu_models.py)",
    "inplace_slice_views": "its own test e2e_inplace_slice_views (check_model_needing.py: it needs lowerings)",
}
# Cross-compiled for aarch64 and run under qemu (tests aarch64_NAME, NAME without "_64"):
# activations and two_inputs run the kernels' portable (non-AVX) paths, used on aarch64;
# q_ops runs the int8 kernels' (every quantized op form).
AARCH64 = ["mlp", "small_cnn", "activations", "two_inputs", "mobilenet_v2_64", "q_ops", "q_mobilenet_v2_x86"]


def suite_lists():
    """(group, model name) of every meson test made from the tables, in the tables' order."""
    unknown = [name for name in list(NOT_IN_GROUP) + AARCH64 if name not in MODELS]
    if unknown:
        raise KeyError(f"not in the model tables: {unknown}")
    for group, table in GROUPS.items():
        for name in table:
            if name not in NOT_IN_GROUP:
                yield group, name
    for name in AARCH64:
        yield "aarch64", name


if __name__ == "__main__":
    # models.py --list [TABLE.py...]: one line "GROUP NAME" per test. meson passes the table
    # files too, only so that it configures again when one of them changes.
    if sys.argv[1:2] != ["--list"]:
        sys.exit("usage: models.py --list [TABLE.py...]")
    for group, name in suite_lists():
        print(group, name)
