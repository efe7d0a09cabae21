#!/usr/bin/env python3
"""Writes the example models in examples/, their inputs, and (by running
examples/reference.py on them) their expected outputs, which
examples/check_reference.py then checks against hand-written formulas.

    .venv/bin/python examples/make_examples.py

Everything is drawn from fixed seeds, so a rerun rewrites the same bytes.
Models use only ops and attribute names from docs/ops.md:
  mlp.pbtxt              text form, weights inline as float_val
  transformer_block.pb   binary, weights in transformer_block.weights
  cnn.pb                 binary, weights inline as raw content
"""

import math
import os
import subprocess
import sys

import numpy as np

from sluice_pb import graph_pb2, types_pb2
from google.protobuf import text_format

HERE = os.path.dirname(os.path.abspath(__file__))
DT = types_pb2.DataType
DTYPES = {np.dtype(np.float32): DT.DT_FLOAT, np.dtype(np.int64): DT.DT_INT64,
          np.dtype(np.int32): DT.DT_INT32}
EXTERNAL_ALIGN = 64  # each external tensor starts on a 64-byte boundary


class Type:
    """Marks an attribute value as a DataType (a plain int would be `i`)."""

    def __init__(self, dtype):
        self.dtype = dtype


def _set_attr(a, value):
    if isinstance(value, Type):
        a.type = value.dtype
    elif isinstance(value, bool):
        a.b = value
    elif isinstance(value, int):
        a.i = value
    elif isinstance(value, float):
        a.f = value
    elif isinstance(value, str):
        a.s = value
    elif isinstance(value, (list, tuple)):
        a.list.SetInParent()  # an empty list is still a list
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            a.list.i.extend(value)
        elif all(isinstance(v, float) for v in value):
            a.list.f.extend(value)
        else:
            raise TypeError("unsupported list attribute %r" % (value,))
    else:
        raise TypeError("unsupported attribute %r" % (value,))


class GraphWriter:
    """Builds a GraphDef. `storage` picks how constants are written:
    "float_val" (readable text), "content" (raw bytes in the graph) or
    "external" (raw bytes in the weights file, for tensors of at least
    `external_min_bytes`; smaller ones go to content)."""

    def __init__(self, storage, weights_path=None, external_min_bytes=4096):
        self.graph = graph_pb2.GraphDef()
        self.storage = storage
        self.weights_path = weights_path
        self.weights = bytearray()
        self.external_min_bytes = external_min_bytes

    def node(self, op, name, inputs=(), **attrs):
        n = self.graph.node.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for key, value in attrs.items():
            _set_attr(n.attr[key], value)
        return name

    def input(self, name, shape, dtype=DT.DT_FLOAT):
        n = self.graph.node.add()
        n.name, n.op = name, "Input"
        n.attr["dtype"].type = dtype
        n.attr["shape"].shape.dim.extend(shape)
        info = self.graph.signature.inputs.add()
        info.name, info.dtype = name, dtype
        info.shape.dim.extend(shape)
        return name

    def const(self, name, array):
        array = np.ascontiguousarray(array)
        n = self.graph.node.add()
        n.name, n.op = name, "Const"
        t = n.attr["value"].tensor
        t.dtype = DTYPES[array.dtype]
        t.shape.dim.extend(array.shape)
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        if self.storage == "float_val":
            t.float_val.extend(array.ravel().tolist())
        elif self.storage == "external" and len(raw) >= self.external_min_bytes:
            self.weights.extend(b"\0" * (-len(self.weights) % EXTERNAL_ALIGN))
            t.external.path = os.path.basename(self.weights_path)
            t.external.offset = len(self.weights)
            t.external.length = len(raw)
            self.weights.extend(raw)
        else:
            t.content = raw
        return name

    def output(self, name, tensor, shape, dtype=DT.DT_FLOAT):
        info = self.graph.signature.outputs.add()
        info.name, info.tensor, info.dtype = name, tensor, dtype
        info.shape.dim.extend(shape)

    def write(self, path, header):
        if path.endswith(".pbtxt"):
            text = text_format.MessageToString(self.graph, use_short_repeated_primitives=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join("# %s\n" % line for line in header.splitlines()))
                f.write(text)
        else:
            with open(path, "wb") as f:
                f.write(self.graph.SerializeToString(deterministic=True))
        if self.weights_path:
            with open(self.weights_path, "wb") as f:
                f.write(bytes(self.weights))


