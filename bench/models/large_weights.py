#!/usr/bin/env python3
"""A generated ONNX model whose size is its weights, for load-cost figures.

No download and no PyTorch: the graph is built with onnx.helper. A ResNet-like
trunk of `--conv-blocks` blocks (3x3 Conv with bias [C,C,3,3] +
BatchNormalization + Relu + Add of the block's input) on a [1,C,8,8] input,
GlobalAveragePool and Flatten, then a chain of MatMul [D,D] + Add bias + Relu
layers that holds the rest of `--weights-mb`. The step is cheap (an 8x8 image,
a one-row MatMul chain), so session creation dominates what `sluice bench`
measures. Weights are seeded random at 1/sqrt(fan-in) scale.

    python3 bench/models/large_weights.py --out DIR --weights-mb 300 \
        [--external] [--channels 512] [--dim 4096] [--conv-blocks 8]

writes DIR/large_{N}mb[_ext].onnx (input "x" [1,C,8,8], output "y" [1,D]);
with --external every initializer of 1 KiB or more is ONNX external data in
DIR/large_{N}mb_ext.weights, each at a 4 KiB-aligned offset (so sluice maps
it in place). The weights file is written piece by piece: the script's own
peak memory stays near one layer, whatever --weights-mb is.
"""
import argparse
import os
import sys

import numpy as np

OPSET = 17
ALIGN = 4096


class _Writer:
    def __init__(self, seed, weights_file):
        from onnx import helper, numpy_helper, TensorProto
        self.helper, self.numpy_helper, self.TP = helper, numpy_helper, TensorProto
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0
        self.weights_file = weights_file      # None: inline raw_data
        self.stream = open(weights_file, "wb") if weights_file else None
        self.bytes = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def init(self, name, array):
        array = np.ascontiguousarray(array, dtype=np.float32)
        self.bytes += array.nbytes
        if self.stream is None or array.nbytes < 1024:
            self.inits.append(self.numpy_helper.from_array(array, name))
            return name
        pad = (-self.stream.tell()) % ALIGN
        self.stream.write(b"\0" * pad)
        offset = self.stream.tell()
        self.stream.write(array.tobytes())
        t = self.TP()
        t.name = name
        t.data_type = self.TP.FLOAT
        t.dims.extend(array.shape)
        t.data_location = self.TP.EXTERNAL
        for key, value in (("location", os.path.basename(self.weights_file)),
                           ("offset", str(offset)),
                           ("length", str(array.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.inits.append(t)
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out,
                                                **attrs))
        return out

    def random(self, shape, fan_in):
        return (self.rng.standard_normal(shape, dtype=np.float32) /
                np.float32(np.sqrt(fan_in)))


def build(weights_mb, external, channels, dim, conv_blocks, out_dir):
    from onnx import helper, TensorProto
    stem = f"large_{weights_mb}mb" + ("_ext" if external else "")
    path = os.path.join(out_dir, stem + ".onnx")
    w = _Writer(0, os.path.join(out_dir, stem + ".weights") if external
                else None)
    c, d = channels, dim
    x = "x"
    for _ in range(conv_blocks):
        conv = w.name("conv")
        y = w.node("Conv", [x, w.init(conv + ".w", w.random((c, c, 3, 3),
                                                             c * 9)),
                            w.init(conv + ".b", np.zeros(c))],
                   kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        bn = w.name("bn")
        y = w.node("BatchNormalization",
                   [y, w.init(bn + ".s", 1 + 0.1 * w.rng.standard_normal(c)),
                    w.init(bn + ".b", 0.1 * w.rng.standard_normal(c)),
                    w.init(bn + ".m", 0.1 * w.rng.standard_normal(c)),
                    w.init(bn + ".v", 1 + w.rng.random(c))],
                   epsilon=1e-5)
        y = w.node("Relu", [y])
        x = w.node("Add", [x, y])
    x = w.node("GlobalAveragePool", [x])
    x = w.node("Flatten", [x], axis=1)
    x = w.node("MatMul", [x, w.init("proj.w", w.random((c, d), c))])
    left = weights_mb * (1 << 20) - w.bytes
    layers = max(1, int(round(left / (d * d * 4))))
    for _ in range(layers):
        fc = w.name("fc")
        x = w.node("MatMul", [x, w.init(fc + ".w", w.random((d, d), d))])
        x = w.node("Add", [x, w.init(fc + ".b", np.zeros(d))])
        x = w.node("Relu", [x])
    w.nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        w.nodes, stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, d])],
        initializer=w.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="sluice bench/models/large_weights.py")
    model.ir_version = 8
    if w.stream is not None:
        w.stream.close()
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, w.bytes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--weights-mb", type=int, default=300)
    p.add_argument("--external", action="store_true")
    p.add_argument("--channels", type=int, default=512)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--conv-blocks", type=int, default=8)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    path, nbytes = build(a.weights_mb, a.external, a.channels, a.dim,
                         a.conv_blocks, a.out)
    print(f"wrote {path}: {nbytes / (1 << 20):.0f} MiB of weights")
    np.save(os.path.join(a.out, "large_x.npy"),
            np.random.default_rng(1).standard_normal(
                (1, a.channels, 8, 8)).astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
