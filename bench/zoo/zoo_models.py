#!/usr/bin/env python3
"""Model zoo for Weft: public architectures written out as plain torch.nn modules (no torchvision).

Every model is registered with `@register(name, family)`; its factory takes the size knob
("small": tiny inputs and, for the largest models, fewer layers or narrower widths, for
correctness tests; "full": the published input size) and the batch size, and returns a `Built`:
the module, its inputs (names, shapes, dtypes, value ranges, batch axis) and its outputs (names,
batch axis). `build(name, size, batch, seed)` seeds torch, calls the factory and randomizes the
weights (He-normal convolutions, random BatchNorm statistics, non-trivial LayerNorm/GroupNorm
affine parameters, small embeddings), so that no normalization is an identity, and puts the module
in eval mode. Weights are seeded and random: nothing is downloaded.

    from zoo_models import REGISTRY, build       # with bench/zoo on sys.path
    b = build("resnet18", "small", batch=2, seed=1234)

Families: classification, dense (segmentation, detection, generation, super-resolution),
transformer, sequence (audio, streaming RNNs, OCR).
"""
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

# ----------------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------------


@dataclass
class In:
    """A model input. kind: "normal" (float, N(0,1)), "uniform" (float, U(low, high)),
    "ids" (int64 in [low, high)), "mask" (int64 0/1)."""
    name: str
    shape: tuple
    dtype: str = "float32"
    kind: str = "normal"
    low: float = 0
    high: float = 1
    batch_axis: int = 0


@dataclass
class Out:
    name: str
    batch_axis: int = 0


@dataclass
class Built:
    module: nn.Module
    inputs: list
    outputs: list
    script: bool = False      # export through torch.jit.script (keeps control flow)
    notes: str = ""


@dataclass
class Entry:
    name: str
    family: str
    factory: object
    doc: str = ""


REGISTRY = {}


