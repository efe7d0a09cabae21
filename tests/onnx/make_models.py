#!/usr/bin/env python3
"""Makes the ONNX test models in tests/onnx/testdata/, with their inputs and
the outputs onnxruntime (CPU) computes for them, cross-checked with NumPy
where the formula is short.

One model per op family, a small CNN and a small transformer block, each with
fixed seeds. The C++ tests (tests/onnx/onnx_models_test.cc) read
testdata/manifest.json, import each model, run it on sluice's CPU and compare.

Run from the repository root, in the project's virtual environment:
    .venv/bin/pip install -r tests/onnx/requirements.txt
    .venv/bin/python tests/onnx/make_models.py
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL
MANIFEST = []


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def const(name, array):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(array)))


def save(name, nodes, inputs, outputs, initializers, feeds, opset,
         dim_values=None, rtol=1e-5, atol=1e-5, numpy_check=None,
         external=False, ml_opset=None):
    used = {i for node in nodes for i in node.input}
    initializers = [t for t in initializers if t.name in used]
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    opsets = [helper.make_opsetid("", opset)] if opset else []
    if ml_opset:
        opsets.append(helper.make_opsetid("ai.onnx.ml", ml_opset))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    # Outputs are declared without shapes, which the checker rejects and
    # onnxruntime accepts; onnxruntime validates the rest.
    path = os.path.join(OUT, name + ".onnx")
    if external:
        onnx.save_model(model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=name + ".bin",
                        size_threshold=0)
    else:
        onnx.save_model(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in outputs]
    results = sess.run(names, feeds)
    if numpy_check is not None:
        for got, want in zip(results, numpy_check(feeds)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    entry = {"model": name + ".onnx", "inputs": {}, "outputs": {},
             "dim_values": dim_values or {}, "rtol": rtol, "atol": atol}
    for key, value in feeds.items():
        fname = f"{name}.in.{key}.npy"
        np.save(os.path.join(OUT, fname), value)
        entry["inputs"][key] = fname
    for key, value in zip(names, results):
        fname = f"{name}.out.{key}.npy"
        np.save(os.path.join(OUT, fname), value)
        entry["outputs"][key] = fname
    MANIFEST.append(entry)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def unary(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    ops = ["Relu", "Neg", "Abs", "Exp", "Tanh", "Sigmoid", "Erf", "Identity"]
    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ops]
    nodes += [helper.make_node("Abs", ["x"], ["ax"]),
              helper.make_node("Sqrt", ["ax"], ["sqrt"]),
              helper.make_node("Add", ["ax", "one"], ["ax1"]),
              helper.make_node("Log", ["ax1"], ["log"]),
              helper.make_node("Reciprocal", ["ax1"], ["reciprocal"]),
              helper.make_node("Clip", ["x", "lo", "hi"], ["clip"]),
              helper.make_node("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
              helper.make_node("Dropout", ["x"], ["dropout"])]
    outs = [op.lower() for op in ops] + ["sqrt", "log", "reciprocal", "clip",
                                         "leaky", "dropout"]
    inits = [init("one", np.float32(1)), init("lo", np.float32(-0.5)),
             init("hi", np.float32(0.7))]

    def check(f):
        v = f["x"]
        return [np.maximum(v, 0), -v, np.abs(v), np.exp(v)]
    save("unary", nodes, [vi("x", F, [3, 4])],
         [vi(o, F, None) for o in outs], inits, {"x": x}, 13,
         numpy_check=check)


def binary(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 1)).astype(np.float32)
    ops = ["Add", "Sub", "Mul", "Div", "Max", "Min"]
    nodes = [helper.make_node(op, ["x", "y"], [op.lower()]) for op in ops]
    nodes += [helper.make_node("Abs", ["x"], ["ax"]),
              helper.make_node("Pow", ["ax", "e"], ["pow"]),
              helper.make_node("Pow", ["x", "two"], ["pow_int"]),
              helper.make_node("Sum", ["x", "y", "x"], ["sum3"]),
              helper.make_node("Max", ["x", "y", "zero"], ["max3"])]
    inits = [init("e", np.float32(1.5)), init("two", np.int64(2)),
             init("zero", np.float32(0))]
    outs = [op.lower() for op in ops] + ["pow", "pow_int", "sum3", "max3"]

    def check(f):
        a, b = f["x"], f["y"]
        return [a + b, a - b, a * b, a / b, np.maximum(a, b), np.minimum(a, b)]
    save("binary", nodes, [vi("x", F, [2, 3, 4]), vi("y", F, [3, 1])],
         [vi(o, F, None) for o in outs], inits, {"x": x, "y": y}, 15,
         numpy_check=check)


def compare_where(rng):
    x = rng.integers(-3, 3, (2, 5)).astype(np.float32)
    y = rng.integers(-3, 3, (5,)).astype(np.float32)
    n = helper.make_node
    nodes = [n("Equal", ["x", "y"], ["eq"]), n("Less", ["x", "y"], ["lt"]),
             n("Greater", ["x", "y"], ["gt"]),
             n("LessOrEqual", ["x", "y"], ["le"]),
             n("GreaterOrEqual", ["x", "y"], ["ge"]),
             n("Not", ["eq"], ["ne"]), n("And", ["lt", "ne"], ["and"]),
             n("Or", ["lt", "eq"], ["or"]), n("Xor", ["lt", "gt"], ["xor"]),
             n("Where", ["gt", "x", "y"], ["where"]),
             n("Cast", ["gt"], ["gt_f"], to=F),
             n("Cast", ["x"], ["x_i"], to=I64),
             n("Add", ["x_i", "x_i"], ["x_i2"]),
             n("CastLike", ["x_i2", "x"], ["back"])]
    outs = [vi(o, BOOL, None) for o in ["eq", "lt", "gt", "le", "ge", "ne",
                                         "and", "or", "xor"]]
    outs += [vi("where", F, None), vi("gt_f", F, None), vi("x_i2", I64, None),
             vi("back", F, None)]

    def check(f):
        a, b = f["x"], f["y"]
        return [a == b, a < b, a > b, a <= b, a >= b]
    save("compare_where", nodes, [vi("x", F, [2, 5]), vi("y", F, [5])], outs,
         [], {"x": x, "y": y}, 15, numpy_check=check)


def matmul_gemm(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal((4,)).astype(np.float32)
    wt = rng.standard_normal((6, 4)).astype(np.float32)
    c = rng.standard_normal((6,)).astype(np.float32)
    at = rng.standard_normal((4, 3)).astype(np.float32)
    n = helper.make_node
    nodes = [n("MatMul", ["a", "w"], ["mm"]),
             n("MatMul", ["a", "v"], ["mv"]),
             n("MatMul", ["v", "w"], ["vm"]),
             n("Gemm", ["m", "wt", "c"], ["gemm"], transB=1, alpha=0.5,
               beta=2.0),
             n("Gemm", ["at", "w"], ["gemm_ta"], transA=1),
             n("Gemm", ["m", "w", "c2"], ["gemm_c2"])]
    inits = [init("w", w), init("v", v), init("wt", wt), init("c", c),
             init("at", at),
             init("c2", rng.standard_normal((3, 5)).astype(np.float32))]

    def check(f):
        aa, mm = f["a"], f["m"]
        return [aa @ w, aa @ v, v @ w, 0.5 * mm @ wt.T + 2 * c, at.T @ w]
    save("matmul_gemm", nodes, [vi("a", F, [2, 3, 4]), vi("m", F, [3, 4])],
         [vi(o, F, None) for o in ["mm", "mv", "vm", "gemm", "gemm_ta",
                                   "gemm_c2"]],
         inits, {"a": a, "m": m}, 13, numpy_check=check, rtol=1e-4)


def reduce(rng, opset):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    n = helper.make_node
    axes_input = opset >= 18

    def red(op, out, axes, keepdims=1):
        if axes_input or op == "ReduceSum":
            return n(op, ["x", out + "_axes"], [out], keepdims=keepdims)
        return n(op, ["x"], [out], axes=axes, keepdims=keepdims)
    specs = [("ReduceMean", "mean", [-1], 1), ("ReduceSum", "sum", [0, 2], 0),
             ("ReduceMax", "max", [1], 1), ("ReduceMin", "min", [1, 2], 0)]
    nodes = [red(op, out, axes, kd) for op, out, axes, kd in specs]
    inits = [init(out + "_axes", np.array(axes, np.int64))
             for op, out, axes, kd in specs
             if axes_input or op == "ReduceSum"]
    nodes.append(n("ReduceSum", ["x"], ["sum_all"], keepdims=0))
    nodes.append(n("GlobalMaxPool", ["x"], ["gmax"]))

    def check(f):
        v = f["x"]
        return [v.mean(-1, keepdims=True), v.sum((0, 2)),
                v.max(1, keepdims=True), v.min((1, 2))]
    save(f"reduce{opset}", nodes, [vi("x", F, [2, 3, 4])],
         [vi(o, F, None) for o in ["mean", "sum", "max", "min", "sum_all",
                                   "gmax"]],
         inits, {"x": x}, opset, numpy_check=check)


def shape_ops(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    idx = np.array([[2, -1], [0, 1]], np.int64)
    n = helper.make_node
    i64 = lambda name, v: init(name, np.array(v, np.int64))
    nodes = [n("Reshape", ["x", "shape"], ["reshape"]),
             n("Transpose", ["x"], ["transpose"], perm=[2, 0, 1]),
             n("Unsqueeze", ["x", "ax_0_3"], ["unsq"]),
             n("Squeeze", ["unsq", "ax_0"], ["sq"]),
             n("Concat", ["x", "x"], ["concat"], axis=-1),
             n("Split", ["x", "split"], ["s0", "s1"], axis=2),
             n("Slice", ["x", "starts", "ends", "axes", "steps"], ["slice"]),
             n("Gather", ["x", "idx"], ["gather"], axis=2),
             n("Expand", ["y", "eshape"], ["expand"]),
             n("Flatten", ["x"], ["flatten"], axis=2),
             n("Flatten", ["x"], ["flatten0"], axis=0)]
    inits = [i64("shape", [0, -1]), i64("ax_0_3", [0, 3]), i64("ax_0", [0]),
             i64("split", [1, 3]), i64("starts", [-1, 0]),
             i64("ends", [-9223372036854775807, 4]), i64("axes", [2, 1]),
             i64("steps", [-2, 2]), i64("eshape", [2, 1, 3])]

    def check(f):
        v = f["x"]
        return [v.reshape(2, -1), v.transpose(2, 0, 1), v[None, :, :, None, :],
                v[:, :, None, :], np.concatenate([v, v], -1), v[:, :, :1], v[:, :, 1:],
                v[:, 0:4:2, ::-2], v[:, :, idx]]
    save("shape_ops", nodes, [vi("x", F, [2, 3, 4]), vi("idx", I64, [2, 2]),
                              vi("y", F, [3, 1])],
         [vi(o, F, None) for o in ["reshape", "transpose", "unsq", "sq",
                                   "concat", "s0", "s1", "slice", "gather",
                                   "expand", "flatten", "flatten0"]],
         inits, {"x": x, "idx": idx,
                 "y": rng.standard_normal((3, 1)).astype(np.float32)}, 13,
         numpy_check=check)


def shape_folding(rng):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a dynamic batch,
    ConstantOfShape, Range, Constant and Size: all fold at import."""
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["shp"]),
             n("Gather", ["shp", "zero"], ["batch"], axis=0),
             n("Unsqueeze", ["batch", "ax0"], ["batch1"]),
             const("minus1", np.array([-1], np.int64)),
             n("Concat", ["batch1", "minus1"], ["newshape"], axis=0),
             n("Reshape", ["x", "newshape"], ["flat"]),
             n("Shape", ["x"], ["last2"], start=-2),
             n("ConstantOfShape", ["last2"], ["ones"],
               value=numpy_helper.from_array(np.array([1.5], np.float32))),
             n("Add", ["x", "ones"], ["plus"]),
             n("Gather", ["shp", "two"], ["four"]),
             n("Range", ["zero", "four", "one"], ["rng"]),
             n("Cast", ["rng"], ["rngf"], to=F),
             n("Mul", ["x", "rngf"], ["scaled"]),
             n("Size", ["x"], ["size"]),
             n("Cast", ["size"], ["sizef"], to=F),
             n("Div", ["x", "sizef"], ["normed"])]
    inits = [init("zero", np.int64(0)), init("one", np.int64(1)),
             init("two", np.int64(2)), init("ax0", np.array([0], np.int64))]
    inp = helper.make_tensor_value_info("x", F, ["batch", 2, 4])
    save("shape_folding", nodes, [inp],
         [vi(o, F, None) for o in ["flat", "plus", "scaled", "normed"]],
         inits, {"x": x}, 15, dim_values={"batch": 3})


