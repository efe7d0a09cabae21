#!/usr/bin/env python3
"""A tiny detector whose shapes depend on its data, for
tests/onnx/data_dependent_test.cc: testdata/tiny_detector.onnx and the
outputs onnxruntime (CPU) computes for it at two inputs with different
numbers of candidates, with fixed seeds.

The graph (opset 17, made with onnx.helper) is a YOLO-style head with NMS
at the end, touching every op whose output size depends on values:
  x [N, 8] candidates (N symbolic), feat [1, 2, 8, 8] a feature map
  boxes [N, 4] = (xy, xy + 2 + exp(wh)) from x @ Wb;  scores [N, 3] = sigmoid(x @ Wc)
  keep = NonZero(max(scores) > 0.6)           -> K candidates
  k = min(K, 12); TopK(max score, k)            (k computed at run time)
  NonMaxSuppression(iou 0.5, score 0.35, max 6 per class) -> S selections
  det_boxes [S, 4], det_labels [S], det_scores [S] (GatherND)
  rank = Range(0, S, 1)                          (bounds computed at run time)
  classes, counts = Unique(det_labels)
  strong = Compress(det_scores, det_scores > 0.8)
  pooled = RoiAlign(feat, det_boxes, zeros[S])   [S, 2, 2, 2]
  areas = Loop(S) scan of each box's area        [S] (a Loop's stacked output)
  flat = Flatten(pooled, axis 1) after a reshape that hides its dims
Inputs with 14 and 40 candidates give different K and S through one
session, and a third with none over the threshold makes every one of
them empty.

Run from the repository root:
    .venv-onnx/bin/python tests/onnx/make_data_dependent.py
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
NAME = "tiny_detector"
F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OUTPUTS = ["det_boxes", "det_labels", "det_scores", "rank", "classes",
           "counts", "strong", "pooled", "areas", "flat"]
INT_OUTPUTS = {"det_labels", "rank", "classes", "counts"}


def const(name, value):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(value),
                                                          name))


def area_body():
    """Loop body: i, cond, boxes (captured) -> cond, area of boxes[i]."""
    nodes = [
        helper.make_node("Gather", ["det_boxes", "i"], ["box"], axis=0),
        const("lo_idx", np.array([0, 1], np.int64)),
        const("hi_idx", np.array([2, 3], np.int64)),
        helper.make_node("Gather", ["box", "lo_idx"], ["lo"], axis=0),
        helper.make_node("Gather", ["box", "hi_idx"], ["hi"], axis=0),
        helper.make_node("Sub", ["hi", "lo"], ["extent"]),
        helper.make_node("ReduceProd", ["extent"], ["area"], keepdims=0),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]
    return helper.make_graph(
        nodes, "area_body",
        [helper.make_tensor_value_info("i", I64, []),
         helper.make_tensor_value_info("cond_in", BOOL, [])],
        [helper.make_tensor_value_info("cond_out", BOOL, []),
         helper.make_tensor_value_info("area", F, [])])


def model(rng):
    wb = (rng.standard_normal((8, 4)) * 0.25).astype(np.float32)
    wc = (rng.standard_normal((8, 3)) * 0.4).astype(np.float32)
    nodes = [
        # Boxes and scores per candidate.
        helper.make_node("MatMul", ["x", "wb"], ["raw"]),
        helper.make_node("Split", ["raw", "split2"], ["xy", "wh_log"], axis=1),
        helper.make_node("Exp", ["wh_log"], ["wh_exp"]),
        helper.make_node("Add", ["wh_exp", "two"], ["wh"]),
        helper.make_node("Add", ["xy", "wh"], ["xy2"]),
        helper.make_node("Concat", ["xy", "xy2"], ["boxes"], axis=1),
        helper.make_node("MatMul", ["x", "wc"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        # Candidates over the threshold: NonZero.
        helper.make_node("ReduceMax", ["scores"], ["best"], axes=[1],
                         keepdims=0),
        helper.make_node("Greater", ["best", "thresh"], ["over"]),
        helper.make_node("NonZero", ["over"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "axis0"], ["kept"]),
        helper.make_node("Gather", ["best", "kept"], ["kept_best"], axis=0),
        # The best k = min(K, 12) of them: TopK with a computed k.
        helper.make_node("Shape", ["kept"], ["k_all"]),
        helper.make_node("Min", ["k_all", "k_max"], ["k"]),
        helper.make_node("TopK", ["kept_best", "k"], ["top_s", "top_i"]),
        helper.make_node("Gather", ["kept", "top_i"], ["cand"], axis=0),
        helper.make_node("Gather", ["boxes", "cand"], ["cand_boxes"], axis=0),
        helper.make_node("Gather", ["scores", "cand"], ["cand_scores"],
                         axis=0),
        # NMS per class.
        helper.make_node("Unsqueeze", ["cand_boxes", "axis0"], ["nms_boxes"]),
        helper.make_node("Transpose", ["cand_scores"], ["cs_t"], perm=[1, 0]),
        helper.make_node("Unsqueeze", ["cs_t", "axis0"], ["nms_scores"]),
        helper.make_node("NonMaxSuppression",
                         ["nms_boxes", "nms_scores", "max_out", "iou",
                          "thresh"], ["sel"]),
        const("col1", np.array([1], np.int64)),
        const("col2", np.array([2], np.int64)),
        helper.make_node("Gather", ["sel", "col1"], ["sel_c"], axis=1),
        helper.make_node("Gather", ["sel", "col2"], ["sel_b"], axis=1),
        helper.make_node("Squeeze", ["sel_c", "axis1"], ["det_labels"]),
        helper.make_node("Squeeze", ["sel_b", "axis1"], ["sel_box"]),
        helper.make_node("Gather", ["cand_boxes", "sel_box"], ["det_boxes"],
                         axis=0),
        helper.make_node("Concat", ["sel_b", "sel_c"], ["box_class"], axis=1),
        helper.make_node("GatherND", ["cand_scores", "box_class"],
                         ["det_scores"]),
        # Range with bounds computed at run time.
        helper.make_node("Shape", ["det_labels"], ["s_vec"]),
        helper.make_node("Squeeze", ["s_vec", "axis0"], ["s"]),
        helper.make_node("Range", ["zero", "s", "one"], ["rank"]),
        # Unique and Compress.
        helper.make_node("Unique", ["det_labels"],
                         ["classes", "", "", "counts"], sorted=1),
        helper.make_node("Greater", ["det_scores", "strong_thresh"],
                         ["is_strong"]),
        helper.make_node("Compress", ["det_scores", "is_strong"], ["strong"],
                         axis=0),
        # RoiAlign with as many boxes as NMS kept.
        helper.make_node("ConstantOfShape", ["s_vec"], ["batch_idx"],
                         value=numpy_helper.from_array(
                             np.array([0], np.int64))),
        helper.make_node("RoiAlign", ["feat", "det_boxes", "batch_idx"],
                         ["pooled"], output_height=2, output_width=2,
                         sampling_ratio=2, spatial_scale=0.5),
        # A Loop whose trip count is S, stacking one area per box.
        helper.make_node("Loop", ["s", "true"], ["areas"], body=area_body()),
        # Flatten of a value whose dims are all unknown at import.
        helper.make_node("Shape", ["pooled"], ["dyn_shape"]),
        helper.make_node("Reshape", ["pooled", "dyn_shape"], ["hidden"]),
        helper.make_node("Flatten", ["hidden"], ["flat"], axis=1),
    ]
    inits = [
        numpy_helper.from_array(wb, "wb"),
        numpy_helper.from_array(wc, "wc"),
        numpy_helper.from_array(np.array([2, 2], np.int64), "split2"),
        numpy_helper.from_array(np.array(0.6, np.float32), "thresh"),
        numpy_helper.from_array(np.array(0.8, np.float32), "strong_thresh"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array([12], np.int64), "k_max"),
        numpy_helper.from_array(np.array([5], np.int64), "max_out"),
        numpy_helper.from_array(np.array([0.3], np.float32), "iou"),
        numpy_helper.from_array(np.array(2, np.float32), "two"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array(True), "true"),
    ]
    graph = helper.make_graph(
        nodes, NAME,
        [helper.make_tensor_value_info("x", F, ["n", 8]),
         helper.make_tensor_value_info("feat", F, [1, 2, 8, 8])],
        [helper.make_tensor_value_info(o, I64 if o in INT_OUTPUTS else F,
                                       None) for o in OUTPUTS],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    rng = np.random.default_rng(20261205)
    path = os.path.join(OUT, NAME + ".onnx")
    onnx.save_model(model(rng), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feat = rng.standard_normal((1, 2, 8, 8)).astype(np.float32)
    np.save(os.path.join(OUT, f"{NAME}.in.feat.npy"), feat)
    summary = {}
    # c: no candidate passes (scores of 0.5), so every size is zero.
    for tag, n, scale in (("a", 14, 1.0), ("b", 40, 1.0), ("c", 5, 0.0)):
        x = (rng.standard_normal((n, 8)) * scale).astype(np.float32)
        outs = sess.run(OUTPUTS, {"x": x, "feat": feat})
        np.save(os.path.join(OUT, f"{NAME}.{tag}.in.x.npy"), x)
        for o, v in zip(OUTPUTS, outs):
            np.save(os.path.join(OUT, f"{NAME}.{tag}.out.{o}.npy"), v)
        summary[tag] = {o: list(v.shape) for o, v in zip(OUTPUTS, outs)}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