def register(name, family):
    def deco(fn):
        assert name not in REGISTRY, name
        REGISTRY[name] = Entry(name, family, fn, (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "")
        return fn
    return deco


def randomize(model):
    """Seeded random weights that keep activations in a sane range and make every normalization
    non-trivial (identity BN/LN would hide a wrong fold). Draws from torch's global generator."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv1d, nn.Conv2d)):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                if m.bias is not None:
                    m.bias.normal_(0.0, 0.05)
            elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.weight.uniform_(0.5, 1.0)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
            elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 0.02)
            elif isinstance(m, RMSNorm):
                m.weight.uniform_(0.5, 1.5)
    return model.eval()


def build(name, size="small", batch=1, seed=0):
    """The registered model `name` at `size` and `batch`, with weights seeded by `seed`."""
    assert size in ("small", "full"), size
    torch.manual_seed(seed)
    b = REGISTRY[name].factory(size, batch)
    randomize(b.module)
    return b


def img(batch, ch, h, w=None, name="input"):
    return [In(name, (batch, ch, h, w if w is not None else h))]


def logits(name="logits"):
    return [Out(name)]


def _make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def conv_bn(cin, cout, k, s=1, p=None, g=1, d=1, act=nn.ReLU, eps=1e-5):
    """Conv (no bias) + BatchNorm (+ activation class `act`, None for none)."""
    if p is None:
        p = ((k - 1) // 2) * d if isinstance(k, int) else tuple((kk - 1) // 2 for kk in k)
    layers = [nn.Conv2d(cin, cout, k, s, p, dilation=d, groups=g, bias=False), nn.BatchNorm2d(cout, eps=eps)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


# ----------------------------------------------------------------------------------------------
# Classification: ResNet family (He et al. 2015; ResNeXt, Xie et al. 2017)
# ----------------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride=1, groups=1, width_per_group=64):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, planes, 3, stride), conv_bn(planes, planes, 3, act=None))
        self.skip = conv_bn(cin, planes, 1, stride, act=None) if stride != 1 or cin != planes else nn.Identity()

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, groups=1, width_per_group=64):
        super().__init__()
        width = int(planes * (width_per_group / 64.0)) * groups
        cout = planes * self.expansion
        self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride, g=groups),
                                  conv_bn(width, cout, 1, act=None))
        self.skip = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


class ResNet(nn.Module):
    def __init__(self, block, layers, groups=1, width_per_group=64, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, 1))
        cin, stages = 64, []
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), layers)):
            blocks = []
            for j in range(n):
                blocks.append(block(cin, planes, 2 if (j == 0 and i > 0) else 1, groups, width_per_group))
                cin = planes * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(cin, num_classes)
        self.out_channels = [64 * block.expansion, 128 * block.expansion, 256 * block.expansion, 512 * block.expansion]

    def features(self, x):
        c2 = self.layer1(self.stem(x))
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return c2, c3, c4, c5

    def forward(self, x):
        x = self.features(x)[-1]
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _cls_size(size):
    return 64 if size == "small" else 224


@register("resnet18", "classification")
def resnet18(size, batch):
    """ResNet-18 (BasicBlock [2,2,2,2])."""
    return Built(ResNet(BasicBlock, [2, 2, 2, 2]), img(batch, 3, _cls_size(size)), logits())


@register("resnet34", "classification")
def resnet34(size, batch):
    """ResNet-34 (BasicBlock [3,4,6,3])."""
    return Built(ResNet(BasicBlock, [3, 4, 6, 3]), img(batch, 3, _cls_size(size)), logits())


@register("resnet50", "classification")
def resnet50(size, batch):
    """ResNet-50 (Bottleneck [3,4,6,3])."""
    return Built(ResNet(Bottleneck, [3, 4, 6, 3]), img(batch, 3, _cls_size(size)), logits())


@register("resnext50_32x4d", "classification")
def resnext50_32x4d(size, batch):
    """ResNeXt-50 32x4d (grouped 3x3 convolutions, 32 groups)."""
    return Built(ResNet(Bottleneck, [3, 4, 6, 3], groups=32, width_per_group=4), img(batch, 3, _cls_size(size)),
                 logits())


# ----------------------------------------------------------------------------------------------
# MobileNet v2 / v3, MNASNet, EfficientNet-B0
# ----------------------------------------------------------------------------------------------


class InvertedResidualV2(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, g=hidden, act=nn.ReLU6), conv_bn(hidden, cout, 1, act=None)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, num_classes=1000):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
        for t, c, n, s in self.STAGES:
            for i in range(n):
                layers.append(InvertedResidualV2(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


@register("mobilenet_v2", "classification")
def mobilenet_v2(size, batch):
    """MobileNetV2 1.0 (inverted residuals, ReLU6)."""
    return Built(MobileNetV2(), img(batch, 3, _cls_size(size)), logits())


class SqueezeExcite(nn.Module):
    def __init__(self, cin, squeeze, act=nn.ReLU, gate=nn.Hardsigmoid):
        super().__init__()
        self.fc1 = nn.Conv2d(cin, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, cin, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class InvertedResidualV3(nn.Module):
    def __init__(self, cin, k, exp, cout, se, act, stride, dilation=1):
        super().__init__()
        act = nn.Hardswish if act == "HS" else nn.ReLU
        layers = []
        if exp != cin:
            layers.append(conv_bn(cin, exp, 1, act=act))
        stride = 1 if dilation > 1 else stride
        layers.append(conv_bn(exp, exp, k, stride, d=dilation, g=exp, act=act))
        if se:
            layers.append(SqueezeExcite(exp, _make_divisible(exp // 4, 8)))
        layers.append(conv_bn(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


MBV3_LARGE = [(16, 3, 16, 16, False, "RE", 1), (16, 3, 64, 24, False, "RE", 2), (24, 3, 72, 24, False, "RE", 1),
              (24, 5, 72, 40, True, "RE", 2), (40, 5, 120, 40, True, "RE", 1), (40, 5, 120, 40, True, "RE", 1),
              (40, 3, 240, 80, False, "HS", 2), (80, 3, 200, 80, False, "HS", 1), (80, 3, 184, 80, False, "HS", 1),
              (80, 3, 184, 80, False, "HS", 1), (80, 3, 480, 112, True, "HS", 1), (112, 3, 672, 112, True, "HS", 1),
              (112, 5, 672, 160, True, "HS", 2), (160, 5, 960, 160, True, "HS", 1), (160, 5, 960, 160, True, "HS", 1)]
MBV3_SMALL = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
              (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
              (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
              (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1)]


class MobileNetV3(nn.Module):
    """torchvision's layout: features[0] = stem, features[1..n] = blocks, features[-1] = 1x1 conv
    to 6x the last block's channels. `dilated` makes the last stage stride 1, dilation 2 (output
    stride 16, for segmentation); `reduce` divides the last stage's channels (SSDLite's tail)."""

    def __init__(self, arch="large", num_classes=1000, dilated=False, reduce=1):
        super().__init__()
        conf = [list(c) for c in (MBV3_LARGE if arch == "large" else MBV3_SMALL)]
        last_stage = 12 if arch == "large" else 8     # first block of the stride-32 stage
        for i in range(last_stage, len(conf)):        # torchvision's reduce_divider on the tail
            if i > last_stage:
                conf[i][0] //= reduce
                conf[i][2] //= reduce
            conf[i][3] //= reduce
        layers = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)]
        for i, (cin, k, exp, cout, se, act, s) in enumerate(conf):
            layers.append(InvertedResidualV3(cin, k, exp, cout, se, act, s, 2 if dilated and i >= last_stage else 1))
        last_c = conf[-1][3]
        layers.append(conv_bn(last_c, 6 * last_c, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.out_channels = 6 * last_c
        hidden = 1280 if arch == "large" else 1024
        self.classifier = nn.Sequential(nn.Linear(6 * last_c, hidden), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


@register("mobilenet_v3_small", "classification")
def mobilenet_v3_small(size, batch):
    """MobileNetV3-Small (hardswish, SE with hardsigmoid)."""
    return Built(MobileNetV3("small"), img(batch, 3, _cls_size(size)), logits())


@register("mobilenet_v3_large", "classification")
def mobilenet_v3_large(size, batch):
    """MobileNetV3-Large (hardswish, SE with hardsigmoid)."""
    return Built(MobileNetV3("large"), img(batch, 3, _cls_size(size)), logits())


class MnasInvRes(nn.Module):
    def __init__(self, cin, cout, k, stride, exp):
        super().__init__()
        mid = cin * exp
        self.residual = cin == cout and stride == 1
        self.layers = nn.Sequential(conv_bn(cin, mid, 1), conv_bn(mid, mid, k, stride, g=mid),
                                    conv_bn(mid, cout, 1, act=None))

    def forward(self, x):
        return self.layers(x) + x if self.residual else self.layers(x)


class MNASNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2), conv_bn(32, 32, 3, 1, g=32), conv_bn(32, 16, 1, act=None)]
        cin = 16
        for cout, k, s, e, r in ((24, 3, 2, 3, 3), (40, 5, 2, 3, 3), (80, 5, 2, 6, 3), (96, 3, 1, 6, 2),
                                 (192, 5, 2, 6, 4), (320, 3, 1, 6, 1)):
            for i in range(r):
                layers.append(MnasInvRes(cin, cout, k, s if i == 0 else 1, e))
                cin = cout
        layers.append(conv_bn(320, 1280, 1))
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        return self.classifier(self.layers(x).mean([2, 3]))


@register("mnasnet1_0", "classification")
def mnasnet1_0(size, batch):
    """MNASNet 1.0 (mean over H,W as ReduceMean)."""
    return Built(MNASNet(), img(batch, 3, _cls_size(size)), logits())


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand):
        super().__init__()
        exp = cin * expand
        layers = [conv_bn(cin, exp, 1, act=nn.SiLU, eps=1e-3)] if expand != 1 else []
        layers += [conv_bn(exp, exp, k, stride, g=exp, act=nn.SiLU, eps=1e-3),
                   SqueezeExcite(exp, max(1, cin // 4), act=nn.SiLU, gate=nn.Sigmoid),
                   conv_bn(exp, cout, 1, act=None, eps=1e-3)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class EfficientNetB0(nn.Module):
    CONF = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
            (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))

    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2, act=nn.SiLU, eps=1e-3)]
        for e, k, s, cin, cout, n in self.CONF:
            for i in range(n):
                layers.append(MBConv(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e))
        layers.append(conv_bn(320, 1280, 1, act=nn.SiLU, eps=1e-3))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


@register("efficientnet_b0", "classification")
def efficientnet_b0(size, batch):
    """EfficientNet-B0 (MBConv, SiLU, SE with sigmoid)."""
    return Built(EfficientNetB0(), img(batch, 3, _cls_size(size)), logits())


# ----------------------------------------------------------------------------------------------
# ShuffleNet v2, SqueezeNet 1.1, DenseNet-121, RegNet
# ----------------------------------------------------------------------------------------------


def channel_shuffle(x, groups):
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        bf = cout // 2
        self.stride = stride
        if stride > 1:
            self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, g=cin, act=None), conv_bn(cin, bf, 1))
        else:
            self.branch1 = nn.Identity()
        self.branch2 = nn.Sequential(conv_bn(cin if stride > 1 else bf, bf, 1), conv_bn(bf, bf, 3, stride, g=bf, act=None),
                                     conv_bn(bf, bf, 1))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, repeats=(4, 8, 4), channels=(24, 116, 232, 464, 1024), num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, channels[0], 3, 2), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], channels[0]
        for n, cout in zip(repeats, channels[1:4]):
            layers += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            cin = cout
        self.stages = nn.Sequential(*layers)
        self.conv5 = conv_bn(cin, channels[-1], 1)
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x):
        return self.fc(self.conv5(self.stages(self.stem(x))).mean([2, 3]))


@register("shufflenet_v2_x1_0", "classification")
def shufflenet_v2_x1_0(size, batch):
    """ShuffleNet v2 1.0x (channel split, channel shuffle via reshape/transpose)."""
    return Built(ShuffleNetV2(), img(batch, 3, _cls_size(size)), logits())


class Fire(nn.Module):
    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, e1, 1)
        self.e3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


class SqueezeNet11(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, num_classes, 1), nn.ReLU(),
                                        nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


@register("squeezenet1_1", "classification")
def squeezenet1_1(size, batch):
    """SqueezeNet 1.1 (Fire modules, ceil-mode max pooling)."""
    return Built(SqueezeNet11(), img(batch, 3, _cls_size(size)), logits())


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size):
        super().__init__()
        self.norm1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.conv2 = nn.BatchNorm2d(bn_size * growth), nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, feats):
        x = self.conv1(F.relu(self.norm1(torch.cat(feats, 1))))
        return self.conv2(F.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, n, cin, growth, bn_size):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth, bn_size) for i in range(n))

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class DenseNet(nn.Module):
    def __init__(self, growth=32, blocks=(6, 12, 24, 16), init=64, bn_size=4, num_classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, init, 7, 2, 3, bias=False), nn.BatchNorm2d(init), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        c = init
        for i, n in enumerate(blocks):
            layers.append(DenseBlock(n, c, growth, bn_size))
            c += n * growth
            if i != len(blocks) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                c //= 2
        layers.append(nn.BatchNorm2d(c))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.features(x)), 1), 1))


@register("densenet121", "classification")
def densenet121(size, batch):
    """DenseNet-121 (growth 32, blocks 6/12/24/16; small size: blocks 2/4/6/4)."""
    blocks = (6, 12, 24, 16) if size == "full" else (2, 4, 6, 4)
    return Built(DenseNet(blocks=blocks), img(batch, 3, _cls_size(size)), logits())


class RegNetBlock(nn.Module):
    def __init__(self, w_in, w_out, stride, group_width, se_ratio):
        super().__init__()
        w_b = w_out
        g = w_b // group_width
        layers = [conv_bn(w_in, w_b, 1), conv_bn(w_b, w_b, 3, stride, g=g)]
        if se_ratio:
            layers.append(SqueezeExcite(w_b, int(round(se_ratio * w_in)), act=nn.ReLU, gate=nn.Sigmoid))
        layers.append(conv_bn(w_b, w_out, 1, act=None))
        self.f = nn.Sequential(*layers)
        self.proj = conv_bn(w_in, w_out, 1, stride, act=None) if (w_in != w_out or stride != 1) else nn.Identity()

    def forward(self, x):
        return F.relu(self.proj(x) + self.f(x))


class RegNet(nn.Module):
    def __init__(self, widths, depths, group_width, se_ratio, num_classes=1000):
        super().__init__()
        layers, w_in = [conv_bn(3, 32, 3, 2)], 32
        for w, d in zip(widths, depths):
            for i in range(d):
                layers.append(RegNetBlock(w_in, w, 2 if i == 0 else 1, group_width, se_ratio))
                w_in = w
        self.trunk = nn.Sequential(*layers)
        self.fc = nn.Linear(w_in, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.trunk(x), 1), 1))


@register("regnet_y_400mf", "classification")
def regnet_y_400mf(size, batch):
    """RegNetY-400MF (widths 48/104/208/440, depths 1/3/6/6, group width 8, SE 0.25)."""
    return Built(RegNet((48, 104, 208, 440), (1, 3, 6, 6), 8, 0.25), img(batch, 3, _cls_size(size)), logits())


@register("regnet_x_400mf", "classification")
def regnet_x_400mf(size, batch):
    """RegNetX-400MF (widths 32/64/160/400, depths 1/2/7/12, group width 16)."""
    return Built(RegNet((32, 64, 160, 400), (1, 2, 7, 12), 16, None), img(batch, 3, _cls_size(size)), logits())


# ----------------------------------------------------------------------------------------------
# ConvNeXt, ViT, Swin, MLP-Mixer
# ----------------------------------------------------------------------------------------------


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor (torchvision's: permute, normalize, permute)."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gelu = nn.GELU()
        self.layer_scale = nn.Parameter(torch.rand(dim, 1, 1) * 0.4 + 0.1)   # not 1e-6: keep the block visible

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pw2(self.gelu(self.pw1(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.layer_scale * y


class ConvNeXt(nn.Module):
    def __init__(self, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), num_classes=1000):
        super().__init__()
        layers = [nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6))]
        for i, (d, dim) in enumerate(zip(depths, dims)):
            layers.append(nn.Sequential(*[CNBlock(dim) for _ in range(d)]))
            if i < 3:
                layers.append(nn.Sequential(LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, dims[i + 1], 2, 2)))
        self.features = nn.Sequential(*layers)
        self.norm = LayerNorm2d(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        x = self.norm(F.adaptive_avg_pool2d(self.features(x), 1))
        return self.head(torch.flatten(x, 1))


@register("convnext_tiny", "classification")
def convnext_tiny(size, batch):
    """ConvNeXt-T (depthwise 7x7, LayerNorm over channels, GELU, layer scale)."""
    return Built(ConvNeXt(), img(batch, 3, _cls_size(size)), logits())


class Attention(nn.Module):
    """Multi-head self-attention with a fused qkv projection (ViT/Swin/Conformer style)."""

    def __init__(self, dim, heads, qkv_bias=True):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, bias=None):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if bias is not None:
            attn = attn + bias
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, image, patch=16, dim=768, depth=12, heads=12, mlp=3072, num_classes=1000):
        super().__init__()
        n = (image // patch) ** 2
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, mlp) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x[:, 0])


@register("vit_b_16", "classification")
def vit_b_16(size, batch):
    """ViT-B/16 (12 layers of 768; small size: 2 layers)."""
    return Built(ViT(_cls_size(size), depth=12 if size == "full" else 2), img(batch, 3, _cls_size(size)), logits())


class ShiftedWindowAttention(nn.Module):
    """Swin v1 window attention (torchvision's shifted_window_attention): pad, roll, partition,
    attention with a relative position bias gathered by index, a shift mask built by slice
    assignment, reverse partition, roll back, crop."""

    def __init__(self, dim, window, shift, heads):
        super().__init__()
        self.window, self.shift, self.heads = window, shift, heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += window - 1
        rel[:, :, 1] += window - 1
        rel[:, :, 0] *= 2 * window - 1
        self.register_buffer("index", rel.sum(-1).flatten(), persistent=False)

    def forward(self, x):
        ws, heads = self.window, self.heads
        b, h, w, c = x.shape
        pad_r, pad_b = (ws - w % ws) % ws, (ws - h % ws) % ws
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, ph, pw, _ = x.shape
        shift = [self.shift if ws < ph else 0, self.shift if ws < pw else 0]
        if sum(shift) > 0:
            x = torch.roll(x, shifts=(-shift[0], -shift[1]), dims=(1, 2))
        nw = (ph // ws) * (pw // ws)
        x = x.view(b, ph // ws, ws, pw // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b * nw, ws * ws, c)
        qkv = self.qkv(x).reshape(x.size(0), x.size(1), 3, heads, c // heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * (c // heads) ** -0.5).matmul(k.transpose(-2, -1))
        bias = self.table[self.index].view(ws * ws, ws * ws, -1).permute(2, 0, 1).contiguous().unsqueeze(0)
        attn = attn + bias
        if sum(shift) > 0:
            mask = x.new_zeros((ph, pw))
            hs = ((0, -ws), (-ws, -shift[0]), (-shift[0], None))
            wsl = ((0, -ws), (-ws, -shift[1]), (-shift[1], None))
            count = 0
            for hh in hs:
                for ww in wsl:
                    mask[hh[0]:hh[1], ww[0]:ww[1]] = count
                    count += 1
            mask = mask.view(ph // ws, ws, pw // ws, ws).permute(0, 2, 1, 3).reshape(nw, ws * ws)
            mask = mask.unsqueeze(1) - mask.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
            attn = attn.view(x.size(0) // nw, nw, heads, x.size(1), x.size(1)) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, heads, x.size(1), x.size(1))
        attn = F.softmax(attn, dim=-1)
        x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), c)
        x = self.proj(x)
        x = x.view(b, ph // ws, pw // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, ph, pw, c)
        if sum(shift) > 0:
            x = torch.roll(x, shifts=(shift[0], shift[1]), dims=(1, 2))
        return x[:, :h, :w, :].contiguous()


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, window, shift):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = ShiftedWindowAttention(dim, window, shift, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x0, x1 = x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :]
        x2, x3 = x[..., 0::2, 1::2, :], x[..., 1::2, 1::2, :]
        return self.reduction(self.norm(torch.cat([x0, x1, x2, x3], -1)))


class SwinT(nn.Module):
    def __init__(self, dim=96, depths=(2, 2, 6, 2), heads=(3, 6, 12, 24), window=7, num_classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.patch_norm = nn.LayerNorm(dim)
        layers = []
        for i, (d, h) in enumerate(zip(depths, heads)):
            layers += [SwinBlock(dim, h, window, 0 if j % 2 == 0 else window // 2) for j in range(d)]
            if i < len(depths) - 1:
                layers.append(PatchMerging(dim))
                dim *= 2
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_norm(self.patch(x).permute(0, 2, 3, 1))
        x = self.norm(self.layers(x)).permute(0, 3, 1, 2)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@register("swin_t", "classification")
def swin_t(size, batch):
    """Swin-T (shifted-window attention, roll, relative position bias gather, shift mask by slice assignment)."""
    return Built(SwinT(), img(batch, 3, _cls_size(size)), logits())


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim, tok_mlp, ch_mlp):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, tok_mlp), nn.GELU(), nn.Linear(tok_mlp, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(dim, ch_mlp), nn.GELU(), nn.Linear(ch_mlp, dim))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    def __init__(self, image, patch=16, dim=768, depth=12, tok_mlp=384, ch_mlp=3072, num_classes=1000):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim, tok_mlp, ch_mlp) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(dim=1))


@register("mixer_b_16", "classification")
def mixer_b_16(size, batch):
    """MLP-Mixer B/16 (12 blocks; small size: 2 blocks)."""
    return Built(MLPMixer(_cls_size(size), depth=12 if size == "full" else 2), img(batch, 3, _cls_size(size)), logits())


# ----------------------------------------------------------------------------------------------
# GoogLeNet, Inception v3, AlexNet, VGG-11
# ----------------------------------------------------------------------------------------------


def basic_conv(cin, cout, k, s=1, p=0):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout, eps=0.001), nn.ReLU())


class InceptionG(nn.Module):
    def __init__(self, cin, c1, c3r, c3, c5r, c5, pp):
        super().__init__()
        self.b1 = basic_conv(cin, c1, 1)
        self.b2 = nn.Sequential(basic_conv(cin, c3r, 1), basic_conv(c3r, c3, 3, p=1))
        self.b3 = nn.Sequential(basic_conv(cin, c5r, 1), basic_conv(c5r, c5, 5, p=2))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), basic_conv(cin, pp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


class GoogLeNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        mp = lambda k=3: nn.MaxPool2d(k, 2, ceil_mode=True)   # noqa: E731
        self.net = nn.Sequential(
            basic_conv(3, 64, 7, 2, 3), mp(), basic_conv(64, 64, 1), basic_conv(64, 192, 3, p=1), mp(),
            InceptionG(192, 64, 96, 128, 16, 32, 32), InceptionG(256, 128, 128, 192, 32, 96, 64), mp(),
            InceptionG(480, 192, 96, 208, 16, 48, 64), InceptionG(512, 160, 112, 224, 24, 64, 64),
            InceptionG(512, 128, 128, 256, 24, 64, 64), InceptionG(512, 112, 144, 288, 32, 64, 64),
            InceptionG(528, 256, 160, 320, 32, 128, 128), mp(2),
            InceptionG(832, 256, 160, 320, 32, 128, 128), InceptionG(832, 384, 192, 384, 48, 128, 128))
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.net(x), 1), 1))


@register("googlenet", "classification")
def googlenet(size, batch):
    """GoogLeNet / Inception v1 (no auxiliary heads; ceil-mode pooling)."""
    return Built(GoogLeNet(), img(batch, 3, _cls_size(size)), logits())


class InceptionA(nn.Module):
    def __init__(self, cin, pool):
        super().__init__()
        self.b1 = basic_conv(cin, 64, 1)
        self.b5 = nn.Sequential(basic_conv(cin, 48, 1), basic_conv(48, 64, 5, p=2))
        self.b3 = nn.Sequential(basic_conv(cin, 64, 1), basic_conv(64, 96, 3, p=1), basic_conv(96, 96, 3, p=1))
        self.bp = basic_conv(cin, pool, 1)

    def forward(self, x):
        return torch.cat([self.b1(x), self.b5(x), self.b3(x), self.bp(F.avg_pool2d(x, 3, 1, 1))], 1)


class InceptionB(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.b3 = basic_conv(cin, 384, 3, 2)
        self.bd = nn.Sequential(basic_conv(cin, 64, 1), basic_conv(64, 96, 3, p=1), basic_conv(96, 96, 3, 2))

    def forward(self, x):
        return torch.cat([self.b3(x), self.bd(x), F.max_pool2d(x, 3, 2)], 1)


class InceptionC(nn.Module):
    def __init__(self, cin, c7):
        super().__init__()
        self.b1 = basic_conv(cin, 192, 1)
        self.b7 = nn.Sequential(basic_conv(cin, c7, 1), basic_conv(c7, c7, (1, 7), p=(0, 3)),
                                basic_conv(c7, 192, (7, 1), p=(3, 0)))
        self.bd = nn.Sequential(basic_conv(cin, c7, 1), basic_conv(c7, c7, (7, 1), p=(3, 0)),
                                basic_conv(c7, c7, (1, 7), p=(0, 3)), basic_conv(c7, c7, (7, 1), p=(3, 0)),
                                basic_conv(c7, 192, (1, 7), p=(0, 3)))
        self.bp = basic_conv(cin, 192, 1)

    def forward(self, x):
        return torch.cat([self.b1(x), self.b7(x), self.bd(x), self.bp(F.avg_pool2d(x, 3, 1, 1))], 1)


class InceptionD(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.b3 = nn.Sequential(basic_conv(cin, 192, 1), basic_conv(192, 320, 3, 2))
        self.b7 = nn.Sequential(basic_conv(cin, 192, 1), basic_conv(192, 192, (1, 7), p=(0, 3)),
                                basic_conv(192, 192, (7, 1), p=(3, 0)), basic_conv(192, 192, 3, 2))

    def forward(self, x):
        return torch.cat([self.b3(x), self.b7(x), F.max_pool2d(x, 3, 2)], 1)


class InceptionE(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.b1 = basic_conv(cin, 320, 1)
        self.b3_1 = basic_conv(cin, 384, 1)
        self.b3_2a, self.b3_2b = basic_conv(384, 384, (1, 3), p=(0, 1)), basic_conv(384, 384, (3, 1), p=(1, 0))
        self.bd_1 = nn.Sequential(basic_conv(cin, 448, 1), basic_conv(448, 384, 3, p=1))
        self.bd_3a, self.bd_3b = basic_conv(384, 384, (1, 3), p=(0, 1)), basic_conv(384, 384, (3, 1), p=(1, 0))
        self.bp = basic_conv(cin, 192, 1)

    def forward(self, x):
        b3 = self.b3_1(x)
        b3 = torch.cat([self.b3_2a(b3), self.b3_2b(b3)], 1)
        bd = self.bd_1(x)
        bd = torch.cat([self.bd_3a(bd), self.bd_3b(bd)], 1)
        return torch.cat([self.b1(x), b3, bd, self.bp(F.avg_pool2d(x, 3, 1, 1))], 1)


class InceptionV3(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.net = nn.Sequential(
            basic_conv(3, 32, 3, 2), basic_conv(32, 32, 3), basic_conv(32, 64, 3, p=1), nn.MaxPool2d(3, 2),
            basic_conv(64, 80, 1), basic_conv(80, 192, 3), nn.MaxPool2d(3, 2),
            InceptionA(192, 32), InceptionA(256, 64), InceptionA(288, 64), InceptionB(288),
            InceptionC(768, 128), InceptionC(768, 160), InceptionC(768, 160), InceptionC(768, 192),
            InceptionD(768), InceptionE(1280), InceptionE(2048))
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.net(x), 1), 1))


@register("inception_v3", "classification")
def inception_v3(size, batch):
    """Inception v3 (factorized 1x7/7x1 convolutions, avg-pool branches; 299 px, small 80 px)."""
    return Built(InceptionV3(), img(batch, 3, 80 if size == "small" else 299), logits())


class AlexNet(nn.Module):
    def __init__(self, hidden=4096, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2), nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(3, 2), nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(), nn.Conv2d(384, 256, 3, padding=1),
            nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2))
        self.pool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(nn.Dropout(), nn.Linear(256 * 36, hidden), nn.ReLU(), nn.Dropout(),
                                        nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


@register("alexnet", "classification")
def alexnet(size, batch):
    """AlexNet (11x11/4 stem; 224 px at both sizes since the 6x6 adaptive pool needs it; small: 512-wide classifier)."""
    return Built(AlexNet(4096 if size == "full" else 512), img(batch, 3, 224), logits())


class VGG(nn.Module):
    CFG11 = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")

    def __init__(self, div=1, hidden=4096, num_classes=1000):
        super().__init__()
        layers, c = [], 3
        for v in self.CFG11:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, v // div, 3, padding=1), nn.ReLU()]
                c = v // div
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(c * 49, hidden), nn.ReLU(), nn.Dropout(),
                                        nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


@register("vgg11", "classification")
def vgg11(size, batch):
    """VGG-11 (224 px at both sizes for the 7x7 adaptive pool; small: channels /4, 512-wide classifier)."""
    return Built(VGG(1, 4096) if size == "full" else VGG(4, 512), img(batch, 3, 224), logits())


# ----------------------------------------------------------------------------------------------
# Dense prediction
# ----------------------------------------------------------------------------------------------


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(conv_bn(cin, cout, 3), conv_bn(cout, cout, 3))


class UpUNet(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, 2, 2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy, dx = x2.size()[2] - x1.size()[2], x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, cin=3, classes=2, base=32):
        super().__init__()
        c = [base * 2 ** i for i in range(5)]
        self.inc = DoubleConv(cin, c[0])
        self.downs = nn.ModuleList(nn.Sequential(nn.MaxPool2d(2), DoubleConv(c[i], c[i + 1])) for i in range(4))
        self.ups = nn.ModuleList(UpUNet(c[i + 1], c[i]) for i in reversed(range(4)))
        self.outc = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for d in self.downs:
            skips.append(d(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


@register("unet", "dense")
def unet(size, batch):
    """U-Net (base 32; ConvTranspose k2 s2, size-matching Pad, skip concat; 256 px)."""
    return Built(UNet(), img(batch, 3, 64 if size == "small" else 256), [Out("mask")])


class FPNResNet18(nn.Module):
    def __init__(self, ch=256):
        super().__init__()
        self.body = ResNet(BasicBlock, [2, 2, 2, 2])
        self.lateral = nn.ModuleList(nn.Conv2d(c, ch, 1) for c in self.body.out_channels)
        self.output = nn.ModuleList(nn.Conv2d(ch, ch, 3, padding=1) for _ in self.body.out_channels)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        feats = self.body.features(x)
        last = self.lateral[-1](feats[-1])
        outs = [self.output[-1](last)]
        for i in range(len(feats) - 2, -1, -1):
            last = self.lateral[i](feats[i]) + self.up(last)
            outs.insert(0, self.output[i](last))
        outs.append(F.max_pool2d(outs[-1], 1, 2, 0))
        return tuple(outs)


@register("fpn_resnet18", "dense")
def fpn_resnet18(size, batch):
    """FPN on ResNet-18 (lateral 1x1, nearest Upsample x2, P2..P6 outputs; 512 px)."""
    return Built(FPNResNet18(), img(batch, 3, 64 if size == "small" else 512), [Out(f"p{i}") for i in range(2, 7)])


class ASPP(nn.Module):
    def __init__(self, cin, rates=(12, 24, 36), ch=256):
        super().__init__()
        self.convs = nn.ModuleList([conv_bn(cin, ch, 1)] + [conv_bn(cin, ch, 3, d=r) for r in rates])
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), conv_bn(cin, ch, 1))
        self.project = nn.Sequential(conv_bn(ch * (len(rates) + 2), ch, 1), nn.Dropout(0.5))

    def forward(self, x):
        res = [c(x) for c in self.convs]
        res.append(F.interpolate(self.pool(x), size=x.shape[-2:], mode="bilinear", align_corners=False))
        return self.project(torch.cat(res, 1))


class DeepLabV3MBv3(nn.Module):
    def __init__(self, classes=21):
        super().__init__()
        self.backbone = MobileNetV3("large", dilated=True).features
        self.head = nn.Sequential(ASPP(960), conv_bn(256, 256, 3), nn.Conv2d(256, classes, 1))

    def forward(self, x):
        y = self.head(self.backbone(x))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


def _seg_size(size):
    return 64 if size == "small" else 520


@register("deeplabv3_mobilenet_v3_large", "dense")
def deeplabv3_mobilenet_v3_large(size, batch):
    """DeepLabV3 head (ASPP: dilated 3x3 convs + pooled branch, bilinear Resize) on a dilated MobileNetV3-Large."""
    return Built(DeepLabV3MBv3(), img(batch, 3, _seg_size(size)), [Out("out")])


class LRASPP(nn.Module):
    def __init__(self, classes=21, inter=128):
        super().__init__()
        feats = MobileNetV3("large", dilated=True).features
        self.low = feats[:5]       # through the first stride-8 block: 40 channels
        self.high = feats[5:]      # to the 960-channel 1x1 conv, output stride 16
        self.cbr = conv_bn(960, inter, 1)
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(960, inter, 1, bias=False), nn.Sigmoid())
        self.low_classifier = nn.Conv2d(40, classes, 1)
        self.high_classifier = nn.Conv2d(inter, classes, 1)

    def forward(self, x):
        low = self.low(x)
        high = self.high(low)
        y = self.cbr(high) * self.scale(high)
        y = F.interpolate(y, size=low.shape[-2:], mode="bilinear", align_corners=False)
        y = self.low_classifier(low) + self.high_classifier(y)
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


@register("lraspp_mobilenet_v3_large", "dense")
def lraspp_mobilenet_v3_large(size, batch):
    """LR-ASPP (sigmoid-gated 1x1 head, low/high-level fusion) on a dilated MobileNetV3-Large."""
    return Built(LRASPP(), img(batch, 3, _seg_size(size)), [Out("out")])


def _extra_block(cin, cout):
    mid = cout // 2
    return nn.Sequential(conv_bn(cin, mid, 1, act=nn.ReLU6), conv_bn(mid, mid, 3, 2, g=mid, act=nn.ReLU6),
                         conv_bn(mid, cout, 1, act=nn.ReLU6))


class SSDLiteHead(nn.Module):
    def __init__(self, chans, anchors, out_per_anchor):
        super().__init__()
        self.k = out_per_anchor
        self.heads = nn.ModuleList(nn.Sequential(conv_bn(c, c, 3, g=c, act=nn.ReLU6), nn.Conv2d(c, a * out_per_anchor, 1))
                                   for c, a in zip(chans, anchors))

    def forward(self, feats):
        outs = []
        for f, h in zip(feats, self.heads):
            y = h(f)
            n, _, hh, ww = y.shape
            outs.append(y.view(n, -1, self.k, hh, ww).permute(0, 3, 4, 1, 2).reshape(n, -1, self.k))
        return torch.cat(outs, 1)


class SSDLite(nn.Module):
    def __init__(self, classes=91):
        super().__init__()
        feats = MobileNetV3("large", reduce=2).features
        self.c4 = feats[:13]       # stride 16, 112 channels
        self.c5 = feats[13:]       # stride 32, 480 channels
        self.extras = nn.ModuleList([_extra_block(480, 512), _extra_block(512, 256), _extra_block(256, 256),
                                     _extra_block(256, 128)])
        chans, anchors = (112, 480, 512, 256, 256, 128), (6,) * 6
        self.cls = SSDLiteHead(chans, anchors, classes)
        self.reg = SSDLiteHead(chans, anchors, 4)

    def forward(self, x):
        feats = [self.c4(x)]
        feats.append(self.c5(feats[-1]))
        for e in self.extras:
            feats.append(e(feats[-1]))
        return self.cls(feats), self.reg(feats)


@register("ssdlite_mobilenet_v3", "dense")
def ssdlite_mobilenet_v3(size, batch):
    """SSDLite (depthwise-separable heads on 6 maps, MobileNetV3-Large with halved tail; 320 px)."""
    return Built(SSDLite(), img(batch, 3, 96 if size == "small" else 320), [Out("cls_logits"), Out("bbox_regression")])


def dws(cin, cout, s=1):
    """Depthwise 3x3 + pointwise 1x1, each with BN + LeakyReLU(0.1)."""
    act = lambda: nn.LeakyReLU(0.1)   # noqa: E731
    return nn.Sequential(conv_bn(cin, cin, 3, s, g=cin, act=act), conv_bn(cin, cout, 1, act=act))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = conv_bn(c, c // 2, 1, act=nn.SiLU), conv_bn(c * 2, c, 1, act=nn.SiLU)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat([x, y1, y2, self.m(y2)], 1))


class YoloDW(nn.Module):
    """A YOLO-style detector built of depthwise-separable blocks: backbone to stride 32, SPPF, a
    PAN neck (nearest Upsample + Concat, strided depthwise downsampling), three 1x1 heads and
    YOLOv5's box decoding (sigmoid, grid offsets, squared scale times anchors)."""

    ANCHORS = (((10, 13), (16, 30), (33, 23)), ((30, 61), (62, 45), (59, 119)), ((116, 90), (156, 198), (373, 326)))

    def __init__(self, image, classes=80):
        super().__init__()
        self.no = classes + 5
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2, act=nn.SiLU), dws(16, 32), dws(32, 64, 2), dws(64, 64))
        self.c3 = nn.Sequential(dws(64, 128, 2), dws(128, 128))
        self.c4 = nn.Sequential(dws(128, 256, 2), dws(256, 256))
        self.c5 = nn.Sequential(dws(256, 512, 2), dws(512, 512), SPPF(512))
        self.lat5, self.lat4 = conv_bn(512, 256, 1, act=nn.SiLU), conv_bn(256, 128, 1, act=nn.SiLU)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4, self.td3 = dws(512, 256), dws(256, 128)
        self.down3, self.bu4 = dws(128, 128, 2), dws(256, 256)
        self.down4, self.bu5 = dws(256, 256, 2), dws(512, 512)
        self.heads = nn.ModuleList(nn.Conv2d(c, 3 * self.no, 1) for c in (128, 256, 512))
        for i, s in enumerate((8, 16, 32)):
            ny, nx = image // s, image // s
            yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            self.register_buffer(f"grid{i}", torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float() - 0.5,
                                 persistent=False)
            self.register_buffer(f"anchor{i}", torch.tensor(self.ANCHORS[i], dtype=torch.float32).view(1, 3, 1, 1, 2),
                                 persistent=False)
        self.strides = (8, 16, 32)

    def forward(self, x):
        c3 = self.c3(self.stem(x))
        c4 = self.c4(c3)
        c5 = self.c5(c4)
        p5 = self.lat5(c5)
        p4 = self.lat4(self.td4(torch.cat([self.up(p5), c4], 1)))
        o3 = self.td3(torch.cat([self.up(p4), c3], 1))
        o4 = self.bu4(torch.cat([self.down3(o3), p4], 1))
        o5 = self.bu5(torch.cat([self.down4(o4), p5], 1))
        outs = []
        for i, f in enumerate((o3, o4, o5)):
            y = self.heads[i](f)
            b, _, ny, nx = y.shape
            y = y.view(b, 3, self.no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
            xy = (y[..., 0:2] * 2 + getattr(self, f"grid{i}")) * self.strides[i]
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor{i}")
            outs.append(torch.cat((xy, wh, y[..., 4:]), -1).view(b, -1, self.no))
        return torch.cat(outs, 1)


@register("yolo_dw", "dense")
def yolo_dw(size, batch):
    """YOLO-style depthwise-separable detector with SPPF, PAN neck and box decoding (416 px)."""
    s = 64 if size == "small" else 416
    return Built(YoloDW(s), img(batch, 3, s), [Out("detections")])


class BlazeBlock(nn.Module):
    def __init__(self, cin, cout, k=3, stride=1):
        super().__init__()
        self.stride, self.pad_c = stride, cout - cin
        if stride == 2:
            self.pool = nn.MaxPool2d(stride, stride)
        self.convs = nn.Sequential(nn.Conv2d(cin, cin, k, stride, 0 if stride == 2 else (k - 1) // 2, groups=cin),
                                   nn.Conv2d(cin, cout, 1))

    def forward(self, x):
        if self.stride == 2:
            h = F.pad(x, (0, 2, 0, 2))
            x = self.pool(x)
        else:
            h = x
        if self.pad_c > 0:
            x = F.pad(x, (0, 0, 0, 0, 0, self.pad_c))
        return F.relu(self.convs(h) + x)


class BlazeFace(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 5, 2, 0)
        self.b1 = nn.Sequential(BlazeBlock(24, 24), BlazeBlock(24, 28), BlazeBlock(28, 32, stride=2),
                                BlazeBlock(32, 36), BlazeBlock(36, 42), BlazeBlock(42, 48, stride=2),
                                BlazeBlock(48, 56), BlazeBlock(56, 64), BlazeBlock(64, 72), BlazeBlock(72, 80),
                                BlazeBlock(80, 88))
        self.b2 = nn.Sequential(BlazeBlock(88, 96, stride=2), *[BlazeBlock(96, 96) for _ in range(4)])
        self.cls8, self.cls16 = nn.Conv2d(88, 2, 1), nn.Conv2d(96, 6, 1)
        self.reg8, self.reg16 = nn.Conv2d(88, 32, 1), nn.Conv2d(96, 96, 1)

    def forward(self, x):
        b = x.shape[0]
        x = F.relu(self.stem(F.pad(x, (1, 2, 1, 2))))
        x = self.b1(x)
        h = self.b2(x)
        c = torch.cat([self.cls8(x).permute(0, 2, 3, 1).reshape(b, -1, 1),
                       self.cls16(h).permute(0, 2, 3, 1).reshape(b, -1, 1)], 1)
        r = torch.cat([self.reg8(x).permute(0, 2, 3, 1).reshape(b, -1, 16),
                       self.reg16(h).permute(0, 2, 3, 1).reshape(b, -1, 16)], 1)
        return r, c


@register("blazeface", "dense")
def blazeface(size, batch):
    """BlazeFace front model (BlazeBlocks: depthwise + pointwise, max-pool skip, channel Pad; 128 px)."""
    return Built(BlazeFace(), img(batch, 3, 64 if size == "small" else 128), [Out("regressors"), Out("classificators")])


class ESPCN(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                 nn.Conv2d(32, r * r, 3, padding=1), nn.PixelShuffle(r))

    def forward(self, x):
        return self.net(x)


@register("espcn", "dense")
def espcn(size, batch):
    """ESPCN x3 super-resolution (tanh convs, PixelShuffle -> DepthToSpace)."""
    return Built(ESPCN(), img(batch, 1, 32 if size == "small" else 224), [Out("upscaled")])


class DCGANGenerator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        def up(cin, cout, s=2, p=1):
            return [nn.ConvTranspose2d(cin, cout, 4, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
        self.net = nn.Sequential(*up(nz, ngf * 8, 1, 0), *up(ngf * 8, ngf * 4), *up(ngf * 4, ngf * 2), *up(ngf * 2, ngf),
                                 nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.net(z)


@register("dcgan_generator", "dense")
def dcgan_generator(size, batch):
    """DCGAN generator (ConvTranspose stack 1 -> 64 px; small: ngf 16)."""
    return Built(DCGANGenerator(ngf=64 if size == "full" else 16), [In("z", (batch, 100, 1, 1))], [Out("image")])


class ConvAutoencoder(nn.Module):
    def __init__(self, image, latent=128):
        super().__init__()
        self.s = image // 8
        self.enc = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                                 nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU())
        self.fc_enc = nn.Linear(128 * self.s * self.s, latent)
        self.fc_dec = nn.Linear(latent, 128 * self.s * self.s)
        self.dec = nn.Sequential(nn.ConvTranspose2d(128, 64, 3, 2, 1, output_padding=1), nn.ReLU(),
                                 nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1), nn.ReLU(),
                                 nn.ConvTranspose2d(32, 3, 3, 2, 1, output_padding=1), nn.Sigmoid())

    def forward(self, x):
        z = self.fc_enc(torch.flatten(self.enc(x), 1))
        y = F.relu(self.fc_dec(z)).view(-1, 128, self.s, self.s)
        return self.dec(y), z


@register("conv_autoencoder", "dense")
def conv_autoencoder(size, batch):
    """Convolutional autoencoder (strided convs, linear bottleneck, ConvTranspose with output_padding)."""
    s = 32 if size == "small" else 128
    return Built(ConvAutoencoder(s), img(batch, 3, s), [Out("reconstruction"), Out("latent")])


# ----------------------------------------------------------------------------------------------
# Transformers
# ----------------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    def __init__(self, h, heads, inter, eps=1e-12):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.q, self.k, self.v, self.o = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.ln1, self.ln2 = nn.LayerNorm(h, eps=eps), nn.LayerNorm(h, eps=eps)
        self.fc1, self.fc2 = nn.Linear(h, inter), nn.Linear(inter, h)
        self.act = nn.GELU()

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask_add):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + mask_add
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size(0), ctx.size(1), -1)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(self.act(self.fc1(x))))