def split18(rng):
    x = rng.standard_normal((2, 7)).astype(np.float32)
    nodes = [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1,
                              num_outputs=3)]
    save("split18", nodes, [vi("x", F, [2, 7])],
         [vi(o, F, None) for o in "abc"], [], {"x": x}, 18)


def softmax_layernorm(rng):
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    n = helper.make_node
    nodes = [n("Softmax", ["x"], ["sm"]),
             n("Softmax", ["x"], ["sm1"], axis=1),
             n("LogSoftmax", ["x"], ["lsm"]),
             n("LayerNormalization", ["x", "g", "b"], ["ln"], epsilon=1e-3),
             n("LayerNormalization", ["x", "g2"], ["ln2"], axis=1)]
    inits = [init("g", rng.standard_normal(8).astype(np.float32)),
             init("b", rng.standard_normal(8).astype(np.float32)),
             init("g2", rng.standard_normal((3, 8)).astype(np.float32))]
    save("softmax_layernorm", nodes, [vi("x", F, [2, 3, 8])],
         [vi(o, F, None) for o in ["sm", "sm1", "lsm", "ln", "ln2"]], inits,
         {"x": x}, 17, rtol=1e-4, atol=1e-5)


def conv_bn(rng, cin, cout, k, prefix):
    w = (rng.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32)
    return [init(prefix + "_w", w),
            init(prefix + "_b", rng.standard_normal(cout).astype(np.float32)),
            init(prefix + "_g", (rng.random(cout) + 0.5).astype(np.float32)),
            init(prefix + "_beta", rng.standard_normal(cout).astype(np.float32)),
            init(prefix + "_mean", rng.standard_normal(cout).astype(np.float32)),
            init(prefix + "_var", (rng.random(cout) + 0.5).astype(np.float32))]


