"""Convolutional vision models for the end-to-end suite: torchvision classifiers
traced and scripted, a U-Net-style model, a Conv1d model, a 3-d model and a model that
returns pooling indices. Same contract as models.py: each builder returns (module, inputs)
with seeded weights and inputs, in eval mode.

Inputs are small (64x64 where the architecture allows) so that the suite stays fast. Batch
norm statistics are randomised: torchvision initialises them to the identity, which would
hide a mistake in folding them."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize_norms(module, seed):
    """Non-trivial running statistics and affine parameters for every batch norm."""
    gen = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            c = m.num_features
            m.running_mean.copy_(torch.rand(c, generator=gen) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 1.5 + 0.5)
            if m.weight is not None:
                m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.data.copy_(torch.rand(c, generator=gen) * 0.4 - 0.2)
    return module


def _swin_small(script, size=(36, 44)):
    """torchvision's Swin transformer, small (width 24, two stages of two blocks, windows of
    4 x 4 with shift 2) at batch 2 on 36 x 44 images: 9 x 11 patches padded to whole windows,
    shifted windows with their mask (per window of an image, repeated over the batch), the
    relative position bias; the window attention fuses into one attention op. At 32 x 32 the
    windows and the patch merging fit exactly: their pads are by zero (aliases, not copies)."""
    from torchvision.models.swin_transformer import SwinTransformer
    torch.manual_seed(29)
    m = SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                        stochastic_depth_prob=0.0, num_classes=10)
    with torch.no_grad():
        _randomize_norms(m, 29)
        for name, p in m.named_parameters():
            if "relative_position_bias_table" in name:
                p.normal_(0.0, 1.0)
    m.eval()
    x = torch.randn(2, 3, *size)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


def _torchvision(name, seed, size=64, script=False, wrap=None, **kwargs):
    import torchvision
    torch.manual_seed(seed)
    m = getattr(torchvision.models, name)(weights=None, **kwargs)
    with torch.no_grad():
        _randomize_norms(m, seed)
    if wrap is not None:
        m = wrap(m)
    m.eval()
    x = torch.randn(1, 3, size, size)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


class _Logits(nn.Module):
    """Scripted googlenet returns GoogLeNetOutputs(logits, None, None) (its aux outputs are
    None in eval); aotc and the test compare tensors, so this keeps the logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).logits


def _googlenet_scripted():
    return _torchvision("googlenet", 26, script=True, wrap=_Logits, aux_logits=False, init_weights=True)


def _vgg11_bn(script):
    """vgg11_bn's feature stack and classifier structure, with the classifier's hidden
    layers narrowed from 4096 to 256 units: the full classifier holds 120M parameters
    (480 MB of weights) that exercise no op the narrow one does not."""
    import torchvision
    torch.manual_seed(28)
    m = torchvision.models.vgg11_bn(weights=None)
    m.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 256), nn.ReLU(True), nn.Dropout(),
                                 nn.Linear(256, 256), nn.ReLU(True), nn.Dropout(), nn.Linear(256, 1000))
    with torch.no_grad():
        _randomize_norms(m, 28)
    m.eval()
    x = torch.randn(1, 3, 64, 64)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


class _UNetBlock(nn.Module):
    def __init__(self, c_in, c_out, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm1 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(groups, c_out, affine=False)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        return F.silu(self.norm2(self.conv2(x)))


class UNet(nn.Module):
    """Encoder-decoder with skip connections: ConvTranspose2d (with and without output
    padding, grouped, followed by a BatchNorm that folds into it), F.interpolate nearest and
    bilinear (scale factors, sizes, align_corners both ways), bicubic, cat, GroupNorm,
    InstanceNorm."""

    def __init__(self):
        super().__init__()
        self.enc1 = _UNetBlock(3, 16, 4)
        self.enc2 = _UNetBlock(16, 32, 8)
        self.mid = _UNetBlock(32, 64, 1)
        self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.dec2 = _UNetBlock(64, 32, 8)
        self.up1 = nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1, groups=2, bias=False)
        self.up1_bn = nn.BatchNorm2d(16)
        self.dec1 = _UNetBlock(48, 16, 2)
        self.inorm = nn.InstanceNorm2d(16, affine=True)
        self.head = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)                                     # 16 x H x W
        e2 = self.enc2(F.max_pool2d(e1, 2))                   # 32 x H/2
        m = self.mid(F.avg_pool2d(e2, 2))                     # 64 x H/4
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))   # 32 x H/2
        up_a = F.relu(self.up1_bn(self.up1(d2)))               # 16 x H
        up_b = F.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)  # 32 x H
        d1 = self.dec1(torch.cat([up_a, up_b], dim=1))         # 16 x H
        d1 = self.inorm(d1)
        near = F.interpolate(m, size=(d1.shape[2], d1.shape[3]), mode="nearest")
        d1 = d1 + near.mean(dim=1, keepdim=True)
        out = self.head(d1)
        return (out, F.interpolate(out, size=(11, 13), mode="bilinear", align_corners=True),
                F.interpolate(out, scale_factor=1.5, mode="bicubic", align_corners=False))