class Bert(nn.Module):
    def __init__(self, vocab=30522, h=768, layers=12, heads=12, inter=3072, max_pos=512, types=2):
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(vocab, h), nn.Embedding(max_pos, h), nn.Embedding(types, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        self.layers = nn.ModuleList(BertLayer(h, heads, inter) for _ in range(layers))
        self.pooler = nn.Linear(h, h)

    def forward(self, input_ids, attention_mask, token_type_ids):
        s = input_ids.size(1)
        x = self.word(input_ids) + self.pos(self.position_ids[:, :s]) + self.token_type(token_type_ids)
        x = self.ln(x)
        mask_add = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_add)
        return x, torch.tanh(self.pooler(x[:, 0]))


def _tok_inputs(batch, seq, vocab, types=True, mask=True):
    ins = [In("input_ids", (batch, seq), "int64", "ids", 0, vocab)]
    if mask:
        ins.append(In("attention_mask", (batch, seq), "int64", "mask", 0, 2))
    if types:
        ins.append(In("token_type_ids", (batch, seq), "int64", "ids", 0, 2))
    return ins


@register("bert_base", "transformer")
def bert_base(size, batch):
    """BERT-base encoder (Gather embeddings, additive attention mask, GELU erf, post-LN; seq 128; small: 2x128)."""
    if size == "full":
        return Built(Bert(), _tok_inputs(batch, 128, 30522), [Out("last_hidden_state"), Out("pooler_output")])
    return Built(Bert(vocab=1000, h=128, layers=2, heads=2, inter=512, max_pos=64),
                 _tok_inputs(batch, 16, 1000), [Out("last_hidden_state"), Out("pooler_output")])