def cnn(rng):
    """ResNet-style: Conv+BN (folded)+Relu, MaxPool (ceil_mode), a strided
    SAME conv, BN after Relu (decomposed), a residual Add, AveragePool,
    GlobalAveragePool, Flatten, Gemm."""
    n = helper.make_node
    inits = conv_bn(rng, 3, 8, 3, "c1") + conv_bn(rng, 8, 16, 3, "c2")
    inits += conv_bn(rng, 16, 16, 1, "c3")
    inits += [init("fc_w", (rng.standard_normal((10, 16)) * 0.2)
                   .astype(np.float32)),
              init("fc_b", rng.standard_normal(10).astype(np.float32))]
    bn = lambda p, x, y: n("BatchNormalization",
                           [x, p + "_g", p + "_beta", p + "_mean", p + "_var"],
                           [y], epsilon=1e-3)
    nodes = [n("Conv", ["x", "c1_w", "c1_b"], ["c1"], pads=[1, 1, 1, 1]),
             bn("c1", "c1", "c1_bn"), n("Relu", ["c1_bn"], ["r1"]),
             n("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], ceil_mode=1),
             n("Conv", ["p1", "c2_w"], ["c2"], strides=[2, 2],
               auto_pad="SAME_UPPER"),
             n("Relu", ["c2"], ["r2"]), bn("c2", "r2", "r2_bn"),
             n("Conv", ["r2_bn", "c3_w", "c3_b"], ["c3"], group=2,
               kernel_shape=[1, 1]),
             n("Add", ["c3", "r2_bn"], ["res"]),
             n("AveragePool", ["res"], ["ap"], kernel_shape=[2, 2],
               pads=[0, 0, 1, 1]),
             n("GlobalAveragePool", ["ap"], ["gap"]),
             n("Flatten", ["gap"], ["flat"]),
             n("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1)]
    # c3 uses 8 input channels per group: regenerate its weights to match.
    inits[12] = init("c3_w", (rng.standard_normal((16, 8, 1, 1)) * 0.3)
                     .astype(np.float32))
    x = rng.standard_normal((2, 3, 17, 17)).astype(np.float32)
    save("cnn", nodes, [vi("x", F, ["N", 3, 17, 17])],
         [vi("logits", F, None), vi("p1", F, None)], inits, {"x": x}, 13,
         dim_values={"N": 2}, rtol=1e-4, atol=1e-4)


def conv_variants(rng):
    """Dilation, SAME_LOWER, asymmetric pads, a BN fed by a graph input
    (decomposed), AveragePool with count_include_pad."""
    n = helper.make_node
    w = (rng.standard_normal((4, 2, 3, 3)) * 0.3).astype(np.float32)
    inits = [init("w", w)] + conv_bn(rng, 2, 2, 1, "bn")[2:]
    nodes = [n("Conv", ["x", "w"], ["dil"], dilations=[2, 2], pads=[2, 1, 0, 2]),
             n("Conv", ["x", "w"], ["same"], auto_pad="SAME_LOWER",
               strides=[2, 2]),
             n("BatchNormalization", ["x", "bn_g", "bn_beta", "bn_mean",
                                      "bn_var"], ["bn"]),
             n("AveragePool", ["x"], ["avg_inc"], kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], count_include_pad=1),
             n("AveragePool", ["x"], ["avg_exc"], kernel_shape=[3, 2],
               strides=[2, 1], pads=[1, 0, 1, 1]),
             n("MaxPool", ["x"], ["maxp"], kernel_shape=[2, 2], strides=[2, 2],
               ceil_mode=1)]
    x = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    save("conv_variants", nodes, [vi("x", F, [1, 2, 7, 8])],
         [vi(o, F, None) for o in ["dil", "same", "bn", "avg_inc", "avg_exc",
                                   "maxp"]], inits, {"x": x}, 13,
         rtol=1e-4, atol=1e-5)


def transformer(rng):
    """A GPT-style block as exporters write it: token and position
    embeddings (Gather, Range from Shape), a decomposed LayerNorm, attention
    with heads reshaped through Shape/Gather/Concat, a causal mask from
    Range/Less/Where, GELU through Erf, LayerNormalization, tied logits."""
    V, D, H, FF = 50, 32, 4, 64
    dh = D // H
    r = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)
    n = helper.make_node
    i64 = lambda name, v: init(name, np.array(v, np.int64))
    inits = [init("wte", r(V, D)), init("wpe", r(16, D)),
             init("ln1_g", 1 + r(D)), init("ln1_b", r(D)),
             init("w_qkv", r(D, 3 * D)), init("b_qkv", r(3 * D)),
             init("w_o", r(D, D)), init("b_o", r(D)),
             init("ln2_g", 1 + r(D)), init("ln2_b", r(D)),
             init("w_1", r(D, FF)), init("b_1", r(FF)),
             init("w_2", r(FF, D)), init("b_2", r(D)),
             i64("i0", 0), i64("i1", 1), i64("ax0", [0]), i64("ax1", [1]),
             i64("heads", [H, dh]), i64("dmodel", [D]), i64("qkv_split",
                                                             [D, D, D]),
             init("eps", np.float32(1e-5)), init("two", np.float32(2)),
             init("scale", np.float32(1 / np.sqrt(dh))),
             init("neg", np.float32(-1e9)), init("half", np.float32(0.5)),
             init("one", np.float32(1)), init("sqrt2", np.float32(np.sqrt(2)))]
    nodes = [
        n("Gather", ["wte", "ids"], ["tok"]),
        n("Shape", ["ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", "i0"], ["B"]),
        n("Gather", ["ids_shape", "i1"], ["S"]),
        n("Range", ["i0", "S", "i1"], ["pos"]),
        n("Gather", ["wpe", "pos"], ["pos_emb"]),
        n("Add", ["tok", "pos_emb"], ["h0"]),
        # LayerNorm, decomposed as older exporters write it.
        n("ReduceMean", ["h0"], ["mu"], axes=[-1]),
        n("Sub", ["h0", "mu"], ["dev"]),
        n("Pow", ["dev", "two"], ["dev2"]),
        n("ReduceMean", ["dev2"], ["var"], axes=[-1]),
        n("Add", ["var", "eps"], ["var_eps"]),
        n("Sqrt", ["var_eps"], ["std"]),
        n("Div", ["dev", "std"], ["norm"]),
        n("Mul", ["norm", "ln1_g"], ["norm_g"]),
        n("Add", ["norm_g", "ln1_b"], ["ln1"]),
        n("MatMul", ["ln1", "w_qkv"], ["qkv_mm"]),
        n("Add", ["qkv_mm", "b_qkv"], ["qkv"]),
        n("Split", ["qkv", "qkv_split"], ["q", "k", "v"], axis=-1),
        n("Unsqueeze", ["B", "ax0"], ["B1"]),
        n("Unsqueeze", ["S", "ax0"], ["S1"]),
        n("Concat", ["B1", "S1", "heads"], ["head_shape"], axis=0),
        n("Reshape", ["q", "head_shape"], ["q4"]),
        n("Reshape", ["k", "head_shape"], ["k4"]),
        n("Reshape", ["v", "head_shape"], ["v4"]),
        n("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qh", "kt"], ["scores_raw"]),
        n("Mul", ["scores_raw", "scale"], ["scores"]),
        n("Unsqueeze", ["pos", "ax0"], ["cols"]),
        n("Unsqueeze", ["pos", "ax1"], ["rows"]),
        n("Less", ["rows", "cols"], ["future"]),
        n("Where", ["future", "neg", "scores"], ["masked"]),
        n("Softmax", ["masked"], ["probs"], axis=-1),
        n("MatMul", ["probs", "vh"], ["ctx_h"]),
        n("Transpose", ["ctx_h"], ["ctx_t"], perm=[0, 2, 1, 3]),
        n("Concat", ["B1", "S1", "dmodel"], ["merged_shape"], axis=0),
        n("Reshape", ["ctx_t", "merged_shape"], ["ctx"]),
        n("MatMul", ["ctx", "w_o"], ["att_mm"]),
        n("Add", ["att_mm", "b_o"], ["att"]),
        n("Add", ["h0", "att"], ["h1"]),
        n("LayerNormalization", ["h1", "ln2_g", "ln2_b"], ["ln2"]),
        n("MatMul", ["ln2", "w_1"], ["ff_mm"]),
        n("Add", ["ff_mm", "b_1"], ["ff"]),
        n("Div", ["ff", "sqrt2"], ["ff_s"]),
        n("Erf", ["ff_s"], ["erf"]),
        n("Add", ["erf", "one"], ["erf1"]),
        n("Mul", ["ff", "erf1"], ["gelu_x"]),
        n("Mul", ["gelu_x", "half"], ["gelu"]),
        n("MatMul", ["gelu", "w_2"], ["ff2_mm"]),
        n("Add", ["ff2_mm", "b_2"], ["ff2"]),
        n("Add", ["h1", "ff2"], ["h2"]),
        n("Transpose", ["wte"], ["wte_t"], perm=[1, 0]),
        n("MatMul", ["h2", "wte_t"], ["logits"]),
    ]
    ids = rng.integers(0, V, (2, 8)).astype(np.int64)
    save("transformer", nodes, [vi("ids", I64, ["batch", "seq"])],
         [vi("logits", F, None), vi("h2", F, None)], inits, {"ids": ids}, 17,
         dim_values={"batch": 2, "seq": 8}, rtol=1e-4, atol=1e-4)