def _unet(script):
    torch.manual_seed(40)
    m = UNet()
    with torch.no_grad():
        _randomize_norms(m, 40)
        for mod in m.modules():  # non-trivial group / instance norm affine parameters
            if isinstance(mod, (nn.GroupNorm, nn.InstanceNorm2d)) and mod.weight is not None:
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.3, 0.3)
    m.eval()
    x = torch.randn(2, 3, 36, 44)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


class Conv1dNet(nn.Module):
    """conv1d (padding, stride, dilation, groups, padding='same'), batch_norm1d folded and
    standalone (3-d and 2-d inputs), max/avg/adaptive pooling 1-d, conv_transpose1d,
    linear and nearest upsampling 1-d."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 16, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(16)
        self.conv2 = nn.Conv1d(16, 32, 3, stride=2, dilation=2, padding=2, groups=4)
        self.bn2 = nn.BatchNorm1d(32)
        self.conv3 = nn.Conv1d(32, 32, 3, padding="same", bias=False)
        self.up = nn.ConvTranspose1d(32, 16, 4, stride=2, padding=1)
        self.fc = nn.Linear(16 * 6 + 16 * 3, 24)
        self.bn_fc = nn.BatchNorm1d(24)

    def forward(self, x):
        x = F.max_pool1d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        x = self.bn2(F.relu(self.conv2(x)))
        x = F.avg_pool1d(self.conv3(x), 2, ceil_mode=True, count_include_pad=False)
        x = F.hardtanh(self.up(x), -0.5, 1.0)
        x = F.interpolate(x, scale_factor=1.5, mode="linear", align_corners=False) + \
            F.interpolate(F.avg_pool1d(x, 3, stride=1, padding=1), scale_factor=1.5, mode="nearest")
        a = F.adaptive_avg_pool1d(x, 6).flatten(1)
        b = F.adaptive_max_pool1d(x, 3).flatten(1)
        return self.bn_fc(self.fc(torch.cat([a, b], dim=1)))


def _conv1d(script):
    torch.manual_seed(41)
    m = _randomize_norms(Conv1dNet(), 41).eval()
    x = torch.randn(3, 4, 57)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


class Vision3d(nn.Module):
    """conv3d (stride, padding, dilation, groups, 1x1x1), batch_norm3d folded and standalone,
    max/avg/adaptive pooling 3-d, grouped conv_transpose3d with a folded batch norm, nearest
    and trilinear upsampling."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm3d(8)
        self.conv2 = nn.Conv3d(8, 12, (3, 1, 3), stride=(1, 2, 2), padding=(2, 0, 1), dilation=(2, 1, 1), groups=4)
        self.bn2 = nn.BatchNorm3d(12)
        self.pw = nn.Conv3d(12, 12, 1)
        self.up = nn.ConvTranspose3d(12, 6, 3, stride=2, padding=1, output_padding=(1, 0, 1), groups=3)
        self.up_bn = nn.BatchNorm3d(6)  # folds into the transposed convolution

    def forward(self, x):
        x = F.max_pool3d(F.relu(self.bn1(self.conv1(x))), 2, ceil_mode=True)
        x = self.bn2(F.relu6(self.conv2(x)))
        x = F.avg_pool3d(self.pw(x), (1, 2, 2), stride=1, padding=(0, 1, 1), count_include_pad=False)
        y = self.up_bn(self.up(x))
        z = F.interpolate(y, scale_factor=(1.0, 0.5, 0.5), mode="trilinear", align_corners=False) + \
            F.interpolate(y, scale_factor=(1.0, 0.5, 0.5), mode="nearest")
        return F.adaptive_avg_pool3d(z, (2, 3, 1)), F.adaptive_avg_pool3d(y, 1).flatten(1)


def _vision3d(script):
    torch.manual_seed(42)
    m = _randomize_norms(Vision3d(), 42).eval()
    x = torch.randn(2, 3, 7, 10, 9)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