class GPT2Block(nn.Module):
    def __init__(self, h, heads, max_pos):
        super().__init__()
        self.heads, self.h = heads, h
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.act = nn.GELU(approximate="tanh")
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool)).view(1, 1, max_pos, max_pos),
                             persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(self.h, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(c // self.heads)
        w = torch.where(self.bias[:, :, :t, :t], w, torch.tensor(-1e4, dtype=w.dtype))
        y = torch.matmul(w.softmax(-1), v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, h=768, layers=12, heads=12, max_pos=1024):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(max_pos, h)
        self.blocks = nn.ModuleList(GPT2Block(h, heads, max_pos) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)

    def forward(self, input_ids):
        pos = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.ln_f(x), self.wte.weight)     # tied LM head


@register("gpt2", "transformer")
def gpt2(size, batch):
    """GPT-2 small decoder (causal mask via Where, GELU tanh, tied LM head; seq 128; small: 2x128, vocab 1000)."""
    if size == "full":
        return Built(GPT2(), [In("input_ids", (batch, 128), "int64", "ids", 0, 50257)], logits())
    return Built(GPT2(vocab=1000, h=128, layers=2, heads=4, max_pos=64),
                 [In("input_ids", (batch, 16), "int64", "ids", 0, 1000)], logits())


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class T5Attention(nn.Module):
    def __init__(self, d, heads, dkv, rel_bias=False, buckets=32, max_distance=128):
        super().__init__()
        self.heads, self.dkv = heads, dkv
        self.q, self.k, self.v = (nn.Linear(d, heads * dkv, bias=False) for _ in range(3))
        self.o = nn.Linear(heads * dkv, d, bias=False)
        self.buckets, self.max_distance = buckets, max_distance
        self.rel = nn.Embedding(buckets, heads) if rel_bias else None

    def bucket(self, rel):
        """T5's unidirectional relative position buckets (exact below buckets/2, log-spaced above)."""
        n = self.buckets
        rel = -torch.min(rel, torch.zeros_like(rel))
        max_exact = n // 2
        is_small = rel < max_exact
        large = max_exact + (torch.log(rel.float() / max_exact) / math.log(self.max_distance / max_exact)
                             * (n - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, n - 1))
        return torch.where(is_small, rel, large)

    def position_bias(self, tq, tk):
        ctx = torch.arange(tq, dtype=torch.long)[:, None]
        mem = torch.arange(tk, dtype=torch.long)[None, :]
        return self.rel(self.bucket(mem - ctx)).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x, kv, bias):
        b, tq, _ = x.shape
        tk = kv.shape[1]
        q = self.q(x).view(b, tq, self.heads, self.dkv).transpose(1, 2)
        k = self.k(kv).view(b, tk, self.heads, self.dkv).transpose(1, 2)
        v = self.v(kv).view(b, tk, self.heads, self.dkv).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias         # T5: no 1/sqrt(d) scaling
        y = torch.matmul(F.softmax(scores.float(), dim=-1), v)
        return self.o(y.transpose(1, 2).reshape(b, tq, -1))