def external_mlp(rng):
    """An MLP whose weights live in a separate file (external data)."""
    n = helper.make_node
    inits = [init("w1", rng.standard_normal((6, 8)).astype(np.float32)),
             init("b1", rng.standard_normal(8).astype(np.float32)),
             init("w2", rng.standard_normal((8, 3)).astype(np.float32))]
    nodes = [n("MatMul", ["x", "w1"], ["h"]), n("Add", ["h", "b1"], ["hb"]),
             n("Relu", ["hb"], ["r"]), n("MatMul", ["r", "w2"], ["y"])]
    x = rng.standard_normal((4, 6)).astype(np.float32)
    save("external_mlp", nodes, [vi("x", F, [4, 6])], [vi("y", F, None)],
         inits, {"x": x}, 13, external=True, rtol=1e-4)


def isnan_where(rng):
    # The pattern PyTorch's attention export emits: NaNs replaced by zero.
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 1] = np.nan
    x[2, 3] = np.nan
    n = helper.make_node
    nodes = [n("IsNaN", ["x"], ["m"]), n("Where", ["m", "zero", "x"], ["y"])]

    def check(f):
        a = f["x"]
        return [np.isnan(a), np.where(np.isnan(a), np.float32(0), a)]
    save("isnan_where", nodes, [vi("x", F, [3, 4])],
         [vi("m", BOOL, None), vi("y", F, None)],
         [init("zero", np.zeros((), np.float32))], {"x": x}, 17,
         numpy_check=check)