def dense(rng, fan_in, fan_out):
    """Weights ~ N(0, 1/fan_in) and small biases, float32."""
    w = rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)
    b = 0.1 * rng.standard_normal(fan_out)
    return w.astype(np.float32), b.astype(np.float32)


# --- The models -------------------------------------------------------------------

def make_mlp(rng):
    """x [?,16] -> 32 Relu -> 10 = logits -> Softmax = probs."""
    g = GraphWriter("float_val")
    g.input("x", [-1, 16])
    w1, b1 = dense(rng, 16, 32)
    w2, b2 = dense(rng, 32, 10)
    g.const("fc1/w", w1)
    g.const("fc1/b", b1)
    g.node("MatMul", "fc1/matmul", ["x", "fc1/w"])
    g.node("Add", "fc1/add", ["fc1/matmul", "fc1/b"])
    g.node("Relu", "fc1/relu", ["fc1/add"])
    g.const("fc2/w", w2)
    g.const("fc2/b", b2)
    g.node("MatMul", "fc2/matmul", ["fc1/relu", "fc2/w"])
    g.node("Add", "logits", ["fc2/matmul", "fc2/b"])
    g.node("Softmax", "probs", ["logits"], axis=-1)
    g.output("logits", "logits", [-1, 10])
    g.output("probs", "probs", [-1, 10])
    x = rng.standard_normal((4, 16)).astype(np.float32)
    return g, {"x": x}


def make_transformer_block(rng, d_model=256, heads=4, seq=64, d_ff=1024):
    """One pre-LayerNorm transformer encoder block, x [1,seq,d_model] -> y."""
    d_head = d_model // heads
    g = GraphWriter("external", os.path.join(HERE, "transformer_block.weights"))
    g.input("x", [1, seq, d_model])

    def layer_norm(prefix, x):
        g.const(prefix + "/scale", (1 + 0.1 * rng.standard_normal(d_model)).astype(np.float32))
        g.const(prefix + "/bias", (0.1 * rng.standard_normal(d_model)).astype(np.float32))
        return g.node("LayerNorm", prefix, [x, prefix + "/scale", prefix + "/bias"],
                      axis=-1, epsilon=1e-5)

    def linear(prefix, x, fan_in, fan_out):
        w, b = dense(rng, fan_in, fan_out)
        g.const(prefix + "/w", w)
        g.const(prefix + "/b", b)
        g.node("MatMul", prefix + "/matmul", [x, prefix + "/w"])
        return g.node("Add", prefix + "/add", [prefix + "/matmul", prefix + "/b"])

    def split_heads(prefix, x):
        # [1,seq,d_model] -> [1,seq,heads,d_head] -> [1,heads,seq,d_head]
        g.node("Reshape", prefix + "/heads", [x], shape=[1, -1, heads, d_head])
        return g.node("Transpose", prefix + "/heads_t", [prefix + "/heads"], perm=[0, 2, 1, 3])

    ln1 = layer_norm("attn/ln", "x")
    q = split_heads("attn/q", linear("attn/q", ln1, d_model, d_model))
    k = split_heads("attn/k", linear("attn/k", ln1, d_model, d_model))
    v = split_heads("attn/v", linear("attn/v", ln1, d_model, d_model))
    g.node("MatMul", "attn/scores", [q, k], transpose_b=True)  # [1,heads,seq,seq]
    g.const("attn/scale", np.array(1.0 / math.sqrt(d_head), dtype=np.float32))
    g.node("Mul", "attn/scaled", ["attn/scores", "attn/scale"])
    g.node("Softmax", "attn/probs", ["attn/scaled"], axis=-1)
    g.node("MatMul", "attn/context", ["attn/probs", v])  # [1,heads,seq,d_head]
    g.node("Transpose", "attn/context_t", ["attn/context"], perm=[0, 2, 1, 3])
    g.node("Reshape", "attn/merged", ["attn/context_t"], shape=[1, seq, d_model])
    attn = linear("attn/out", "attn/merged", d_model, d_model)
    g.node("Add", "attn/residual", ["x", attn])

    ln2 = layer_norm("mlp/ln", "attn/residual")
    h = linear("mlp/fc1", ln2, d_model, d_ff)
    g.node("Gelu", "mlp/gelu", [h], approximate="none")
    m = linear("mlp/fc2", "mlp/gelu", d_ff, d_model)
    g.node("Add", "y", ["attn/residual", m])
    g.output("y", "y", [1, seq, d_model])
    x = rng.standard_normal((1, seq, d_model)).astype(np.float32)
    return g, {"x": x}