class T5DecoderBlock(nn.Module):
    def __init__(self, d, heads, dkv, ff, rel_bias):
        super().__init__()
        self.ln_sa, self.ln_ca, self.ln_ff = RMSNorm(d), RMSNorm(d), RMSNorm(d)
        self.sa = T5Attention(d, heads, dkv, rel_bias)
        self.ca = T5Attention(d, heads, dkv)
        self.wi_0, self.wi_1 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x, enc, self_bias, cross_bias):
        h = self.ln_sa(x)
        x = x + self.sa(h, h, self_bias)
        x = x + self.ca(self.ln_ca(x), enc, cross_bias)
        h = self.ln_ff(x)
        return x + self.wo(self.act(self.wi_0(h)) * self.wi_1(h))


class T5Decoder(nn.Module):
    def __init__(self, d=768, heads=12, dkv=64, ff=2048, layers=2):
        super().__init__()
        self.blocks = nn.ModuleList(T5DecoderBlock(d, heads, dkv, ff, i == 0) for i in range(layers))
        self.final = RMSNorm(d)

    def forward(self, hidden, encoder_hidden, encoder_attention_mask):
        tq, tk = hidden.shape[1], encoder_hidden.shape[1]
        causal = torch.tril(torch.ones(tq, tq, dtype=torch.bool))
        self_bias = self.blocks[0].sa.position_bias(tq, tq) + torch.where(causal, 0.0, -1e9)[None, None]
        cross_bias = (1.0 - encoder_attention_mask[:, None, None, :].to(torch.float32)) * -1e9
        for blk in self.blocks:
            hidden = blk(hidden, encoder_hidden, self_bias, cross_bias)
        return self.final(hidden)


