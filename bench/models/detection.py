#!/usr/bin/env python3
"""torchvision's detection models as ONNX, exported the documented way.

Each model is built with random weights from a fixed seed (weights=None,
weights_backbone=None; BatchNorm statistics calibrated on the image,
`calibrate_norms`, and the classification layers re-drawn so that their
logits have unit spread, `spread_scores`), at a small input size, with its score threshold at
0 so that boxes survive non-maximum suppression, put in eval mode and
exported with the TorchScript exporter (`torch.onnx.export(...,
dynamo=False)`) at opset 17, the image's height and width symbolic. The
graph input is "image" [3, H, W] (torchvision's list of images, one of
them); the outputs are torchvision's: boxes [K, 4], labels [K], scores [K]
(and masks [K, 1, H, W] for Mask R-CNN; `output_names` gives each model's
order), K known only when the model runs.

    python3 bench/models/detection.py --out DIR [--models NAME ...]
        [--sizes 256x320 320x256]

writes DIR/NAME.onnx and, per size, DIR/NAME_HxW_image.npy (a seeded image
in [0, 1]). Needs torch and torchvision (/work/venv-zoo). The .onnx files
are tens of MB: keep them out of git. bench/detection_check.py runs them on
sluice and onnxruntime and compares the outputs.
"""
import argparse
import os
import sys

import numpy as np

OPSET = 17
SEED = 20261205

# name -> (torchvision builder, keyword arguments). Every score threshold
# is 0 so that the boxes NMS keeps reach the outputs; sizes are small so
# that the CPU runs each model in about a second.
MODELS = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        "fasterrcnn_mobilenet_v3_large_320_fpn",
        dict(box_score_thresh=0.0, min_size=256, max_size=320)),
    "ssdlite320_mobilenet_v3_large": (
        "ssdlite320_mobilenet_v3_large", dict(score_thresh=0.0)),
    "retinanet_resnet50_fpn": (
        "retinanet_resnet50_fpn",
        dict(score_thresh=0.0, min_size=256, max_size=320)),
    # FCOS's head has GroupNorm, which the exporter writes as
    # InstanceNormalization on a reshaped tensor.
    "fcos_resnet50_fpn": (
        "fcos_resnet50_fpn",
        dict(score_thresh=0.0, min_size=256, max_size=320)),
    "maskrcnn_resnet50_fpn": (
        "maskrcnn_resnet50_fpn",
        dict(box_score_thresh=0.0, min_size=256, max_size=320)),
}


def output_names(name):
    """The outputs in the order of torchvision's result dict, which the
    exporter keeps: R-CNNs say boxes, labels, scores (then masks);
    RetinaNet, FCOS and SSD say boxes, scores, labels."""
    if "rcnn" not in name:
        return ["boxes", "scores", "labels"]
    names = ["boxes", "labels", "scores"]
    if name.startswith("maskrcnn"):
        names.append("masks")
    return names


def calibrate_norms(model, x):
    """Sets every BatchNorm's running mean and variance to the statistics of
    its input on image `x` and three more of its size (one pass of the
    backbone in training mode, as a batch: SSD's last maps are 1x1).

    With random weights and the initial statistics (mean 0, variance 1)
    the activations of MobileNetV3's backbone shrink layer by layer to
    about 1e-9, so every box of Faster R-CNN's head sees the same features;
    calibrated, each layer's output has unit scale, as in a trained model."""
    import torch
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: this pass's statistics
        m.train()
    with torch.no_grad():
        batch = [x] + [torch.from_numpy(image(*x.shape[1:], seed=SEED + i))
                       for i in (1, 2, 3)]
        model.backbone(model.transform(batch)[0].tensors)
    for m in norms:
        m.eval()


def spread_scores(model, x):
    """Re-draws the classification layers (cls_logits, cls_score), seeded,
    and scales each so that its logits on image `x` have unit standard
    deviation.

    torchvision initialises them at std 0.01 for training from scratch, so
    that with random weights every anchor and box scores the same to within
    a few float32 ulps (Faster R-CNN's 100 detections all scored 0.0115125)
    and which boxes survive top-k and NMS is decided by rounding. Scores
    spread over (0, 1) make the comparison say something. Box regression is
    left as initialised (small deltas: boxes near their anchors)."""
    import torch
    gen = torch.Generator().manual_seed(SEED + 1)
    layers = [m for q, m in model.named_modules()
              if q.rsplit(".", 1)[-1] in ("cls_logits", "cls_score")]
    for m in layers:
        with torch.no_grad():
            m.weight.copy_(torch.randn(m.weight.shape, generator=gen))
    # The logits' spread without the bias, measured on the image; twice,
    # since the second stage sees the proposals the first one picks.
    for _ in range(2):
        spread = {}

        def hook(module, inputs, output):
            w_only = output - (module.bias.view(1, -1, *[1] * (output.dim() - 2))
                               if module.bias is not None else 0)
            spread[module] = max(spread.get(module, 0.0),
                                 float(w_only.std()))

        handles = [m.register_forward_hook(hook) for m in layers]
        with torch.no_grad():
            model([x])
        for h in handles:
            h.remove()
        for m in layers:
            if spread.get(m, 0.0) > 0:
                with torch.no_grad():
                    m.weight.mul_(1.0 / spread[m])


def build(name):
    import torch
    import torchvision
    torch.manual_seed(SEED)
    builder, kwargs = MODELS[name]
    model = getattr(torchvision.models.detection, builder)(
        weights=None, weights_backbone=None, **kwargs)
    model.eval()
    x = torch.from_numpy(image(256, 320))
    calibrate_norms(model, x)
    spread_scores(model, x)
    return model


def image(height, width, seed=SEED):
    rng = np.random.default_rng(seed + height * 1000 + width)
    return rng.random((3, height, width), dtype=np.float32)


def export(name, path, height, width):
    import torch
    model = build(name)
    x = torch.from_numpy(image(height, width))
    outs = output_names(name)
    dynamic = {"image": {1: "height", 2: "width"}}
    for o in outs:
        dynamic[o] = {0: "detections"}
    with torch.no_grad():
        torch.onnx.export(model, ([x],), path, opset_version=OPSET,
                          input_names=["image"], output_names=outs,
                          dynamic_axes=dynamic, dynamo=False)


def parse_size(text):
    h, w = text.split("x")
    return int(h), int(w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--sizes", nargs="*", default=["256x320", "320x256"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [parse_size(s) for s in args.sizes]
    for name in args.models:
        if name not in MODELS:
            sys.exit(f"unknown model {name}; known: {', '.join(MODELS)}")
        path = os.path.join(args.out, name + ".onnx")
        export(name, path, *sizes[0])
        for h, w in sizes:
            np.save(os.path.join(args.out, f"{name}_{h}x{w}_image.npy"),
                    image(h, w))
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
