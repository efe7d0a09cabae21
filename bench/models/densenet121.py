#!/usr/bin/env python3
"""torchvision's DenseNet-121 as ONNX, built with onnx.helper, no PyTorch.

The graph is what torchvision's `densenet121()` exports to at opset 17
without constant folding (memory_efficient=False, eval mode): a 7x7 stride-2
Conv (bias=False) + BatchNormalization + Relu stem and a 3x3 stride-2
MaxPool; four dense blocks of 6, 12, 24 and 16 layers with growth rate 32
and bn_size 4, each layer being Concat (along channels, of the block's input
and every earlier layer's output, as torch.cat in `bn_function` exports it:
a Concat with one input for a block's first layer) + BN + Relu + 1x1 Conv to
128 channels + BN + Relu + 3x3 Conv to 32 channels, and a Concat of all of
them at the end of the block; transitions of BN + Relu + 1x1 Conv halving
the channels + AveragePool 2x2 stride 2; a final BN + Relu,
GlobalAveragePool, Flatten and Gemm to 1,000 classes. Weights are random
from a fixed seed, at He scale for the convolutions, and BatchNormalization
has random scale, bias, mean and variance.

The stress, next to ResNet-50: 62 Concat nodes (up to 25 inputs, 1,024
channels) whose outputs are read once by a pre-activation
BatchNormalization (BN before the Conv, so it does not fold into the
Conv's weights), many small 1x1 and 3x3 convolutions, and AveragePool.

    python3 bench/models/densenet121.py --out DIR [--batch 1] [--check]

writes DIR/densenet121_b{B}.onnx (input "x" [B,3,224,224], output "y"
[B,1000]) and DIR/densenet121_b{B}_x.npy (a seeded input); --check runs
onnx.checker and onnxruntime on it. bench/cpu_peers.py and bench/peers.py
import `write`.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet50 import (EPS, _Builder, check, classifier_model,  # noqa: E402
                      cli_main, write_model)

NAME = "densenet121"
BLOCKS = (6, 12, 24, 16)   # dense layers per block
GROWTH = 32
BN_SIZE = 4
STEM = 64


class _DenseNetBuilder(_Builder):
    def bn(self, x, c, relu=True):
        """BatchNormalization (+ Relu)."""
        bn = self.name("bn")
        params = [
            self.init(bn + ".scale", self.rng.uniform(0.5, 1.0, c)),
            self.init(bn + ".bias", self.rng.uniform(-0.1, 0.1, c)),
            self.init(bn + ".mean", self.rng.uniform(-0.1, 0.1, c)),
            self.init(bn + ".var", self.rng.uniform(0.5, 1.5, c)),
        ]
        y = self.node("BatchNormalization", [x] + params, epsilon=EPS,
                      momentum=0.9)
        return self.node("Relu", [y]) if relu else y

    def conv(self, x, cin, cout, k, stride=1):
        """Conv, bias=False."""
        w = self.rng.standard_normal((cout, cin, k, k)) * \
            np.sqrt(2.0 / (cin * k * k))
        conv = self.name("conv")
        return self.node("Conv", [x, self.init(conv + ".w", w)],
                         kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2] * 4, dilations=[1, 1], group=1)

    def dense_layer(self, features, cin):
        """One _DenseLayer on the list of earlier features (cin channels in
        all); returns its GROWTH new channels."""
        y = self.node("Concat", list(features), axis=1)
        y = self.conv(self.bn(y, cin), cin, BN_SIZE * GROWTH, 1)
        return self.conv(self.bn(y, BN_SIZE * GROWTH), BN_SIZE * GROWTH,
                         GROWTH, 3)

    def dense_block(self, x, cin, layers):
        features = [x]
        for i in range(layers):
            features.append(self.dense_layer(features, cin + i * GROWTH))
        return self.node("Concat", features, axis=1), cin + layers * GROWTH

    def transition(self, x, cin):
        cout = cin // 2
        y = self.conv(self.bn(x, cin), cin, cout, 1)
        y = self.node("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2],
                      pads=[0, 0, 0, 0], ceil_mode=0, count_include_pad=1)
        return y, cout


def build(batch=1, seed=0):
    """The DenseNet-121 ModelProto for a fixed batch."""
    b = _DenseNetBuilder(seed)
    y = b.bn(b.conv("x", 3, STEM, 7, 2), STEM)
    y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    c = STEM
    for i, layers in enumerate(BLOCKS):
        y, c = b.dense_block(y, c, layers)
        if i != len(BLOCKS) - 1:
            y, c = b.transition(y, c)
    y = b.bn(y, c)
    return classifier_model(b, y, c, NAME, batch)


def write(out_dir, batch=1, seed=0):
    """Writes the model and a seeded input; returns {"onnx": ..., "x": ...}."""
    return write_model(build, NAME, out_dir, batch, seed)

def main():
    return cli_main(__doc__, write)

if __name__ == "__main__":
    sys.exit(main())