def gather_elements(rng):
    # On constants, as BERT's export uses it (folded at import time).
    data = rng.standard_normal((2, 3)).astype(np.float32)
    index = np.array([[2, 0], [-1, 1]], np.int64)
    x = rng.standard_normal((2, 2)).astype(np.float32)
    n = helper.make_node
    nodes = [n("GatherElements", ["data", "index"], ["g"], axis=1),
             n("Add", ["g", "x"], ["y"])]

    def check(f):
        idx = np.where(index < 0, index + 3, index)
        return [np.take_along_axis(data, idx, axis=1) + f["x"]]
    save("gather_elements", nodes, [vi("x", F, [2, 2])], [vi("y", F, None)],
         [init("data", data), init("index", index)], {"x": x}, 17,
         numpy_check=check)


def rms_norm(rng):
    """RMSNormalization (opset 23) as one op (scale of x.shape[axis:], one to
    expand, two axes), and the decomposed forms PyTorch exports for
    LLaMA's norm, which rms_norm_fusion makes one RMSNorm: Pow, ReduceMean,
    Add, Sqrt, Reciprocal (torch.rsqrt), Mul by x and the weight; and Mul(x,
    x) with eps on the left and Div(x, Sqrt)."""
    x = (rng.standard_normal((2, 3, 8)) * 2).astype(np.float32)
    n = helper.make_node
    g = rng.standard_normal(8).astype(np.float32)
    w = (rng.standard_normal(8) * 0.5 + 1).astype(np.float32)
    nodes = [n("RMSNormalization", ["x", "g"], ["r1"]),
             n("RMSNormalization", ["x", "g2"], ["r2"], axis=1, epsilon=1e-3),
             n("RMSNormalization", ["x", "g3"], ["r3"], axis=-2),
             # torch: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
             n("Pow", ["x", "two"], ["d1_sq"]),
             n("ReduceMean", ["d1_sq", "last"], ["d1_ms"], keepdims=1),
             n("Add", ["d1_ms", "eps"], ["d1_e"]),
             n("Sqrt", ["d1_e"], ["d1_root"]),
             n("Reciprocal", ["d1_root"], ["d1_inv"]),
             n("Mul", ["x", "d1_inv"], ["d1_n"]),
             n("Mul", ["w", "d1_n"], ["d1"]),
             # x / sqrt(eps + mean(x * x)) * w
             n("Mul", ["x", "x"], ["d2_sq"]),
             n("ReduceMean", ["d2_sq", "last"], ["d2_ms"], keepdims=1),
             n("Add", ["eps", "d2_ms"], ["d2_e"]),
             n("Sqrt", ["d2_e"], ["d2_root"]),
             n("Div", ["x", "d2_root"], ["d2_n"]),
             n("Mul", ["d2_n", "w"], ["d2"])]
    inits = [init("g", g),
             init("g2", rng.standard_normal((3, 8)).astype(np.float32)),
             init("g3", rng.standard_normal((1, 8)).astype(np.float32)),
             init("w", w), init("two", np.array(2.0, np.float32)),
             init("eps", np.array(1e-6, np.float32)),
             init("last", np.array([-1], np.int64))]
    outs = ["r1", "r2", "r3", "d1", "d2"]

    def check(f):
        v = f["x"].astype(np.float64)
        def rms(axes, eps, scale):
            return v / np.sqrt(np.mean(v * v, axis=axes, keepdims=True) + eps) * scale
        return [rms((2,), 1e-5, g),
                rms((1, 2), 1e-3, numpy_helper.to_array(inits[1])),
                rms((1, 2), 1e-5, numpy_helper.to_array(inits[2])),
                rms((2,), 1e-6, w), rms((2,), 1e-6, w)]
    save("rms_norm", nodes, [vi("x", F, [2, 3, 8])],
         [vi(o, F, None) for o in outs], inits, {"x": x}, 23,
         rtol=1e-4, atol=1e-5, numpy_check=check)


