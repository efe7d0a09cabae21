#!/usr/bin/env python3
"""A transformer encoder layer as ONNX, with the same weights for PyTorch.

The layer is PyTorch's
`nn.TransformerEncoderLayer(768, 12, 3072, dropout=0, activation="relu",
batch_first=True, norm_first=False)` in eval mode (post-norm), sequence 128,
float32, written with onnx.helper at opset 17 from ops sluice's importer
takes (MatMul, Add, Split, Reshape, Transpose, Mul, Softmax, Relu,
LayerNormalization). Weights come from a fixed seed and are also saved as an
.npz in the layout of the PyTorch module's state_dict, so that PyTorch loads
exactly the same values (`torch_layer`).

    python3 bench/models/encoder_layer.py --out DIR [--batch 1 32] [--check]
        [--sluice build/tools/sluice]

writes DIR/encoder_layer_b{B}.onnx (graph input "x" [B,128,768], output
"y"), DIR/encoder_layer_b{B}_x.npy (a seeded input) and
DIR/encoder_layer_weights.npz; --check compares onnxruntime (and sluice,
with --sluice) with the float64 NumPy reference in this file. bench/peers.py
and bench/run_suite.py import `write`.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

D_MODEL = 768
N_HEADS = 12
D_FF = 3072
SEQ = 128
EPS = 1e-5
OPSET = 17


def make_weights(seed=0):
    """Seeded float32 weights, keyed and shaped like the module's state_dict.

    PyTorch's own initialisation is followed in scale (Xavier for in_proj,
    U(+-1/sqrt(fan_in)) for the linears), but biases and the LayerNorm
    parameters are random too, so that a mix-up of any of them shows.
    """
    rng = np.random.default_rng(seed)

    def uniform(bound, *shape):
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    d, f = D_MODEL, D_FF
    return {
        "self_attn.in_proj_weight": uniform(np.sqrt(6 / (d + 3 * d)), 3 * d, d),
        "self_attn.in_proj_bias": uniform(0.02, 3 * d),
        "self_attn.out_proj.weight": uniform(1 / np.sqrt(d), d, d),
        "self_attn.out_proj.bias": uniform(0.02, d),
        "linear1.weight": uniform(1 / np.sqrt(d), f, d),
        "linear1.bias": uniform(1 / np.sqrt(d), f),
        "linear2.weight": uniform(1 / np.sqrt(f), d, f),
        "linear2.bias": uniform(1 / np.sqrt(f), d),
        "norm1.weight": (1 + uniform(0.1, d)).astype(np.float32),
        "norm1.bias": uniform(0.1, d),
        "norm2.weight": (1 + uniform(0.1, d)).astype(np.float32),
        "norm2.bias": uniform(0.1, d),
    }


def make_input(batch, seed=1):
    return np.random.default_rng(seed).standard_normal(
        (batch, SEQ, D_MODEL)).astype(np.float32)


def build_model(weights, batch):
    """The ONNX ModelProto for one batch size (None: a symbolic "batch")."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    d, h, dh = D_MODEL, N_HEADS, D_MODEL // N_HEADS
    inits = []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    # PyTorch's Linear computes x @ W^T: the ONNX graph stores W^T.
    w = weights
    const("w_in", w["self_attn.in_proj_weight"].T)
    const("b_in", w["self_attn.in_proj_bias"])
    const("w_out", w["self_attn.out_proj.weight"].T)
    const("b_out", w["self_attn.out_proj.bias"])
    const("w1", w["linear1.weight"].T)
    const("b1", w["linear1.bias"])
    const("w2", w["linear2.weight"].T)
    const("b2", w["linear2.bias"])
    for n in ("norm1", "norm2"):
        const(f"{n}_scale", w[f"{n}.weight"])
        const(f"{n}_bias", w[f"{n}.bias"])
    const("qkv_split", np.array([d, d, d], np.int64))
    const("heads_shape", np.array([-1, SEQ, h, dh], np.int64))
    const("model_shape", np.array([-1, SEQ, d], np.int64))
    # 1/sqrt(64) = 0.125 is a power of two: scaling the scores, q, or q and
    # k by its square root each, gives the same bits.
    const("scale", np.array(1 / np.sqrt(dh), np.float32))

    N = helper.make_node
    nodes = [
        N("MatMul", ["x", "w_in"], ["qkv_mm"], name="in_proj/matmul"),
        N("Add", ["qkv_mm", "b_in"], ["qkv"], name="in_proj/bias"),
        N("Split", ["qkv", "qkv_split"], ["q0", "k0", "v0"], axis=2,
          name="qkv_split"),
    ]
    for t, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]),
                    ("v", [0, 2, 1, 3])):
        nodes += [
            N("Reshape", [f"{t}0", "heads_shape"], [f"{t}1"], name=f"{t}/heads"),
            N("Transpose", [f"{t}1"], [f"{t}h"], perm=perm, name=f"{t}/perm"),
        ]
    nodes += [
        N("MatMul", ["qh", "kh"], ["scores0"], name="attn/qk"),
        N("Mul", ["scores0", "scale"], ["scores"], name="attn/scale"),
        N("Softmax", ["scores"], ["probs"], axis=-1, name="attn/softmax"),
        N("MatMul", ["probs", "vh"], ["ctx0"], name="attn/pv"),
        N("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3], name="attn/merge"),
        N("Reshape", ["ctx1", "model_shape"], ["ctx"], name="attn/concat"),
        N("MatMul", ["ctx", "w_out"], ["attn_mm"], name="out_proj/matmul"),
        N("Add", ["attn_mm", "b_out"], ["attn"], name="out_proj/bias"),
        N("Add", ["x", "attn"], ["res1"], name="residual1"),
        N("LayerNormalization", ["res1", "norm1_scale", "norm1_bias"], ["h1"],
          axis=-1, epsilon=EPS, name="norm1"),
        N("MatMul", ["h1", "w1"], ["ff1_mm"], name="linear1/matmul"),
        N("Add", ["ff1_mm", "b1"], ["ff1_pre"], name="linear1/bias"),
        N("Relu", ["ff1_pre"], ["ff1"], name="relu"),
        N("MatMul", ["ff1", "w2"], ["ff2_mm"], name="linear2/matmul"),
        N("Add", ["ff2_mm", "b2"], ["ff2"], name="linear2/bias"),
        N("Add", ["h1", "ff2"], ["res2"], name="residual2"),
        N("LayerNormalization", ["res2", "norm2_scale", "norm2_bias"], ["y"],
          axis=-1, epsilon=EPS, name="norm2"),
    ]
    b = "batch" if batch is None else batch
    graph = helper.make_graph(
        nodes, "encoder_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, SEQ, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, SEQ, d])],
        initializer=inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="sluice bench/models/encoder_layer.py")
    model.ir_version = 8  # opset 17's IR; onnxruntime accepts it everywhere
    onnx.checker.check_model(model)
    return model


def reference(weights, x):
    """The layer in float64 NumPy, following PyTorch's post-norm order."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = x.astype(np.float64)
    b, s, d = x.shape
    dh = d // N_HEADS

    def linear(t, name):
        return t @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def layer_norm(t, name):
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(var + EPS) * w[f"{name}.weight"] + w[f"{name}.bias"]

    qkv = x @ w["self_attn.in_proj_weight"].T + w["self_attn.in_proj_bias"]
    q, k, v = (t.reshape(b, s, N_HEADS, dh).transpose(0, 2, 1, 3)
               for t in np.split(qkv, 3, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    h1 = layer_norm(x + linear(ctx, "self_attn.out_proj"), "norm1")
    ff = linear(np.maximum(linear(h1, "linear1"), 0), "linear2")
    return layer_norm(h1 + ff, "norm2").astype(np.float32)


def torch_layer(weights):
    """nn.TransformerEncoderLayer with `weights` loaded (strict), eval, CPU."""
    import torch
    layer = torch.nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.0, activation="relu",
        batch_first=True, norm_first=False)
    layer.load_state_dict({k: torch.from_numpy(np.array(v))
                           for k, v in weights.items()}, strict=True)
    return layer.eval()


def load_weights(npz_path):
    with np.load(npz_path) as f:
        return {k: f[k] for k in f.files}


def write(out_dir, batch, seed=0):
    """Writes the model, its input and the weights; returns their paths.

    batch None writes a model with a symbolic batch dimension ("batch") and
    a batch-1 input.
    """
    import onnx
    os.makedirs(out_dir, exist_ok=True)
    tag = "bsym" if batch is None else f"b{batch}"
    weights = make_weights(seed)
    npz = os.path.join(out_dir, "encoder_layer_weights.npz")
    np.savez(npz, **weights)
    model_path = os.path.join(out_dir, f"encoder_layer_{tag}.onnx")
    onnx.save(build_model(weights, batch), model_path)
    x_path = os.path.join(out_dir, f"encoder_layer_{tag}_x.npy")
    np.save(x_path, make_input(1 if batch is None else batch))
    return {"onnx": model_path, "npz": npz, "x": x_path}


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm((a - b).ravel()) /
                 max(np.linalg.norm(b.ravel()), 1e-30))


def check(paths, sluice=None):
    """Compares onnxruntime (and sluice) with the NumPy reference."""
    import onnxruntime as ort
    weights = load_weights(paths["npz"])
    x = np.load(paths["x"])
    want = reference(weights, x)
    got = {}
    sess = ort.InferenceSession(paths["onnx"],
                                providers=["CPUExecutionProvider"])
    got["onnxruntime"] = sess.run(None, {"x": x})[0]
    if sluice:
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sluice, "run", paths["onnx"], "--input",
                                f"x={paths['x']}", "--output-dir", tmp],
                               capture_output=True, text=True)
            if r.returncode != 0:
                got["sluice"] = RuntimeError((r.stderr or r.stdout).strip())
            else:
                got["sluice"] = np.load(os.path.join(tmp, "y.npy"))
    ok = True
    for name, y in got.items():
        if isinstance(y, Exception):
            print(f"  {name}: failed: {y}")
            ok = False
            continue
        d = float(np.abs(y - want).max())
        ok = ok and y.shape == want.shape and d < 1e-3
        print(f"  {name} vs NumPy float64: shape {list(y.shape)}, "
              f"max|d| {d:.2e}, relL2 {rel_l2(y, want):.2e}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the files")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32],
                    help="batch sizes, one model each (0: symbolic batch)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed")
    ap.add_argument("--check", action="store_true",
                    help="compare onnxruntime (and --sluice) with NumPy")
    ap.add_argument("--sluice", help="a sluice binary to check too")
    args = ap.parse_args()
    ok = True
    for batch in args.batch:
        paths = write(args.out, batch or None, args.seed)
        print(f"wrote {paths['onnx']} ({os.path.getsize(paths['onnx']) >> 20} "
              f"MiB), {paths['x']}, {paths['npz']}")
        if args.check or args.sluice:
            ok = check(paths, args.sluice) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
