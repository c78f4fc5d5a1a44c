#!/usr/bin/python3
"""Writes the benchmark models as ONNX files (random weights, nothing downloaded).

    /usr/bin/python3 bench/models/make_models.py OUT_DIR

resnet18 and mobilenet_v2 at batch 1, 224x224; a TransformerEncoderLayer (d_model 256, 4 heads,
sequence 128, batch 1); a 3-layer 1024-wide MLP at batch 64. Each model gets a sample input
(<name>.input.npy) and PyTorch's output for it (<name>.torch.npy).
"""
import os
import sys

import numpy as np
import torch
import torchvision


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024))


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "resnet18": (torchvision.models.resnet18(weights=None), torch.randn(1, 3, 224, 224)),
        "mobilenet_v2": (torchvision.models.mobilenet_v2(weights=None), torch.randn(1, 3, 224, 224)),
        # Sequence-first layout: batch_first=True would take PyTorch's fused fast path, which has
        # no ONNX export.
        "transformer": (torch.nn.TransformerEncoderLayer(d_model=256, nhead=4), torch.randn(128, 1, 256)),
        "mlp": (mlp(), torch.randn(64, 1024)),
    }
    for name, (model, x) in models.items():
        model.eval()
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"], opset_version=13,
                          do_constant_folding=True)
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        np.save(os.path.join(out, name + ".torch.npy"), y.numpy())
        print(f"{path}: input {tuple(x.shape)} -> output {tuple(y.shape)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/models/out")
