#!/usr/bin/env python3
"""Writes the benchmark models as ONNX files (random weights, nothing downloaded).

    .venv/bin/python bench/models/make_models.py OUT_DIR     # or with `. .venv/bin/activate`

resnet18 and mobilenet_v2 at batch 1, 224x224; a TransformerEncoderLayer (d_model 256, 4 heads,
sequence 128, batch 1); a 3-layer 1024-wide MLP at batch 64. Each model gets a sample input
(<name>.input.npy) and PyTorch's output for it (<name>.torch.npy).

ResNet-18 and MobileNetV2 are written out here as plain torch.nn modules with the published
architectures (He et al. 2015; Sandler et al. 2018), so only torch is needed. Import this file to
get them: `from make_models import resnet18, mobilenet_v2` with bench/models on sys.path.
"""
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn


def _conv_bn(cin, cout, kernel, stride=1, groups=1, act=None):
    """Conv (no bias, 'same'-style padding) + BatchNorm, then `act` if given."""
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act) if act is not None else nn.Sequential(*layers)


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a residual; a strided 1x1 conv + BN projects the skip."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(cin, cout, 3, stride, act=nn.ReLU()), _conv_bn(cout, cout, 3))
        self.skip = _conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.skip(x))


class ResNet18(nn.Module):
    """7x7/2 stem, 3x3/2 max pool, four stages of two BasicBlocks (64, 128, 256, 512 channels; the
    last three start with stride 2), global average pool, 1000-way linear classifier."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 64, 7, 2, act=nn.ReLU()), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion (skipped when the factor is 1), 3x3 depthwise, both with
    ReLU6, then a linear 1x1 projection; a residual when the shape is kept."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [_conv_bn(cin, hidden, 1, act=nn.ReLU6())] if expand != 1 else []
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6()), _conv_bn(hidden, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """Width 1.0: a 3x3/2 stem to 32 channels, 17 inverted residual blocks, a 1x1 conv to 1280,
    global average pool, dropout 0.2 and a 1000-way linear classifier."""

    # (expansion t, output channels c, repeats n, stride of the first repeat s)
    STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, num_classes=1000):
        super().__init__()
        layers, cin = [_conv_bn(3, 32, 3, 2, act=nn.ReLU6())], 32
        for t, c, n, s in self.STAGES:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_conv_bn(cin, 1280, 1, act=nn.ReLU6()))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def _randomize(model):
    """He-normal convolutions and random batch-norm statistics, so that folding BN is exercised
    (identity BN would hide a wrong fold); draws from torch's global generator."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.0)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def resnet18():
    """ResNet-18 in eval mode with random weights (seed torch first for repeatable ones)."""
    return _randomize(ResNet18())


def mobilenet_v2():
    """MobileNetV2 in eval mode with random weights (seed torch first for repeatable ones)."""
    return _randomize(MobileNetV2())


class EncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer(d_model, nhead) called with the input alone: traced directly,
    the exporter turns its `is_causal=False` default into a tensor, which attention rejects."""

    def __init__(self, d_model=256, nhead=4):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead)

    def forward(self, x):
        return self.layer(x)


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024))


def main(out):
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore", "You are using the legacy TorchScript-based ONNX export", DeprecationWarning)
    torch.manual_seed(0)
    models = {
        "resnet18": (resnet18(), torch.randn(1, 3, 224, 224)),
        "mobilenet_v2": (mobilenet_v2(), torch.randn(1, 3, 224, 224)),
        # Sequence-first layout: batch_first=True would take PyTorch's fused fast path, which has
        # no ONNX export.
        "transformer": (EncoderLayer(256, 4), torch.randn(128, 1, 256)),
        "mlp": (mlp(), torch.randn(64, 1024)),
    }
    for name, (model, x) in models.items():
        model.eval()
        path = os.path.join(out, name + ".onnx")
        # dynamo=False: the TorchScript exporter (torch 2.13's default one needs onnxscript). Opset
        # 14 is the first with an export of attention's scaled_dot_product_attention.
        torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"], opset_version=14,
                          do_constant_folding=True, dynamo=False)
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        np.save(os.path.join(out, name + ".torch.npy"), y.numpy())
        print(f"{path}: input {tuple(x.shape)} -> output {tuple(y.shape)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/models/out")