class PoolIndices(nn.Module):
    """Max pooling that returns the argmax (int64 outputs): 1-d, 2-d, 3-d, adaptive; and max
    unpooling with those indices."""

    def forward(self, x):
        v2, i2 = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True, ceil_mode=True)
        a2, ai2 = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
        v1, i1 = F.max_pool1d(x.flatten(2), 4, stride=3, dilation=2, return_indices=True)
        v3, i3 = F.max_pool3d(x.unsqueeze(1), (2, 2, 3), return_indices=True)
        a1, ai1 = F.adaptive_max_pool1d(x.flatten(2), 5, return_indices=True)
        # Unpooling puts the maxima back (max_unpool2d also serves 1-d).
        u2 = torch.ops.aten.max_unpool2d(v2 * 2.0, i2, [11, 13])
        u1 = torch.ops.aten.max_unpool2d(v1.unsqueeze(2), i1.unsqueeze(2), [1, 143]).squeeze(2)
        u3 = torch.ops.aten.max_unpool3d(v3, i3, [5, 11, 13], [2, 2, 3], [0, 0, 0])
        return v2, i2, a2, ai2, v1, i1, v3, i3, a1, ai1, u2, u1, u3


def _pool_indices(script):
    torch.manual_seed(43)
    x = torch.randn(2, 5, 11, 13)
    m = PoolIndices().eval()
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


MODELS_VISION = {
    "resnet50": lambda: _torchvision("resnet50", 20),
    "resnet50_scripted": lambda: _torchvision("resnet50", 20, script=True),
    "mobilenet_v3_small": lambda: _torchvision("mobilenet_v3_small", 21),
    "mobilenet_v3_small_scripted": lambda: _torchvision("mobilenet_v3_small", 21, script=True),
    "efficientnet_b0": lambda: _torchvision("efficientnet_b0", 22),
    "efficientnet_b0_scripted": lambda: _torchvision("efficientnet_b0", 22, script=True),
    "squeezenet1_1": lambda: _torchvision("squeezenet1_1", 23),
    "squeezenet1_1_scripted": lambda: _torchvision("squeezenet1_1", 23, script=True),
    "shufflenet_v2_x1_0": lambda: _torchvision("shufflenet_v2_x1_0", 24),
    "shufflenet_v2_x1_0_scripted": lambda: _torchvision("shufflenet_v2_x1_0", 24, script=True),
    "densenet121": lambda: _torchvision("densenet121", 25),
    "densenet121_scripted": lambda: _torchvision("densenet121", 25, script=True),
    "googlenet": lambda: _torchvision("googlenet", 26, aux_logits=False, init_weights=True),
    "googlenet_scripted": _googlenet_scripted,
    "regnet_x_400mf": lambda: _torchvision("regnet_x_400mf", 27),
    "regnet_x_400mf_scripted": lambda: _torchvision("regnet_x_400mf", 27, script=True),
    # relative-position attention through einsum (44 of them), window partitions: 224 x 224
    "maxvit_t": lambda: _torchvision("maxvit_t", 28, size=224),
    "maxvit_t_scripted": lambda: _torchvision("maxvit_t", 28, size=224, script=True),
    "swin_small": lambda: _swin_small(False),  # defined below
    "swin_small_scripted": lambda: _swin_small(True),
    "swin_small_exact": lambda: _swin_small(False, size=(32, 32)),
    "vgg11_bn": lambda: _vgg11_bn(False),
    "vgg11_bn_scripted": lambda: _vgg11_bn(True),
    "unet": lambda: _unet(False),
    "unet_scripted": lambda: _unet(True),
    "conv1d": lambda: _conv1d(False),
    "conv1d_scripted": lambda: _conv1d(True),
    "vision3d": lambda: _vision3d(False),
    "vision3d_scripted": lambda: _vision3d(True),
    "pool_indices": lambda: _pool_indices(False),
    "pool_indices_scripted": lambda: _pool_indices(True),
    "grid_sample": lambda: _grid_sample(False),  # defined below
    "grid_sample_scripted": lambda: _grid_sample(True),
}