@register("t5_decoder", "transformer")
def t5_decoder(size, batch):
    """T5 v1.1-style decoder blocks (RMSNorm, relative position buckets via Log/Where/Min, causal self-attention,
    cross-attention with an encoder mask, gated GELU FF; 2 blocks of t5-base width, 128x128 tokens)."""
    if size == "full":
        mod, tq, tk, d = T5Decoder(), 128, 128, 768
    else:
        mod, tq, tk, d = T5Decoder(d=128, heads=4, dkv=32, ff=256, layers=2), 8, 12, 128
    return Built(mod, [In("hidden", (batch, tq, d)), In("encoder_hidden", (batch, tk, d)),
                       In("encoder_attention_mask", (batch, tk), "int64", "mask", 0, 2)], [Out("output")])


class DistilBertLayer(nn.Module):
    def __init__(self, h, heads, inter):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.q, self.k, self.v, self.o = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.sa_ln, self.out_ln = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
        self.lin1, self.lin2 = nn.Linear(h, inter), nn.Linear(inter, h)

    def forward(self, x, mask):
        b, s, h = x.shape
        shape = lambda t: t.view(b, -1, self.heads, self.d).transpose(1, 2)   # noqa: E731
        q = shape(self.q(x)) / math.sqrt(self.d)
        scores = torch.matmul(q, shape(self.k(x)).transpose(2, 3))
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        ctx = torch.matmul(F.softmax(scores, dim=-1), shape(self.v(x))).transpose(1, 2).contiguous().view(b, -1, h)
        x = self.sa_ln(self.o(ctx) + x)
        return self.out_ln(self.lin2(F.gelu(self.lin1(x))) + x)


