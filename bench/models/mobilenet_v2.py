#!/usr/bin/env python3
"""torchvision's MobileNetV2 as ONNX, built with onnx.helper, no PyTorch.

The graph is what torchvision's `mobilenet_v2()` exports to at opset 17
without constant folding: a 3x3 stride-2 Conv (bias=False) +
BatchNormalization + ReLU6 stem, 17 inverted residual blocks (a 1x1
expansion Conv + BN + ReLU6 where the expansion t is not 1, a depthwise 3x3
Conv with group = channels and the block's stride + BN + ReLU6, a 1x1
projection Conv + BN with no activation, and Add of the block's input where
the stride is 1 and the channels match), a 1x1 Conv to 1,280 + BN + ReLU6,
GlobalAveragePool, Flatten and Gemm to 1,000 classes (Dropout is gone in
eval mode). ReLU6 is Clip with min 0 and max 6 given as inputs (scalar
initializers), as opset 11 and later export it. Weights are random from a
fixed seed, at He scale for the convolutions, and BatchNormalization has
random scale, bias, mean and variance.

The stress, next to ResNet-50: 17 depthwise convolutions (group = 16 to 960
channels, one 3x3 filter per channel), 1x1 convolutions that are most of
the FLOPs, and an activation (Clip) that the Conv + bias + Relu fusion does
not take.

    python3 bench/models/mobilenet_v2.py --out DIR [--batch 1] [--check]

writes DIR/mobilenet_v2_b{B}.onnx (input "x" [B,3,224,224], output "y"
[B,1000]) and DIR/mobilenet_v2_b{B}_x.npy (a seeded input); --check runs
onnx.checker and onnxruntime on it. bench/cpu_peers.py and bench/peers.py
import `write`.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet50 import (EPS, _Builder, check, classifier_model,  # noqa: E402
                      cli_main, write_model)

NAME = "mobilenet_v2"
# torchvision's inverted_residual_setting: expansion t, channels c,
# blocks n, stride s of the first block.
SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
           (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
STEM = 32
LAST = 1280


class _MobileNetBuilder(_Builder):
    def __init__(self, seed):
        super().__init__(seed)
        # ReLU6's bounds, shared by every Clip (the exporter writes them as
        # constants; here they are scalar initializers).
        self.clip_min = self.init("relu6.min", np.array(0.0))
        self.clip_max = self.init("relu6.max", np.array(6.0))

    def conv_bn_act(self, x, cin, cout, k, stride, relu6, group=1):
        """Conv (no bias, group) + BatchNormalization (+ ReLU6 as Clip)."""
        fan_in = (cin // group) * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * \
            np.sqrt(2.0 / fan_in)
        conv = self.name("conv")
        y = self.node("Conv", [x, self.init(conv + ".w", w)],
                      kernel_shape=[k, k], strides=[stride, stride],
                      pads=[(k - 1) // 2] * 4, dilations=[1, 1], group=group)
        bn = self.name("bn")
        params = [
            self.init(bn + ".scale", self.rng.uniform(0.5, 1.0, cout)),
            self.init(bn + ".bias", self.rng.uniform(-0.1, 0.1, cout)),
            self.init(bn + ".mean", self.rng.uniform(-0.1, 0.1, cout)),
            self.init(bn + ".var", self.rng.uniform(0.5, 1.5, cout)),
        ]
        y = self.node("BatchNormalization", [y] + params, epsilon=EPS,
                      momentum=0.9)
        if relu6:
            y = self.node("Clip", [y, self.clip_min, self.clip_max])
        return y

    def inverted_residual(self, x, cin, cout, stride, t):
        hidden = cin * t
        y = x
        if t != 1:
            y = self.conv_bn_act(y, cin, hidden, 1, 1, True)
        y = self.conv_bn_act(y, hidden, hidden, 3, stride, True, group=hidden)
        y = self.conv_bn_act(y, hidden, cout, 1, 1, False)
        if stride == 1 and cin == cout:
            y = self.node("Add", [x, y])
        return y


def build(batch=1, seed=0):
    """The MobileNetV2 ModelProto for a fixed batch."""
    b = _MobileNetBuilder(seed)
    y = b.conv_bn_act("x", 3, STEM, 3, 2, True)
    cin = STEM
    for t, c, n, s in SETTING:
        for i in range(n):
            y = b.inverted_residual(y, cin, c, s if i == 0 else 1, t)
            cin = c
    y = b.conv_bn_act(y, cin, LAST, 1, 1, True)
    return classifier_model(b, y, LAST, NAME, batch)


def write(out_dir, batch=1, seed=0):
    """Writes the model and a seeded input; returns {"onnx": ..., "x": ...}."""
    return write_model(build, NAME, out_dir, batch, seed)

def main():
    return cli_main(__doc__, write)

if __name__ == "__main__":
    sys.exit(main())