class Overloads(nn.Module):
    """Every overload registered for the vision ops, called through torch.ops.aten so that
    scripting keeps each form: the older upsample forms (one scale per dim) beside .vec,
    unbatched convolution / pooling inputs, padding="same" (even kernels too), the general
    convolution with transposed=True, instance norm with running statistics."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(44)
        self.w2 = nn.Parameter(torch.randn(6, 8, 3, 3) * 0.3)
        self.w3 = nn.Parameter(torch.randn(5, 4, 3, 1, 3) * 0.3)
        self.w3_even = nn.Parameter(torch.randn(3, 4, 2, 3, 4) * 0.3)
        self.w2_even = nn.Parameter(torch.randn(5, 4, 4, 2) * 0.3)
        self.w1_even = nn.Parameter(torch.randn(3, 4, 6) * 0.3)
        self.wt = nn.Parameter(torch.randn(4, 3, 3, 2) * 0.3)
        self.wt1 = nn.Parameter(torch.randn(4, 2, 5) * 0.3)
        self.bt = nn.Parameter(torch.randn(6) * 0.1)
        # Instance norm with running statistics (what InstanceNorm with
        # track_running_stats=True calls in eval), as constants.
        self.register_buffer("in_mean", torch.rand(4) - 0.5)
        self.register_buffer("in_var", torch.rand(4) + 0.5)
        self.in_weight = nn.Parameter(torch.rand(4) + 0.5)

    def forward(self, x):
        # x: 2 x 4 x 9 x 11
        a = torch.ops.aten.upsample_nearest2d(x, [13, 20], 1.5, 2.0)
        b = torch.ops.aten.upsample_nearest2d(x, None, [1.5, 2.0])
        c = torch.ops.aten.upsample_bilinear2d(x, [13, 20], False, 1.5, 2.0)
        d = torch.ops.aten.upsample_bilinear2d(x, [13, 20], True, None, None)
        e = torch.ops.aten._upsample_nearest_exact2d(x, [5, 7], None, None)
        f = torch.ops.aten._upsample_nearest_exact1d(x.flatten(2), None, [0.7])
        g = torch.ops.aten.upsample_linear1d(x.flatten(2), [50], True, None)
        h = torch.ops.aten.upsample_nearest1d(x.flatten(2), [150], 1.5)
        v = x.unsqueeze(2)  # 2 x 4 x 1 x 9 x 11
        i = torch.ops.aten.upsample_trilinear3d(v, [2, 17, 23], False, 2.0, 2.0, 2.0)
        j = torch.ops.aten.upsample_nearest3d(v, [3, 5, 6], None, None, None)
        k = torch.ops.aten._upsample_nearest_exact3d(v, None, [1.0, 0.5, 1.25])
        cubic_a = torch.ops.aten.upsample_bicubic2d(x, None, False, [1.7, 1.3])
        cubic_b = torch.ops.aten.upsample_bicubic2d(x, [5, 20], True, None, None)
        # Unbatched inputs: C x H x W.
        u = x.reshape(8, 9, 11)
        conv_u = F.conv2d(u, self.w2, None, 2, 1)
        pool_u = F.max_pool2d(u, 2) + F.avg_pool2d(u, 3, 2, 0, ceil_mode=True)
        adapt_u = F.adaptive_avg_pool2d(u, (2, 3)) + F.adaptive_max_pool2d(u, (2, 3))
        conv3 = F.conv3d(torch.cat([v, v * 0.5, v - 1.0], dim=2), self.w3, None, 1, "same")
        # padding="same" with even kernels: torch pads one more after than before.
        same_even3 = F.conv3d(torch.cat([v, v * 0.5, v - 1.0], dim=2), self.w3_even, None, 1, "same", (1, 2, 1))
        same_even2 = F.conv2d(x, self.w2_even, None, 1, "same", (2, 1))
        same_even1 = F.conv1d(x.flatten(2), self.w1_even, None, 1, "same", 3)
        convt = torch.ops.aten.convolution(x, self.wt, self.bt, [2, 1], [1, 0], [1, 2], True, [1, 0], 2)
        convt1 = F.conv_transpose1d(x.flatten(2), self.wt1, None, 3, 2, 1, 2, 2)
        inorm = torch.ops.aten.instance_norm(x.flatten(2), self.in_weight, None, self.in_mean, self.in_var, False,
                                             0.1, 1e-5, False)
        return a, b, c, d, e, f, g, h, i, j, k, cubic_a, cubic_b, conv_u, pool_u, adapt_u, conv3, same_even3, same_even2, same_even1, convt, convt1, inorm


def _overloads():
    m = Overloads().eval()
    torch.manual_seed(45)
    return torch.jit.script(m), [("x", torch.randn(2, 4, 9, 11))]


MODELS_VISION["vision_overloads"] = _overloads


def _mc3_18():
    """A torchvision video model (mixed 3-d / 2-d-in-3-d convolutions, BatchNorm3d,
    adaptive_avg_pool3d) on a short clip: 4 frames of 32x32."""
    import torchvision
    torch.manual_seed(29)
    m = torchvision.models.video.mc3_18(weights=None)
    with torch.no_grad():
        _randomize_norms(m, 29)
    m.eval()
    x = torch.randn(1, 3, 4, 32, 32)
    return torch.jit.trace(m, x), [("x", x)]


MODELS_VISION["mc3_18"] = _mc3_18


def _deeplabv3():
    """A torchvision segmentation model (dilated convolutions, ASPP with global pooling
    upsampled back, bilinear upsampling to the input's size); traced, its dict output
    {"out": ...} as it is."""
    import torchvision
    torch.manual_seed(30)
    m = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None)
    with torch.no_grad():
        _randomize_norms(m, 30)
    m.eval()
    x = torch.randn(1, 3, 64, 64)
    return torch.jit.trace(m, x, strict=False), [("x", x)]


MODELS_VISION["deeplabv3_mobilenet_v3_large"] = _deeplabv3


class GridSample(nn.Module):
    """F.affine_grid from a theta computed at run time, and F.grid_sample with every
    supported mode and padding, align_corners both ways, on a grid given as an input that
    reaches past [-1, 1] (a spatial-transformer block)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 6)

    def forward(self, x, grid):
        theta = torch.tanh(self.fc(x.mean(dim=(2, 3)))).view(-1, 2, 3) * 0.3 + \
            torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        g1 = F.affine_grid(theta, [2, 3, 7, 12], align_corners=False)
        g2 = F.affine_grid(theta, [2, 3, 1, 5], align_corners=True)
        outs = [F.grid_sample(x, g1, mode="bilinear", padding_mode="zeros", align_corners=False),
                F.grid_sample(x, g2, mode="nearest", padding_mode="border", align_corners=True)]
        for mode in ["bilinear", "nearest"]:
            for padding in ["zeros", "border", "reflection"]:
                for align in [False, True]:
                    outs.append(F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align))
        return g1, outs