class DistilBert(nn.Module):
    def __init__(self, vocab=30522, h=768, layers=6, heads=12, inter=3072, max_pos=512, labels=2):
        super().__init__()
        self.word, self.pos = nn.Embedding(vocab, h), nn.Embedding(max_pos, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.layers = nn.ModuleList(DistilBertLayer(h, heads, inter) for _ in range(layers))
        self.pre_classifier, self.classifier = nn.Linear(h, h), nn.Linear(h, labels)

    def forward(self, input_ids, attention_mask):
        s = input_ids.size(1)
        pos = torch.arange(s, dtype=torch.long, device=input_ids.device).unsqueeze(0).expand_as(input_ids)
        x = self.ln(self.word(input_ids) + self.pos(pos))
        mask = (attention_mask == 0).view(attention_mask.size(0), 1, 1, s)
        for layer in self.layers:
            x = layer(x, mask)
        return x, self.classifier(F.relu(self.pre_classifier(x[:, 0])))


@register("distilbert", "transformer")
def distilbert(size, batch):
    """DistilBERT (6 layers, masked_fill with finfo.min -> Where, sequence-classification head; seq 128)."""
    outs = [Out("last_hidden_state"), Out("logits")]
    if size == "full":
        return Built(DistilBert(), _tok_inputs(batch, 128, 30522, types=False), outs)
    return Built(DistilBert(vocab=1000, h=128, layers=2, heads=2, inter=512, max_pos=64),
                 _tok_inputs(batch, 16, 1000, types=False), outs)


# ----------------------------------------------------------------------------------------------
# Audio / sequence
# ----------------------------------------------------------------------------------------------


def conv1d_bn(cin, cout, k, s=1, d=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv1d(cin, cout, k, s, (k - 1) // 2 * d, dilation=d, bias=False), nn.BatchNorm1d(cout), act())


class Conv1dStack(nn.Module):
    def __init__(self, mels=80, ch=256, classes=35):
        super().__init__()
        self.net = nn.Sequential(conv1d_bn(mels, ch, 5), conv1d_bn(ch, ch, 3, 2), conv1d_bn(ch, ch, 5),
                                 conv1d_bn(ch, ch, 3, 2), conv1d_bn(ch, ch, 5), conv1d_bn(ch, ch, 3, 2),
                                 conv1d_bn(ch, ch, 3))
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool1d(self.net(x), 1).squeeze(-1))


@register("conv1d_stack", "sequence")
def conv1d_stack(size, batch):
    """1-D conv stack over log-mel frames (k3/k5, strides 2, BatchNorm1d, global avg pool; 80x1000)."""
    return Built(Conv1dStack(), [In("features", (batch, 80, 64 if size == "small" else 1000))], logits())


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, d):
        super().__init__()
        self.chomp = (k - 1) * d
        self.conv1 = nn.Conv1d(cin, cout, k, padding=self.chomp, dilation=d)
        self.conv2 = nn.Conv1d(cout, cout, k, padding=self.chomp, dilation=d)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        y = F.relu(self.conv1(x)[:, :, :-self.chomp].contiguous())
        y = F.relu(self.conv2(y)[:, :, :-self.chomp].contiguous())
        return F.relu(y + self.down(x))


class TCN(nn.Module):
    def __init__(self, cin=64, ch=128, levels=6, k=3, classes=10):
        super().__init__()
        self.net = nn.Sequential(*[TemporalBlock(cin if i == 0 else ch, ch, k, 2 ** i) for i in range(levels)])
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        y = self.net(x)
        return self.fc(y[:, :, -1]), y


@register("tcn", "sequence")
def tcn(size, batch):
    """Temporal convolutional network (causal dilated Conv1d 1..32, chomp slices, residual 1x1)."""
    return Built(TCN(), [In("sequence", (batch, 64, 64 if size == "small" else 1000))], [Out("logits"), Out("features")])


class ConvGRU(nn.Module):
    def __init__(self, mels=40, ch=128, hidden=256, classes=29):
        super().__init__()
        self.conv = nn.Sequential(conv1d_bn(mels, ch, 5, 2), conv1d_bn(ch, ch, 3))
        self.gru = nn.GRU(ch, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        y, _ = self.gru(self.conv(x).transpose(1, 2))
        return self.fc(y).log_softmax(-1)


@register("conv1d_gru", "sequence")
def conv1d_gru(size, batch):
    """Conv1d front-end + 2-layer GRU + linear, log-softmax (ASR-style; 40x400)."""
    return Built(ConvGRU(), [In("features", (batch, 40, 32 if size == "small" else 400))], [Out("log_probs")])


class StreamingLSTM(nn.Module):
    def __init__(self, feat, hidden, layers, out):
        super().__init__()
        self.lstm = nn.LSTM(feat, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, out)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return self.fc(y), h, c


class StreamingGRU(nn.Module):
    def __init__(self, feat, hidden, layers, out):
        super().__init__()
        self.gru = nn.GRU(feat, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, out)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return torch.sigmoid(self.fc(y)), h


@register("lstm_streaming", "sequence")
def lstm_streaming(size, batch):
    """Stateful streaming 2-layer LSTM: chunk + (h, c) in, output + (h, c) out (32 frames x 80, hidden 512)."""
    t, f, h, o = (8, 16, 32, 16) if size == "small" else (32, 80, 512, 256)
    return Built(StreamingLSTM(f, h, 2, o),
                 [In("x", (batch, t, f)), In("h0", (2, batch, h), batch_axis=1), In("c0", (2, batch, h), batch_axis=1)],
                 [Out("y"), Out("hn", 1), Out("cn", 1)])


@register("gru_streaming", "sequence")
def gru_streaming(size, batch):
    """Stateful streaming 2-layer GRU (noise-suppression style): chunk + h in, mask + h out (hidden 256)."""
    t, f, h, o = (8, 16, 32, 16) if size == "small" else (32, 80, 256, 257)
    return Built(StreamingGRU(f, h, 2, o), [In("x", (batch, t, f)), In("h0", (2, batch, h), batch_axis=1)],
                 [Out("mask"), Out("hn", 1)])


class RankCond(nn.Module):
    """Scripted forward with rank-dependent control flow: the input (B, 1, F, T) is squeezed (all
    unit dims), so at batch 1 it has rank 2 and gets its batch dim back. With a dynamic batch the
    rank is unknown at export time and the exporter keeps an ONNX If; with a static batch it folds."""

    def __init__(self, feat=40, ch=64, classes=12):
        super().__init__()
        self.net = nn.Sequential(conv1d_bn(feat, ch, 3), conv1d_bn(ch, ch, 3, 2))
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        x = x.squeeze()
        if x.dim() == 2:
            x = x.unsqueeze(0)
        return self.fc(self.net(x).mean(-1))


@register("rank_cond", "sequence")
def rank_cond(size, batch):
    """TorchScript-scripted model with `if x.dim() == 2: x = x.unsqueeze(0)` (ONNX If in the dynamic variant)."""
    return Built(RankCond(), [In("features", (batch, 1, 40, 32 if size == "small" else 400))], logits(), script=True)


class CRNN(nn.Module):
    def __init__(self, classes=37, nh=256):
        super().__init__()
        def c(cin, cout, k=3, p=1, bn=False):
            return [nn.Conv2d(cin, cout, k, 1, p)] + ([nn.BatchNorm2d(cout)] if bn else []) + [nn.ReLU()]
        self.cnn = nn.Sequential(*c(1, 64), nn.MaxPool2d(2, 2), *c(64, 128), nn.MaxPool2d(2, 2), *c(128, 256, bn=True),
                                 *c(256, 256), nn.MaxPool2d((2, 2), (2, 1), (0, 1)), *c(256, 512, bn=True), *c(512, 512),
                                 nn.MaxPool2d((2, 2), (2, 1), (0, 1)), *c(512, 512, 2, 0, bn=True))
        self.rnn1 = nn.LSTM(512, nh, bidirectional=True)
        self.emb1 = nn.Linear(2 * nh, nh)
        self.rnn2 = nn.LSTM(nh, nh, bidirectional=True)
        self.emb2 = nn.Linear(2 * nh, classes)

    def forward(self, x):
        y = self.cnn(x).squeeze(2).permute(2, 0, 1)     # (T, B, C)
        y, _ = self.rnn1(y)
        y, _ = self.rnn2(self.emb1(y))
        return self.emb2(y)


@register("crnn", "sequence")
def crnn(size, batch):
    """CRNN OCR (VGG-style convs, (2,1) pools, BiLSTM x2 + linear; T-major output; 32x100 text line)."""
    return Built(CRNN(), [In("image", (batch, 1, 32, 32 if size == "small" else 100))], [Out("logits", 1)])


class Wav2VecFeatureEncoder(nn.Module):
    def __init__(self, conv=((512, 10, 5),) + ((512, 3, 2),) * 4 + ((512, 2, 2),) * 2, dim=768):
        super().__init__()
        layers, cin = [], 1
        for i, (c, k, s) in enumerate(conv):
            layers += [nn.Conv1d(cin, c, k, s, bias=False)]
            if i == 0:
                layers.append(nn.GroupNorm(c, c))
            layers.append(nn.GELU())
            cin = c
        self.conv = nn.Sequential(*layers)
        self.ln = nn.LayerNorm(cin)
        self.proj = nn.Linear(cin, dim)
        self.pos_conv = nn.Conv1d(dim, dim, 128, padding=64, groups=16)
        self.enc_ln = nn.LayerNorm(dim)

    def forward(self, audio):
        x = self.conv(audio.unsqueeze(1)).transpose(1, 2)
        x = self.proj(self.ln(x))
        p = self.pos_conv(x.transpose(1, 2))[:, :, :-1]
        return self.enc_ln(x + F.gelu(p).transpose(1, 2))


@register("wav2vec2_feature_encoder", "sequence")
def wav2vec2_feature_encoder(size, batch):
    """wav2vec 2.0 base feature encoder (7 strided Conv1d, GroupNorm, GELU, projection, grouped k128 positional conv; 1 s at 16 kHz)."""
    return Built(Wav2VecFeatureEncoder(), [In("audio", (batch, 1600 if size == "small" else 16000))],
                 [Out("features")])


class ConformerBlock(nn.Module):
    def __init__(self, d, heads, k=31):
        super().__init__()
        def ff():
            return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ff1, self.ff2 = ff(), ff()
        self.ln_att = nn.LayerNorm(d)
        self.att = Attention(d, heads)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ln_out = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        x = x + self.att(self.ln_att(x))
        c = F.glu(self.pw1(self.ln_conv(x).transpose(1, 2)), dim=1)
        c = self.pw2(F.silu(self.bn(self.dw(c))))
        x = x + c.transpose(1, 2)
        return self.ln_out(x + 0.5 * self.ff2(x))


class Conformer(nn.Module):
    def __init__(self, mels=80, d=144, heads=4, layers=16, vocab=128):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        f = ((mels - 1) // 2 - 1) // 2
        self.proj = nn.Linear(d * f, d)
        self.blocks = nn.Sequential(*[ConformerBlock(d, heads) for _ in range(layers)])
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        y = self.sub(x.unsqueeze(1))                    # (B, d, T', F')
        b, c, t, f = y.shape
        y = self.proj(y.transpose(1, 2).reshape(b, t, c * f))
        return self.out(self.blocks(y))


@register("conformer_s", "sequence")
def conformer_s(size, batch):
    """Conformer-S encoder (conv subsampling, macaron FF with SiLU, MHSA, GLU + depthwise Conv1d k31 + BN;
    16 blocks of 144, 4 s of 80-mel frames; small: 2 blocks)."""
    t, layers = (32, 2) if size == "small" else (400, 16)
    return Built(Conformer(layers=layers), [In("features", (batch, t, 80))], logits())