def make_cnn(rng):
    """x [1,3,32,32] -> conv 3->8 Relu MaxPool -> conv 8->16 Relu
    GlobalAvgPool -> [1,16] -> dense 10 = logits."""
    g = GraphWriter("content")
    g.input("x", [1, 3, 32, 32])

    def conv(prefix, x, cin, cout):
        w = rng.standard_normal((cout, cin, 3, 3)) / math.sqrt(cin * 9)
        b = 0.1 * rng.standard_normal((1, cout, 1, 1))
        g.const(prefix + "/w", w.astype(np.float32))
        g.const(prefix + "/b", b.astype(np.float32))
        g.node("Conv2D", prefix + "/conv", [x, prefix + "/w"],
               strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1)
        g.node("Add", prefix + "/add", [prefix + "/conv", prefix + "/b"])
        return g.node("Relu", prefix + "/relu", [prefix + "/add"])

    c1 = conv("conv1", "x", 3, 8)                       # [1,8,32,32]
    g.node("MaxPool", "pool1", [c1], kernel_shape=[2, 2], strides=[2, 2])  # [1,8,16,16]
    c2 = conv("conv2", "pool1", 8, 16)                  # [1,16,16,16]
    g.node("GlobalAvgPool", "gap", [c2])                # [1,16,1,1]
    g.node("Reshape", "flatten", ["gap"], shape=[1, 16])
    w, b = dense(rng, 16, 10)
    g.const("fc/w", w)
    g.const("fc/b", b)
    g.node("MatMul", "fc/matmul", ["flatten", "fc/w"])
    g.node("Add", "logits", ["fc/matmul", "fc/b"])
    g.output("logits", "logits", [1, 10])
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    return g, {"x": x}


EXAMPLES = [
    # name, file, builder, seed
    ("mlp", "mlp.pbtxt", make_mlp, 1),
    ("transformer_block", "transformer_block.pb", make_transformer_block, 2),
    ("cnn", "cnn.pb", make_cnn, 3),
]


def main():
    header = "Generated by examples/make_examples.py (fixed seeds); do not edit."
    for name, filename, build, seed in EXAMPLES:
        graph, inputs = build(np.random.default_rng(seed))
        model_path = os.path.join(HERE, filename)
        graph.write(model_path, header)
        args = [sys.executable, os.path.join(HERE, "reference.py"), model_path,
                "--name", name, "--compare-float32"]
        for input_name, value in inputs.items():
            # One input per example: <name>_input.npy.
            path = os.path.join(HERE, "%s_input.npy" % name)
            np.save(path, value)
            args += ["--input", "%s=%s" % (input_name, path)]
        print("%s: %s" % (name, os.path.relpath(model_path)))
        subprocess.run(args, check=True)
    subprocess.run([sys.executable, os.path.join(HERE, "check_reference.py")], check=True)


if __name__ == "__main__":
    main()