def lrn(rng):
    x = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("LRN", ["x"], ["odd"], size=3, alpha=2e-3,
                              beta=0.6, bias=1.5),
             helper.make_node("LRN", ["x"], ["default"], size=5),
             helper.make_node("LRN", ["x"], ["wide"], size=9, alpha=0.5)]
    save("lrn", nodes, [vi("x", F, [2, 5, 3, 4])],
         [vi(o, F, None) for o in ("odd", "default", "wide")], [], {"x": x}, 13)


def ml(rng):
    """The ai.onnx.ml ops sluice lowers (onnx/ops_ml.cc), in a model that
    imports only that domain, on float, double and int64 inputs."""
    ML = "ai.onnx.ml"
    x = rng.standard_normal((4, 3)).astype(np.float32)
    x[1] = 0  # a zero row: the Normalizer leaves it as it is
    x[2] = -np.abs(x[2])  # MAX divides by a negative maximum
    xd = rng.standard_normal((4, 3))
    xi = rng.integers(-5, 6, (4, 3)).astype(np.int64)
    idx = np.array([2, 0, 2], np.int64)
    nodes = [
        helper.make_node("Binarizer", ["x"], ["bin"], domain=ML,
                         threshold=0.25),
        helper.make_node("Scaler", ["x"], ["scaled"], domain=ML,
                         offset=[0.5, -1.0, 2.0], scale=[2.0, 0.5, -1.0]),
        helper.make_node("Scaler", ["xi"], ["scaled_int"], domain=ML,
                         offset=[1.0], scale=[0.25]),
        helper.make_node("Normalizer", ["x"], ["max"], domain=ML, norm="MAX"),
        helper.make_node("Normalizer", ["x"], ["l1"], domain=ML, norm="L1"),
        helper.make_node("Normalizer", ["xd"], ["l2"], domain=ML, norm="L2"),
        helper.make_node("LinearRegressor", ["x"], ["linear"], domain=ML,
                         coefficients=[0.5, -1.0, 2.0, 1.5, 0.25, -0.75],
                         intercepts=[0.1, -0.2], targets=2),
        helper.make_node("LinearRegressor", ["x"], ["linear1"], domain=ML,
                         coefficients=[1.0, 2.0, 3.0]),
        helper.make_node("ArrayFeatureExtractor", ["x", "idx"], ["picked"],
                         domain=ML),
    ]
    # LinearClassifier: one score for two classes (scikit-learn's binary
    # LogisticRegression), one per class.
    coefs = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75, -1.0, 0.5, 0.5]
    lc_outs = []
    for name, rows, labels, post in (("lc_binary", 1, [3, 7], "NONE"),
                                     ("lc_binary_p", 1, [3, 7], "LOGISTIC"),
                                     ("lc_two", 2, [0, 1], "NONE"),
                                     ("lc_multi", 3, [2, 4, 6], "SOFTMAX"),
                                     ("lc_ovr", 3, [2, 4, 6], "LOGISTIC")):
        nodes.append(helper.make_node(
            "LinearClassifier", ["x"], [name + "_label", name + "_scores"],
            domain=ML, coefficients=coefs[:3 * rows],
            intercepts=[0.25, -0.5, 0.1][:rows], classlabels_ints=labels,
            post_transform=post))
        lc_outs += [vi(name + "_label", I64, None),
                    vi(name + "_scores", F, None)]
    outs = [vi("bin", F, None)] + [
        vi(o, F, None) for o in ("scaled", "scaled_int", "max", "l1", "l2",
                                 "linear", "linear1", "picked")]
    outs += lc_outs
    # LabelEncoder on tensors: int64 -> float with a default, float -> int64
    # with ONNX's default (-1).
    nodes.append(helper.make_node("LabelEncoder", ["xi"], ["encoded"],
                                  domain=ML, keys_int64s=[-2, 0, 3, 5],
                                  values_floats=[0.5, 1.5, -2.0, 9.0],
                                  default_float=7.0))
    nodes.append(helper.make_node("LabelEncoder", ["picked"], ["decoded"],
                                  domain=ML, keys_floats=[0.0, float(x[0, 2])],
                                  values_int64s=[4, 8]))
    outs += [vi("encoded", F, None), vi("decoded", I64, None)]
    save("ml", nodes, [vi("x", F, [4, 3]),
                       vi("xd", TensorProto.DOUBLE, [4, 3]),
                       vi("xi", I64, [4, 3]), vi("idx", I64, [3])],
         outs, [], {"x": x, "xd": xd, "xi": xi, "idx": idx}, None,
         ml_opset=3)


