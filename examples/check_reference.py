#!/usr/bin/env python3
"""Checks reference.py's expected outputs against each model written out by
hand as direct NumPy formulas (per-head loops, a naive convolution), so that
a mistake in reference.py's generic graph evaluation cannot go unnoticed.

    .venv/bin/python examples/check_reference.py    # exits 1 on a mismatch

make_examples.py runs it after writing the expected outputs.
"""

import math
import os
import sys

import numpy as np

from reference import load_graph_def, tensor_from_proto

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-5  # the expected files are float64 results rounded to float32


def consts(model):
    path = os.path.join(HERE, model)
    return {n.name: tensor_from_proto(n.attr["value"].tensor, HERE).astype(np.float64)
            for n in load_graph_def(path).node if n.op == "Const"}


def load(name):
    return np.load(os.path.join(HERE, name)).astype(np.float64)


def softmax_rows(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mlp():
    c, x = consts("mlp.pbtxt"), load("mlp_input.npy")
    logits = np.maximum(x @ c["fc1/w"] + c["fc1/b"], 0) @ c["fc2/w"] + c["fc2/b"]
    return {"mlp_logits_expected.npy": logits,
            "mlp_probs_expected.npy": softmax_rows(logits)}


def transformer_block():
    c, x = consts("transformer_block.pb"), load("transformer_block_input.npy")[0]
    eps = float(np.float32(1e-5))

    def layer_norm(v, prefix):
        mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
        return (v - mean) / np.sqrt(var + eps) * c[prefix + "/scale"] + c[prefix + "/bias"]

    def linear(v, prefix):
        return v @ c[prefix + "/w"] + c[prefix + "/b"]

    a = layer_norm(x, "attn/ln")
    q, k, v = linear(a, "attn/q"), linear(a, "attn/k"), linear(a, "attn/v")
    heads = []
    for h in range(4):
        cols = slice(64 * h, 64 * (h + 1))
        weights = softmax_rows(q[:, cols] @ k[:, cols].T / math.sqrt(64))
        heads.append(weights @ v[:, cols])
    r = x + linear(np.concatenate(heads, axis=1), "attn/out")
    f = linear(layer_norm(r, "mlp/ln"), "mlp/fc1")
    f = 0.5 * f * (1 + np.vectorize(math.erf)(f / math.sqrt(2)))
    return {"transformer_block_expected.npy": (r + linear(f, "mlp/fc2"))[None]}


def cnn():
    c, x = consts("cnn.pb"), load("cnn_input.npy")[0]

    def conv_relu(v, prefix):  # 3x3, padding 1, stride 1, by loops
        w, b = c[prefix + "/w"], c[prefix + "/b"].ravel()
        channels, height, width = v.shape
        vp = np.pad(v, ((0, 0), (1, 1), (1, 1)))
        out = np.zeros((w.shape[0], height, width))
        for o in range(w.shape[0]):
            for i in range(height):
                for j in range(width):
                    out[o, i, j] = np.sum(vp[:, i:i + 3, j:j + 3] * w[o]) + b[o]
        return np.maximum(out, 0)

    h = conv_relu(x, "conv1")
    h = h.reshape(8, 16, 2, 16, 2).max(axis=(2, 4))  # 2x2 max pooling
    h = conv_relu(h, "conv2").mean(axis=(1, 2))
    return {"cnn_expected.npy": (h @ c["fc/w"] + c["fc/b"])[None]}


def main():
    failed = False
    for model in (mlp, transformer_block, cnn):
        for name, want in model().items():
            diff = np.abs(load(name) - want).max()
            ok = diff <= TOLERANCE
            failed |= not ok
            print("%s %s: max abs diff %.3g" % ("ok  " if ok else "FAIL", name, diff))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
