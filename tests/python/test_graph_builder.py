"""sluice.GraphBuilder: models written in Python, saved as .pb / .pbtxt, run
with sluice.Session and checked against NumPy; errors from sluice's own
graph validation, naming the node."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import sluice


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def mlp():
    """An MLP 16 -> 32 -> 10 with seeded weights, and its NumPy forward."""
    rng = np.random.default_rng(16)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = rng.standard_normal((32, 10)).astype(np.float32)
    b2 = rng.standard_normal(10).astype(np.float32)
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", ["batch", 16])
    with b.name_scope("fc1"):
        h = b.relu(b.add(b.matmul(x, b.const(w1, name="w")), b.const(b1, name="b")))
    with b.name_scope("fc2"):
        logits = h @ w2 + b2  # operators; the arrays become Consts
    b.output("logits", logits)
    b.output("probs", b.softmax(logits))

    def forward(xv):
        lg = np.maximum(xv @ w1 + b1, 0) @ w2 + b2
        return lg, softmax(lg)

    return b, forward, rng.standard_normal((5, 16)).astype(np.float32)


def test_mlp_runs_from_pb_pbtxt_and_the_builder(mlp, tmp_path):
    b, forward, x = mlp
    want_logits, want_probs = forward(x)
    b.save(tmp_path / "mlp.pb")
    b.save(tmp_path / "mlp.pbtxt")
    for model in (tmp_path / "mlp.pb", tmp_path / "mlp.pbtxt", b, b.to_bytes()):
        logits, probs = sluice.Session(model).run(None, {"x": x})
        np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(probs, want_probs, rtol=1e-5, atol=1e-6)


def test_signature_round_trip(mlp, tmp_path):
    b, _, _ = mlp
    b.validate()
    b.save(tmp_path / "mlp.pb")
    sess = sluice.Session(str(tmp_path / "mlp.pb"))
    placed = {n["name"] for n in sluice.place(b, devices="cpu").nodes}
    # Each layer's MatMul and bias Add (and fc1's Relu) are one FusedMatMul,
    # named after the pattern's last node.
    assert {"x", "fc1/w"} <= placed
    assert any(n.startswith("fc2/") for n in placed)
    assert sess.inputs == [sluice.TensorSpec("x", "float32", ("batch", 16))]
    assert sess.outputs == [sluice.TensorSpec("logits", "float32", (None, 10)),
                            sluice.TensorSpec("probs", "float32", (None, 10))]


def test_sluice_inspect_reads_the_saved_model(mlp, tmp_path):
    b, _, _ = mlp
    path = tmp_path / "mlp.pbtxt"
    b.save(path)
    r = subprocess.run([sys.executable, "-m", "sluice", "inspect", "--json", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["valid"] and report["num_nodes"] == b.num_nodes
    assert report["inputs"][0]["dim_names"] == ["batch", ""]
    assert [o["name"] for o in report["outputs"]] == ["logits", "probs"]
    assert report["parameters"]["count"] == 16 * 32 + 32 + 32 * 10 + 10


def test_pbtxt_lists_const_values_and_reads_back_exactly(tmp_path):
    values = np.array([[0.1, -2.5e-7, 3.0e38], [np.inf, -0.0, 1 / 3]], np.float32)
    b = sluice.GraphBuilder()
    b.output("c", b.identity(b.const(values, name="c0")))
    text = b.to_text()
    assert "float_val: [" in text and "content" not in text
    got = sluice.Session(text.encode(), format="pbtxt").run("c")
    np.testing.assert_array_equal(got, values)
    assert got.tobytes() == values.tobytes()  # -0.0 kept


def test_inferred_dtypes_and_shapes():
    b = sluice.GraphBuilder()
    x = b.input("x", np.float32, [None, 6])
    assert (x.dtype, x.shape, x.name) == ("float32", (None, 6), "x")
    y = b.matmul(x, np.ones((6, 4), np.float32))
    assert (y.dtype, y.shape, y.op) == ("float32", (None, 4), "MatMul")
    parts = b.split(y, 2, axis=1)
    assert [p.name for p in parts] == ["Split", "Split:1"]
    assert [p.shape for p in parts] == [(None, 2), (None, 2)]
    values, indices = b.top_k(y, 3)
    assert indices.dtype == "int64" and values.shape == (None, 3)
    assert b.input("u", "float32").shape is None  # unknown rank
    assert b.argmax(y, axis=1, keepdims=False).shape == (None,)


def test_operators_take_numbers_in_the_tensors_dtype():
    b = sluice.GraphBuilder()
    x = b.input("x", "float64", [3])
    y = 2 - x * 3.0 / 4 + (-x) ** 2
    assert y.dtype == "float64"
    b.output("y", y)
    b.output("lt", x < 1.5)
    xv = np.array([1.0, 2.0, -3.0])
    got, lt = sluice.Session(b).run(["y", "lt"], {"x": xv})
    np.testing.assert_allclose(got, 2 - xv * 3.0 / 4 + (-xv) ** 2)
    np.testing.assert_array_equal(lt, xv < 1.5)


def test_cnn_ops_match_numpy():
    rng = np.random.default_rng(7)
    img = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    filt = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2, 3, 6, 6])
    conv = b.conv2d(x, filt, pads=[1, 1, 1, 1])
    pooled = b.max_pool(b.relu(conv), [2, 2], strides=[2, 2])
    flat = b.reshape(b.transpose(pooled, [0, 2, 3, 1]), [2, -1])
    both = b.concat([flat, b.reduce_mean(pooled, axes=[2, 3])], axis=1)
    b.output("y", both)
    assert both.shape == (2, 3 * 3 * 4 + 4)

    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    ref_conv = np.einsum("nchwij,ocij->nohw", windows, filt)
    r = np.maximum(ref_conv, 0).reshape(2, 4, 3, 2, 3, 2).max(axis=(3, 5))
    want = np.concatenate([r.transpose(0, 2, 3, 1).reshape(2, -1),
                           r.mean(axis=(2, 3))], axis=1)
    np.testing.assert_allclose(sluice.Session(b).run("y", {"x": img}), want,
                               rtol=1e-4, atol=1e-4)


def test_ops_by_name_with_attributes_from_the_schema():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    # epsilon given as an int: the schema says float; DstT as a NumPy type.
    ln = b.add_node("LayerNorm", [x, np.ones(3, np.float32), np.zeros(3, np.float32)],
                    {"epsilon": 1, "axis": -1})
    b.output("ln", ln)
    b.output("i", b.cast(x, np.int32))
    b.output("g", b.gather(x, [1, 0], axis=1))
    xv = np.array([[1, 2, 3], [4, 5, 9]], np.float32)
    ln_v, i_v, g_v = sluice.Session(b).run(["ln", "i", "g"], {"x": xv})
    mean = xv.mean(-1, keepdims=True)
    np.testing.assert_allclose(ln_v, (xv - mean) / np.sqrt(xv.var(-1, keepdims=True) + 1),
                               rtol=1e-5)
    np.testing.assert_array_equal(i_v, xv.astype(np.int32))
    np.testing.assert_array_equal(g_v, xv[:, [1, 0]])


def test_device_and_control_inputs_are_written():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2])
    first = b.relu(x, name="first")
    with b.device("/cpu:0"):
        b.add_node("Neg", [x], name="second", control_inputs=[first])
    text = b.to_text()
    assert 'input: "^first"' in text and 'device: "/cpu:0"' in text


def assert_error(exc_info, *parts):
    message = str(exc_info.value)
    for part in parts:
        assert part in message, message


def test_unknown_op_names_the_node_and_leaves_the_builder_unchanged():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2])
    before = b.num_nodes
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.add_node("Frobnicate", [x], name="frob")
    assert_error(e, "node 'frob' (Frobnicate)", "unknown op")
    assert b.num_nodes == before
    b.output("y", b.relu(x))
    assert sluice.Session(b).run("y", {"x": np.array([-1, 2], np.float32)}).tolist() == [0, 2]


def test_wrong_input_count_names_the_node():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2, 2])
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.add_node("MatMul", [x], name="mm")
    assert_error(e, "node 'mm' (MatMul)", "expects 2 inputs", "got 1")


def test_dtype_mismatch_names_the_node():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2, 2])
    w = b.const(np.eye(2, dtype=np.int32), name="w")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.matmul(x, w, name="mixed")
    assert_error(e, "node 'mixed' (MatMul)", "int32", "float32")


def test_duplicate_name_names_the_node():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2])
    b.relu(x, name="act")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.neg(x, name="act")
    assert_error(e, "node 'act' (Neg)", "duplicate node name")


def test_shape_errors_and_bad_attributes_name_the_node():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2, 3])
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.matmul(x, np.ones((4, 5), np.float32), name="inner")
    assert_error(e, "node 'inner' (MatMul)", "inner dimensions")
    assert b.num_nodes == 1  # the Const made for it went too
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.add_node("Softmax", [x], {"axis": "last"}, name="sm")
    assert_error(e, "node 'sm' (Softmax)", "axis")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.add_node("Relu", [x], {"alpha": 0.1}, name="leaky")
    assert_error(e, "node 'leaky' (Relu)", "alpha")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.input("z", "flaot32")
    assert_error(e, "node 'z' (Input)", "flaot32")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.add_node("Relu", ["nowhere:0"], name="orphan")
    assert_error(e, "node 'orphan' (Relu)", "nowhere")
    b.output("y", b.matmul(x, np.ones((3, 1), np.float32)))  # still valid
    assert b.num_nodes == 3 and b.to_bytes()


def test_signature_errors_are_found_when_the_graph_is_written():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [2])
    b.output("y", b.relu(x))
    b.output("y", x)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        b.to_bytes()
    assert_error(e, "signature output 'y'", "listed twice")
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Session(b)


def test_tensors_of_another_builder_are_refused():
    a, b = sluice.GraphBuilder(), sluice.GraphBuilder()
    x = a.input("x", "float32", [2])
    with pytest.raises(sluice.InvalidArgumentError, match="another GraphBuilder"):
        b.relu(x)


def test_subgraph_attribute_from_a_builder():
    def branch(scale):
        g = sluice.GraphBuilder()
        v = g.input("v", "float32", [2])
        g.output("out", v * scale)
        return g

    b = sluice.GraphBuilder()
    c = b.input("c", "bool", [1])
    x = b.input("x", "float32", [2])
    y = b.add_node("If", [c, x], {"then_branch": branch(2.0), "else_branch": branch(-1.0),
                                  "Tin": ["float32"], "Tout": ["float32"]})
    b.output("y", y)
    sess = sluice.Session(b)
    xv = np.array([1.0, 3.0], np.float32)
    np.testing.assert_array_equal(sess.run("y", {"c": np.array([True]), "x": xv}), 2 * xv)
    np.testing.assert_array_equal(sess.run("y", {"c": np.array([False]), "x": xv}), -xv)


def test_bfloat16_const_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    b = sluice.GraphBuilder()
    c = b.const(values)
    assert c.dtype == "bfloat16"
    b.output("f", b.cast(c, "float32"))
    np.testing.assert_array_equal(sluice.Session(b).run("f"),
                                  values.astype(np.float32))


def test_stub_and_docstring_for_every_public_method():
    stub = (pathlib.Path(sluice.__file__).parent / "graph_builder.pyi").read_text()
    for cls in (sluice.GraphBuilder, sluice.GraphTensor):
        assert f"class {cls.__name__}" in stub and cls.__doc__
        for name in dir(cls):
            if name.startswith("_"):
                continue
            assert f"def {name}(" in stub or f"    {name}: " in stub, name
            member = getattr(cls, name)
            assert getattr(member, "__doc__", None) or isinstance(member, property) \
                or name in getattr(cls, "__slots__", ()), name