def random_trees(rng, n_trees, depth, n_features, n_targets):
    """The nodes_* and target_* attributes of random full trees (ids
    shuffled within each tree, every branch mode, NaN tracked both ways)."""
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT"]
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids",
                         "nodes_values", "nodes_modes", "nodes_truenodeids",
                         "nodes_falsenodeids",
                         "nodes_missing_value_tracks_true", "target_treeids",
                         "target_nodeids", "target_ids", "target_weights")}
    for t in range(n_trees):
        count = 2 ** (depth + 1) - 1
        ids = rng.permutation(count)
        for i in range(count):
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(int(ids[i]))
            leaf = i >= 2 ** depth - 1
            a["nodes_featureids"].append(0 if leaf else
                                         int(rng.integers(n_features)))
            a["nodes_values"].append(0.0 if leaf else
                                     float(np.round(rng.normal(), 1)))
            a["nodes_modes"].append("LEAF" if leaf else
                                    modes[rng.integers(len(modes))])
            a["nodes_truenodeids"].append(0 if leaf else int(ids[2 * i + 1]))
            a["nodes_falsenodeids"].append(0 if leaf else int(ids[2 * i + 2]))
            a["nodes_missing_value_tracks_true"].append(int(rng.integers(2)))
            if leaf:
                for target in range(n_targets):
                    if rng.random() < 0.8:
                        a["target_treeids"].append(t)
                        a["target_nodeids"].append(int(ids[i]))
                        a["target_ids"].append(target)
                        a["target_weights"].append(float(rng.normal()))
    return a


def trees(rng):
    """TreeEnsembleRegressor, as XGBoost, LightGBM and scikit-learn export
    it: every aggregate, two post transforms, NaN inputs, and a single-leaf
    tree."""
    ML = "ai.onnx.ml"
    x = np.round(rng.standard_normal((16, 4)), 1).astype(np.float32)
    x[3, 1] = np.nan
    x[7, 0] = np.nan
    nodes = []
    for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
        a = random_trees(rng, 3, 3, 4, 2)
        nodes.append(helper.make_node(
            "TreeEnsembleRegressor", ["x"], [agg.lower()], domain=ML,
            n_targets=2, aggregate_function=agg, base_values=[0.5, -0.25],
            **a))
    a = random_trees(rng, 2, 2, 4, 3)
    nodes.append(helper.make_node("TreeEnsembleRegressor", ["x"], ["softmax"],
                                  domain=ML, n_targets=3,
                                  post_transform="SOFTMAX", **a))
    a = random_trees(rng, 2, 2, 4, 1)
    a["nodes_treeids"].append(2)  # a tree that is one leaf
    a["nodes_nodeids"].append(0)
    for k, v in (("nodes_featureids", 0), ("nodes_values", 0.0),
                 ("nodes_modes", "LEAF"), ("nodes_truenodeids", 0),
                 ("nodes_falsenodeids", 0),
                 ("nodes_missing_value_tracks_true", 0)):
        a[k].append(v)
    a["target_treeids"].append(2)
    a["target_nodeids"].append(0)
    a["target_ids"].append(0)
    a["target_weights"].append(1.5)
    nodes.append(helper.make_node("TreeEnsembleRegressor", ["x"], ["logistic"],
                                  domain=ML, n_targets=1,
                                  post_transform="LOGISTIC", **a))
    outs = ["sum", "average", "min", "max", "softmax", "logistic"]
    save("trees", nodes, [vi("x", F, [16, 4])], [vi(o, F, None) for o in outs],
         [], {"x": x}, None, ml_opset=3)


