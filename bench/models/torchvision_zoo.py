#!/usr/bin/env python3
"""torchvision's mobile and efficient CNNs as ONNX, exported by PyTorch.

Unlike the other scripts here, which build their graphs with onnx.helper,
this one exports the real torchvision modules the way users do: random
weights from a fixed seed (no download), eval mode, torch.onnx.export on
the TorchScript path (dynamo=False) at opset 17, batch 1, 224 x 224 (the
segmentation model too). What each model stresses on the CPU:

  mobilenet_v3_large, mobilenet_v3_small  depthwise 3x3 and 5x5, squeeze-
                      and-excitation (GlobalAveragePool, two 1x1 convs,
                      HardSigmoid, Mul), HardSwish; ~1,000 nodes for small
  efficientnet_b0     depthwise, SE with Sigmoid, SiLU (Sigmoid + Mul)
  deeplabv3_mobilenet_v3_large  the same backbone dilated, ASPP, Resize
  convnext_tiny       7x7 depthwise, LayerNorm over channels (Transpose,
                      ReduceMean...), MatMul MLP, Gelu
  regnet_y_400mf      grouped 3x3 convolutions, SE with ReLU and Sigmoid
  densenet121         62 Concat, pre-activation BatchNormalization
  shufflenet_v2_x1_0  channel shuffle (Reshape, Transpose, Reshape), Split
  squeezenet1_1       Concat of 1x1 and 3x3 branches, MaxPool ceil mode
  resnet50            the reference the other work must not slow down

    /work/venv-zoo/bin/python bench/models/torchvision_zoo.py --out DIR \\
        [--models mobilenet_v3_small ...] [--check]

writes DIR/<model>.onnx (input "x" [1,3,224,224], output "y"), DIR/<model>_x.npy
(a seeded input) and, with --check, compares onnxruntime's output with
PyTorch's. Needs torch, torchvision and onnx (onnxruntime for --check).
bench/cpu_zoo.py imports `write`. The .onnx files (up to 100 MB) stay out
of git.
"""
import argparse
import os
import sys

import numpy as np

MODELS = ["mobilenet_v3_large", "mobilenet_v3_small", "efficientnet_b0",
          "deeplabv3_mobilenet_v3_large", "convnext_tiny", "regnet_y_400mf",
          "densenet121", "shufflenet_v2_x1_0", "squeezenet1_1", "resnet50"]
SEED = 20261205


def _module(name):
    import torch
    import torchvision

    torch.manual_seed(SEED)
    if name.startswith("deeplabv3"):
        m = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, aux_loss=False)

        class Out(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]

        m = Out(m)
    else:
        m = getattr(torchvision.models, name)(weights=None)
    m.eval()
    # Random BatchNormalization statistics, so that folding them is tested
    # on values that are not the identity.
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                c = mod.num_features
                mod.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                mod.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                mod.weight.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                mod.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return m


def paths(out_dir, name):
    return {"onnx": os.path.join(out_dir, f"{name}.onnx"),
            "x": os.path.join(out_dir, f"{name}_x.npy")}


def write(out_dir, name, batch=1, force=False):
    """Exports `name` to out_dir once (kept if there); returns its paths."""
    import torch

    p = paths(out_dir, name)
    if os.path.exists(p["onnx"]) and os.path.exists(p["x"]) and not force:
        return p
    os.makedirs(out_dir, exist_ok=True)
    m = _module(name)
    x = torch.from_numpy(
        np.random.default_rng(SEED).standard_normal(
            (batch, 3, 224, 224)).astype(np.float32))
    with torch.no_grad():
        torch.onnx.export(m, (x,), p["onnx"], opset_version=17,
                          input_names=["x"], output_names=["y"],
                          do_constant_folding=True, dynamo=False)
        y = m(x).numpy()
    np.save(p["x"], x.numpy())
    np.save(os.path.join(out_dir, f"{name}_torch_y.npy"), y)
    return p


def check(out_dir, name):
    import onnxruntime as ort

    p = paths(out_dir, name)
    sess = ort.InferenceSession(p["onnx"], providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": np.load(p["x"])})[0]
    want = np.load(os.path.join(out_dir, f"{name}_torch_y.npy"))
    rel = float(np.linalg.norm(y - want) / max(np.linalg.norm(want), 1e-30))
    print(f"{name}: output {list(y.shape)}, onnxruntime vs PyTorch rel L2 "
          f"{rel:.2e}")
    return rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--force", action="store_true",
                    help="export again even where the file exists")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    for name in args.models:
        write(args.out, name, force=args.force)
        print(f"wrote {paths(args.out, name)['onnx']}")
        if args.check:
            check(args.out, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
