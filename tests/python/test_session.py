"""sluice.Session: models from paths, bytes and onnx.ModelProto; run; errors."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import sluice
from conftest import identity_graph


def test_mlp_matches_the_reference(mlp_path, mlp_input, examples):
    sess = sluice.Session(mlp_path)
    logits, probs = sess.run(None, {"x": mlp_input})
    np.testing.assert_allclose(logits, np.load(examples / "mlp_logits_expected.npy"), atol=1e-4)
    np.testing.assert_allclose(probs, np.load(examples / "mlp_probs_expected.npy"), atol=1e-4)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32


def test_fetch_forms(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path)
    probs = sess.run("probs", {"x": mlp_input})
    both = sess.run(["probs", "logits"], {"x": mlp_input})
    assert isinstance(probs, np.ndarray)
    np.testing.assert_array_equal(both[0], probs)
    assert len(sess.run(None, {"x": mlp_input})) == 2


def test_signature(mlp_path):
    sess = sluice.Session(mlp_path)
    assert sess.inputs == [sluice.TensorSpec("x", "float32", (None, 16))]
    assert [o.name for o in sess.outputs] == ["logits", "probs"]
    assert sess.outputs[0].dtype == "float32"
    assert "x: float32" in repr(sess)


def test_binary_pb_and_bytes(examples):
    x = np.load(examples / "cnn_input.npy")
    expected = np.load(examples / "cnn_expected.npy")
    from_path = sluice.Session(str(examples / "cnn.pb")).run("logits", {"x": x})
    data = (examples / "cnn.pb").read_bytes()
    from_bytes = sluice.Session(data).run("logits", {"x": x})
    np.testing.assert_allclose(from_path, expected, atol=1e-4)
    # The same model; on a GPU to rounding only, since each session picks
    # its cuDNN and cuBLASLt algorithms by timing them.
    np.testing.assert_allclose(from_bytes, from_path, rtol=1e-6, atol=1e-6)
    text = (examples / "mlp.pbtxt").read_bytes()
    assert sluice.Session(text).inputs[0].name == "x"
    assert sluice.Session(text, format="pbtxt").inputs[0].name == "x"


def test_external_weights_by_path(examples):
    sess = sluice.Session(examples / "transformer_block.pb")
    y = sess.run("y", {"x": np.load(examples / "transformer_block_input.npy")})
    e = np.load(examples / "transformer_block_expected.npy")
    assert np.all(np.abs(y - e) <= 1e-3 * np.abs(e) + 1e-4)


def test_onnx_model_proto_with_symbolic_dims():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    if not sluice.with_onnx:
        pytest.skip("this build has no ONNX importer")
    node = helper.make_node("Relu", ["a"], ["b"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = sluice.Session(model)
    assert sess.inputs[0].shape == ("batch", 4)
    a = np.array([[-1, 2, -3, 4]] * 3, np.float32)
    np.testing.assert_array_equal(sess.run("b", {"a": a}), np.maximum(a, 0))
    # bytes of an ONNX model, format guessed; and dims fixed at import
    sess = sluice.Session(model.SerializeToString(), dims={"batch": 3})
    assert sess.inputs[0].shape == (3, 4)
    path_sess = None
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "relu.onnx")
        onnx.save(model, p)
        path_sess = sluice.Session(p)
    assert path_sess.outputs[0].name == "b"


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(sluice.NotFoundError) as e:
        sluice.Session(str(tmp_path / "nope.pb"))
    assert e.value.code == "NOT_FOUND"
    assert "nope.pb" in e.value.message
    assert "NOT_FOUND" in str(e.value)


def test_invalid_model_bytes():
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Session(b"\xff\xfe not a model")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Session(b'node { name: "a" op: "NoSuchOp" }', format="pbtxt")
    assert "NoSuchOp" in e.value.message
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.Session(42)


def test_wrong_feed_dtype(mlp_path):
    sess = sluice.Session(mlp_path)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("probs", {"x": np.ones((2, 16), np.float64)})
    assert "x" in e.value.message and "float32" in e.value.message


def test_wrong_feed_shape(mlp_path):
    sess = sluice.Session(mlp_path)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("probs", {"x": np.ones((2, 15), np.float32)})
    assert "x" in e.value.message and "16" in e.value.message


def test_unknown_fetch_and_feed(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("no_such_output", {"x": mlp_input})
    assert "no_such_output" in e.value.message
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("probs", {"x": mlp_input, "zzz": mlp_input})
    assert "zzz" in e.value.message
    with pytest.raises(sluice.InvalidArgumentError):
        sess.run("probs", {})
    # The session stays usable after errors.
    assert sess.run("probs", {"x": mlp_input}).shape == (4, 10)


def test_feeds_lists_strided_views_and_dlpack_objects(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path)
    expected = sess.run("probs", {"x": mlp_input})
    np.testing.assert_array_equal(sess.run("probs", {"x": mlp_input.tolist()}), expected)
    wide = np.zeros((4, 32), np.float32)
    wide[:, ::2] = mlp_input
    np.testing.assert_array_equal(sess.run("probs", {"x": wide[:, ::2]}), expected)
    fortran = np.asfortranarray(mlp_input)
    np.testing.assert_array_equal(sess.run("probs", {"x": fortran}), expected)

    class DlpackOnly:  # what torch / jax CPU tensors look like to sluice
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, **kwargs):
            return self._a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    np.testing.assert_array_equal(sess.run("probs", {"x": DlpackOnly(mlp_input)}), expected)


class _OnDevice:
    """A DLPack producer that only says where it is."""

    def __init__(self, device):
        self._device = device

    def __dlpack__(self, **kwargs):
        raise AssertionError("not to be read")

    def __dlpack_device__(self):
        return self._device


def test_gpu_dlpack_feed_on_a_gpu_the_session_does_not_use_is_refused(mlp_path):
    sess = sluice.Session(mlp_path, config=sluice.Config(use_gpu=False))
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("probs", {"x": _OnDevice((2, 0))})  # kDLCUDA, device 0
    assert "a feed on CUDA device 0, which this session does not use" in e.value.message
    assert "/cpu:0" in e.value.message


def test_dlpack_feed_on_an_unsupported_device_names_it(mlp_path):
    sess = sluice.Session(mlp_path, config=sluice.Config(use_gpu=False))
    for device, name in [((4, 0), "kDLOpenCL"), ((10, 1), "kDLROCM")]:
        with pytest.raises(sluice.InvalidArgumentError) as e:
            sess.run("probs", {"x": _OnDevice(device)})
        assert name in e.value.message
        assert "sluice takes host memory" in e.value.message


def test_output_device_cpu_is_numpy_and_unknown_devices_are_refused(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path, config=sluice.Config(use_gpu=False))
    expected = sess.run("probs", {"x": mlp_input})
    for device in ("cpu", "cpu:0", "/cpu:0", None):
        got = sess.run("probs", {"x": mlp_input}, output_device=device)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("probs", {"x": mlp_input}, output_device="gpu:0")
    assert "output_device 'gpu:0' is not a device of this session" in e.value.message
    with pytest.raises(sluice.InvalidArgumentError):
        sess.run("probs", {"x": mlp_input}, output_device="tpu:0")


def test_outputs_own_their_memory_and_never_alias_feeds():
    sess = sluice.Session(identity_graph("float32", ops=("Neg",)))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = sess.run("y", {"x": x})
    assert y.flags.writeable and y.flags.c_contiguous
    y[0, 0] = 100
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    # Identity removed by the optimiser: the output is the feed itself, so
    # sluice copies it rather than alias the caller's array.
    same = sluice.Session(identity_graph("float32")).run("y", {"x": x})
    assert not np.shares_memory(same, x)
    same[:] = -1
    assert x[0, 1] == 1


def test_constant_outputs_are_copies():
    graph = b'''
node { name: "c" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: [2] } float_val: [1, 2] } } } }
signature { outputs { name: "y" tensor: "c" } }
'''
    sess = sluice.Session(graph, config=sluice.Config(optimization_level="none"))
    y = sess.run("y")
    y[:] = 7
    np.testing.assert_array_equal(sess.run("y"), [1, 2])


def test_run_from_several_threads(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path)
    expected = sess.run("probs", {"x": mlp_input})
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(50):
            batch = int(rng.integers(1, 9))
            x = rng.standard_normal((batch, 16)).astype(np.float32)
            y = sess.run("probs", {"x": x})
            if y.shape != (batch, 10) or not np.allclose(y.sum(axis=1), 1, atol=1e-5):
                errors.append(("bad result", seed))
            if not np.array_equal(sess.run("probs", {"x": mlp_input}), expected):
                errors.append(("mismatch", seed))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sess.stats()["runs"] >= 8 * 100


def _ticks_during(call):
    """Runs call() on this thread while another Python thread counts; returns
    how many ticks landed in the middle half of the call. A call that holds
    the GIL throughout lets none land there: the ticker runs only between
    bytecodes, and there are none inside it."""
    stamps = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=ticker)
    t.start()
    while not stamps:  # the ticker is running before the call starts
        time.sleep(0.001)
    start = time.perf_counter()
    call()
    end = time.perf_counter()
    stop.set()
    t.join()
    quarter = (end - start) / 4
    assert quarter > 0.005, "the call is too short to tell (< 20 ms)"
    return sum(1 for s in stamps if start + quarter <= s <= end - quarter)


def test_probe_sees_a_call_that_holds_the_gil():
    # sum over a range runs in C without a bytecode boundary, GIL held: the
    # probe below must count nothing in its middle, or it proves nothing.
    assert _ticks_during(lambda: sum(range(3_000_000))) == 0


def test_gil_released_while_running():
    # 2,000 Neg nodes on 256 Ki floats in one step on the CPU (a GPU would
    # finish it too soon to tell; 64 Ki floats took under the 20 ms the probe
    # needs on a 2-core VM): another Python thread must make progress in the
    # middle of it.
    sess = sluice.Session(identity_graph("float32", shape=(262144,), ops=("Neg",) * 2000),
                          config=sluice.Config(optimization_level="none"), device="cpu:0")
    x = np.ones(262144, np.float32)
    sess.run("y", {"x": x})  # plan and allocate outside the measured step
    assert _ticks_during(lambda: sess.run("y", {"x": x})) > 0


def test_timeout_stops_a_long_step_and_the_session_runs_on():
    # 300 Neg nodes on 64 Ki floats on the CPU (node by node; a GPU step
    # replaying a CUDA graph is checked only before the replay): a
    # microsecond is spent before the first node (planning), so the step
    # stops there; no timeout runs it whole.
    sess = sluice.Session(identity_graph("float32", shape=(65536,), ops=("Neg",) * 300),
                          config=sluice.Config(optimization_level="none"), device="cpu:0")
    x = np.ones(65536, np.float32)
    with pytest.raises(sluice.DeadlineExceededError, match="stopped before node 'n0' \\(Neg\\)"):
        sess.run("y", {"x": x}, timeout=1e-6)
    np.testing.assert_array_equal(sess.run("y", {"x": x}, timeout=600), x)
    with pytest.raises(sluice.InvalidArgumentError, match="timeout"):
        sess.run("y", {"x": x}, timeout=0)


def test_ctrl_c_stops_the_step_it_interrupts_and_the_session_runs_on():
    # 4,000 Neg nodes on 4 Mi floats (16 MiB in, 16 MiB out each) take
    # seconds on any machine; a SIGINT 50 ms in stops the step at its next
    # node and raises KeyboardInterrupt (without the cancellation it would
    # come only after the whole step). On the CPU: a GPU runs it in ms.
    sess = sluice.Session(identity_graph("float32", shape=(-1,), ops=("Neg",) * 4000),
                          config=sluice.Config(optimization_level="none"), device="cpu:0")
    x = np.ones(1 << 22, np.float32)
    # Python's own handler for the test, whatever the process inherited: a
    # shell starts a background job (`cmd &`, nohup) with SIGINT ignored,
    # and then no Ctrl-C reaches Python at all.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
        start = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            sess.run("y", {"x": x})
        elapsed = time.perf_counter() - start
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert elapsed < 1.0, elapsed
    small = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(sess.run("y", {"x": small}), small)


def test_device_argument_runs_on_the_cpu(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path, device="cpu:0")
    assert sess.devices == ["/cpu:0"]
    assert sess.run("probs", {"x": mlp_input}).shape == (4, 10)


def test_release_unused_memory_and_stats(mlp_path, mlp_input):
    sess = sluice.Session(mlp_path)
    sess.run("probs", {"x": mlp_input})
    assert sess.release_unused_memory() >= 0
    s = sess.stats()
    assert s["runs"] == 1 and s["plans_compiled"] == 1


def test_serve_is_for_the_other_ranks_of_a_job(mlp_path):
    # Alone, a session is rank 0 of 1, and serve (what the ranks other than
    # 0 of an mpirun job call) says it is not for this session.
    sess = sluice.Session(mlp_path)
    assert (sess.rank, sess.world_size) == (0, 1)
    with pytest.raises(sluice.FailedPreconditionError, match="one process"):
        sess.serve()