def tree_classifiers(rng):
    """TreeEnsembleClassifier in the forms the exporters write: several
    classes (SOFTMAX), XGBoost's and LightGBM's binary models (class 0's
    score only, LOGISTIC, weights of both signs), one score of positive
    weights, and both classes' scores (scikit-learn's forests)."""
    ML = "ai.onnx.ml"
    x = np.round(rng.standard_normal((16, 4)), 1).astype(np.float32)

    def classifier(name, n_classes, ids, post, positive=False, base=None,
                   first_label=10):
        a = random_trees(rng, 3, 2, 4, n_classes)
        keep = [k for k, c in enumerate(a["target_ids"]) if c in ids]
        cls = {}
        for key in ("treeids", "nodeids", "ids", "weights"):
            cls["class_" + key] = [a["target_" + key][k] for k in keep]
            del a["target_" + key]
        if positive:
            cls["class_weights"] = [abs(w) / 5 for w in cls["class_weights"]]
        kw = dict(classlabels_int64s=list(range(first_label,
                                                first_label + n_classes)),
                  post_transform=post, **a, **cls)
        if base is not None:
            kw["base_values"] = base
        return helper.make_node("TreeEnsembleClassifier", ["x"],
                                [name + "_label", name + "_scores"],
                                domain=ML, **kw)
    nodes = [classifier("multi", 4, [0, 1, 2, 3], "SOFTMAX",
                        base=[0.1, 0.2, 0.3, 0.4]),
             classifier("multi_raw", 3, [0, 1, 2], "NONE"),
             classifier("xgb", 2, [0], "LOGISTIC", base=[0.25]),
             classifier("one_score", 2, [0], "NONE"),
             classifier("one_positive", 2, [0], "NONE", positive=True),
             # onnxruntime labels this form 0 or 1 whatever the labels are
             # (sluice gives the labels): labels 0 and 1 agree.
             classifier("forest", 2, [0, 1], "NONE", positive=True,
                        first_label=0)]
    outs = []
    for node in nodes:
        outs += [vi(node.output[0], I64, None), vi(node.output[1], F, None)]
    save("tree_classifiers", nodes, [vi("x", F, [16, 4])], outs, [],
         {"x": x}, None, ml_opset=3)


def deform_conv(rng):
    """DeformConv with groups, offset groups, strides, dilations, uneven
    pads, a mask and a bias, and offsets up to two pixels (taps outside the
    image)."""
    x = rng.standard_normal((2, 4, 6, 7)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    # oH = (6 + 1 + 0 - 3) / 2 + 1 = 3, oW = (7 + 0 + 1 - 3) / 1 + 1 = 6.
    offset = (rng.random((2, 2 * 2 * 6, 3, 6)) * 4 - 2).astype(np.float32)
    mask = rng.random((2, 2 * 6, 3, 6)).astype(np.float32)
    nodes = [helper.make_node("DeformConv", ["x", "w", "offset", "b", "mask"],
                              ["y"], strides=[2, 1], dilations=[1, 2],
                              pads=[1, 0, 0, 1], group=2, offset_group=2),
             helper.make_node("DeformConv", ["x", "w", "offset"], ["plain"],
                              strides=[2, 1], dilations=[1, 2],
                              pads=[1, 0, 0, 1], group=2, offset_group=2)]
    save("deform_conv", nodes,
         [vi("x", F, [2, 4, 6, 7]), vi("offset", F, [2, 24, 3, 6]),
          vi("mask", F, [2, 12, 3, 6])],
         [vi("y", F, None), vi("plain", F, None)],
         [init("w", w), init("b", b)],
         {"x": x, "offset": offset, "mask": mask}, 19, rtol=1e-4)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240607)
    unary(rng)
    binary(rng)
    compare_where(rng)
    matmul_gemm(rng)
    reduce(rng, 13)
    reduce(rng, 18)
    shape_ops(rng)
    shape_folding(rng)
    split18(rng)
    softmax_layernorm(rng)
    cnn(rng)
    conv_variants(rng)
    transformer(rng)
    external_mlp(rng)
    isnan_where(rng)
    gather_elements(rng)
    rms_norm(rng)
    lrn(rng)
    ml(rng)
    trees(rng)
    tree_classifiers(rng)
    deform_conv(rng)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(MANIFEST, f, indent=1)
    print(f"wrote {len(MANIFEST)} models to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