def _grid_sample(script):
    torch.manual_seed(46)
    m = GridSample().eval()
    x = torch.randn(2, 3, 9, 11)
    grid = torch.rand(2, 6, 8, 2) * 2.6 - 1.3
    return (torch.jit.script(m) if script else torch.jit.trace(m, (x, grid))), [("x", x), ("grid", grid)]


class ChannelsLastBlocks(nn.Module):
    """What the CUDA target runs in NHWC (convert_to_channels_last.cpp), at odd channel counts
    (no float4 vectors) and batch 2: ConvNeXt's block (a depthwise 7x7, permutes around a layer
    norm and linear layers, a layer scale of shape [C, 1, 1], the residual), timm's form of it
    (the layer scale [C] on the linear layer's NHWC result: fold_gemm_channel_scale on every
    target), a LayerNorm2d before a strided convolution, a strided 5x5 depthwise and a
    squeeze-and-excitation gate of shape [N, C, 1, 1]."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 13, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(13, 13, 7, padding=3, groups=13)
        self.norm = nn.LayerNorm(13)
        self.fc1 = nn.Linear(13, 52)
        self.fc2 = nn.Linear(52, 13)
        self.scale = nn.Parameter(torch.rand(13, 1, 1) + 0.5)
        self.dw_b = nn.Conv2d(13, 13, 5, padding=2, groups=13)
        self.norm_b = nn.LayerNorm(13)
        self.fc3 = nn.Linear(13, 26)
        self.fc4 = nn.Linear(26, 13)
        self.gamma = nn.Parameter(torch.rand(13) - 0.5)
        self.down_norm = nn.LayerNorm(13)
        self.down = nn.Conv2d(13, 22, 2, stride=2)
        self.dw2 = nn.Conv2d(22, 22, 5, stride=2, padding=2, groups=22)
        self.se1 = nn.Conv2d(22, 6, 1)
        self.se2 = nn.Conv2d(6, 22, 1)
        self.proj = nn.Conv2d(22, 16, 1)

    def forward(self, x):  # 2 x 3 x 29 x 35
        x = self.stem(x)  # 2 x 13 x 15 x 18
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
        x = x + self.scale * y
        z = self.fc4(F.gelu(self.fc3(self.norm_b(self.dw_b(x).permute(0, 2, 3, 1))))) * self.gamma
        x = x + z.permute(0, 3, 1, 2)
        x = self.down_norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = self.down(x)  # 2 x 22 x 7 x 9
        e = F.silu(self.dw2(x))  # 2 x 22 x 4 x 5
        g = torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(e, 1)))))
        return self.proj(e * g)


def _channels_last_blocks(script):
    torch.manual_seed(31)
    m = ChannelsLastBlocks().eval()
    x = torch.randn(2, 3, 29, 35)
    return (torch.jit.script(m) if script else torch.jit.trace(m, x)), [("x", x)]


MODELS_VISION["channels_last_blocks"] = lambda: _channels_last_blocks(False)
MODELS_VISION["channels_last_blocks_scripted"] = lambda: _channels_last_blocks(True)
