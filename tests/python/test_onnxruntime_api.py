"""onnxruntime's Python API over sluice (sluice/ort.py): onnxruntime's own
CPU examples (its docs' "load and predict" with sigmoid.onnx and mul_1.onnx,
the shapes and names printed, run(None) and run(names), IO binding),
rewritten to import sluice, against onnxruntime itself on the same inputs.

onnxruntime runs in whichever environment has it: this one, or the
repository's .venv-onnx (scripts/setup.sh --onnx), in a subprocess; without
either, the outputs are compared with NumPy instead and the comparison with
onnxruntime is skipped with that reason.
"""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import sluice

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

pytestmark = pytest.mark.skipif(not sluice.with_onnx, reason="no ONNX import in this build")

ROOT = pathlib.Path(os.environ.get(
    "SLUICE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


# --- The models of onnxruntime's examples (onnxruntime.datasets), made here
# with onnx.helper as its files hold them, and one with a symbolic batch.

def sigmoid_model():
    """onnxruntime.datasets' sigmoid.onnx: y = Sigmoid(x), x float[3,4,5]."""
    g = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["y"])], "test_sigmoid",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)],
                             ir_version=8)


def mul_model():
    """onnxruntime.datasets' mul_1.onnx: Y = X * W, W an initializer."""
    w = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    g = helper.make_graph(
        [helper.make_node("Mul", ["X", "W"], ["Y"])], "mul test",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor("W", TensorProto.FLOAT, [3, 2], w.ravel())])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)],
                             ir_version=8)


def classifier_model():
    """A two-layer classifier with a symbolic batch 'N': logits, probs."""
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((4, 8)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    w2 = rng.standard_normal((8, 3)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["input", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel())
             for n, a in (("w1", w1), ("b1", b1), ("w2", w2))]
    g = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 3])],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             ir_version=8)


MODELS = {"sigmoid": sigmoid_model, "mul_1": mul_model, "classifier": classifier_model}
FEEDS = {
    "sigmoid": lambda rng: {"x": rng.random((3, 4, 5), dtype=np.float32)},
    "mul_1": lambda rng: {"X": np.array([[1, 2], [3, 4], [5, 6]], np.float32)},
    "classifier": lambda rng: {"input": rng.standard_normal((5, 4)).astype(np.float32)},
}


# --- onnxruntime, wherever it is ---------------------------------------------

_ORT_SCRIPT = r"""
import json, sys
import numpy as np
import onnxruntime as ort
facts = {}
for name in sys.argv[2:]:
    folder = sys.argv[1]
    sess = ort.InferenceSession(f"{folder}/{name}.onnx", providers=["CPUExecutionProvider"])
    outs = sess.run(None, dict(np.load(f"{folder}/{name}_feeds.npz")))
    np.savez(f"{folder}/{name}_ort.npz", *outs)
    facts[name] = {"inputs": [str(i) for i in sess.get_inputs()],
                   "outputs": [str(o) for o in sess.get_outputs()]}
print(json.dumps(facts))
"""


def _ort_python():
    try:
        import onnxruntime  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    candidate = ROOT / ".venv-onnx" / "bin" / "python"
    if candidate.exists():
        probe = subprocess.run([str(candidate), "-c", "import onnxruntime"],
                               capture_output=True)
        if probe.returncode == 0:
            return str(candidate)
    return None


def save(folder, name):
    path = folder / f"{name}.onnx"
    onnx.save(MODELS[name](), str(path))
    return path


@pytest.fixture(scope="module")
def onnxruntime_results(tmp_path_factory):
    """name -> (feeds, outputs, facts) from onnxruntime on the CPU, every
    model in one process."""
    python = _ort_python()
    if python is None:
        pytest.skip("no onnxruntime here or in .venv-onnx (scripts/setup.sh --onnx)")
    folder = tmp_path_factory.mktemp("ort")
    feeds = {}
    for name in MODELS:
        save(folder, name)
        feeds[name] = FEEDS[name](np.random.default_rng(0))
        np.savez(folder / f"{name}_feeds.npz", **feeds[name])
    done = subprocess.run([python, "-c", _ORT_SCRIPT, str(folder), *MODELS],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    results = {}
    for name in MODELS:
        arrays = np.load(folder / f"{name}_ort.npz")
        outs = [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
        results[name] = (feeds[name], outs, facts[name])
    return results


# --- onnxruntime's "load and predict", with sluice imported in its place ----

@pytest.mark.parametrize("name", sorted(MODELS))
def test_examples_give_onnxruntimes_results_and_names(tmp_path, name,
                                                      onnxruntime_results):
    feeds, want, facts = onnxruntime_results[name]
    path = save(tmp_path, name)
    rt = sluice  # the example's `import onnxruntime as rt`
    sess = rt.InferenceSession(str(path), providers=rt.get_available_providers())
    input_name = sess.get_inputs()[0].name
    got = sess.run(None, {input_name: feeds[input_name]})
    assert [str(i) for i in sess.get_inputs()] == facts["inputs"]
    assert [str(o) for o in sess.get_outputs()] == facts["outputs"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_examples_match_numpy_where_onnxruntime_is_absent(tmp_path):
    # The same examples against NumPy, so that they check something
    # wherever they run.
    rng = np.random.default_rng(0)
    x = FEEDS["sigmoid"](rng)["x"]
    sess = sluice.InferenceSession(str(save(tmp_path, "sigmoid")))
    (y,) = sess.run(["y"], {"x": x})
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-5)
    sess = sluice.InferenceSession(save(tmp_path, "mul_1").read_bytes())
    X = FEEDS["mul_1"](rng)["X"]
    np.testing.assert_allclose(sess.run(None, {"X": X})[0], X * X)


def test_node_args_print_as_onnxruntime_prints_them(tmp_path):
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")))
    (i,) = sess.get_inputs()
    assert (i.name, i.type, i.shape) == ("input", "tensor(float)", ["N", 4])
    assert repr(i) == "NodeArg(name='input', type='tensor(float)', shape=['N', 4])"
    assert [o.name for o in sess.get_outputs()] == ["logits", "probs"]


def test_run_with_names_returns_a_list_in_their_order(tmp_path):
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")))
    x = FEEDS["classifier"](np.random.default_rng(1))["input"]
    logits, probs = sess.run(None, {"input": x})
    probs2, logits2 = sess.run(["probs", "logits"], {"input": x})
    np.testing.assert_array_equal(probs, probs2)
    np.testing.assert_array_equal(logits, logits2)
    assert isinstance(sess.run(["probs"], {"input": x}), list)
    with pytest.raises(sluice.InvalidArgumentError, match="nope"):
        sess.run(["nope"], {"input": x})


def test_session_options_map_onto_the_config(tmp_path):
    so = sluice.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 3
    so.graph_optimization_level = sluice.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # accepted, no effect
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")), so,
                                   providers=["CPUExecutionProvider"])
    cfg = sluice.Config.from_text(sess.session.config_text)
    assert (cfg.intra_op_threads, cfg.inter_op_threads) == (2, 3)
    assert cfg.optimization_level == "NONE" and cfg.use_gpu is False
    so.execution_mode = sluice.ExecutionMode.ORT_SEQUENTIAL
    assert so.to_config().inter_op_threads == 1
    with pytest.raises(AttributeError, match="not an option sluice maps"):
        so.intra_op_threads = 1  # sluice's name, not onnxruntime's
    with pytest.raises(NotImplementedError):
        so.add_session_config_entry("session.use_env_allocators", "1")


def test_providers_and_their_options_map_onto_the_config(tmp_path):
    path = str(save(tmp_path, "classifier"))
    cuda = ("CUDAExecutionProvider", {"device_id": 0, "gpu_mem_limit": 2 << 30,
                                      "arena_extend_strategy": "kSameAsRequested",
                                      "use_tf32": 0})
    both = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    cfg = sluice.ort._providers_config(sluice.ort._provider_list(
        [cuda, "CPUExecutionProvider"], None), available=both)
    assert cfg.gpu == [{"memory_limit": 2 << 30}]
    assert cfg.allow_growth is True and cfg.allow_tf32 is False
    assert cfg.visible_gpus == [0] and cfg.use_gpu is None
    # The parallel-list form, as onnxruntime takes it.
    same = sluice.ort._providers_config(sluice.ort._provider_list(
        both, [cuda[1], {}]), available=both)
    assert same == cfg
    with pytest.raises(sluice.InvalidArgumentError, match="cudnn_nope"):
        sluice.InferenceSession(path, providers=[
            ("CUDAExecutionProvider", {"cudnn_nope": 1})])
    with pytest.warns(UserWarning, match="TensorrtExecutionProvider"):
        sess = sluice.InferenceSession(path, providers=[
            "TensorrtExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in sluice.get_available_providers():
        sess = sluice.InferenceSession(path, providers=["CUDAExecutionProvider"])
        assert sess.get_providers()[0] == "CUDAExecutionProvider"
    else:
        # As onnxruntime: CUDA asked for where there is none runs on the CPU.
        assert sluice.get_device() == "CPU"
        with pytest.warns(UserWarning, match="CUDAExecutionProvider is not available"):
            sess = sluice.InferenceSession(path, providers=[cuda])
        assert sess.get_providers() == ["CPUExecutionProvider"]


def test_io_binding_on_the_cpu(tmp_path):
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")),
                                   providers=["CPUExecutionProvider"])
    x = FEEDS["classifier"](np.random.default_rng(2))["input"]
    want = sess.run(["probs"], {"input": x})[0]
    binding = sess.io_binding()
    binding.bind_ortvalue_input("input", sluice.OrtValue.ortvalue_from_numpy(x))
    binding.bind_output("probs")
    sess.run_with_iobinding(binding)
    (out,) = binding.get_outputs()
    assert out.device_name() == "cpu" and out.shape() == [5, 3]
    assert out.data_type() == "tensor(float)"
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], want)
    binding.bind_cpu_input("input", x[:2])
    sess.run_with_iobinding(binding)
    # Another batch may take another kernel path: equal to rounding.
    np.testing.assert_allclose(binding.copy_outputs_to_cpu()[0], want[:2],
                               rtol=1e-5, atol=1e-7)
    with pytest.raises(NotImplementedError, match="preallocated"):
        binding.bind_ortvalue_output("probs", sluice.OrtValue.ortvalue_from_numpy(want))
    with pytest.raises(sluice.InvalidArgumentError, match="one device"):
        binding.bind_output("logits", "cuda", 0)


def test_io_binding_keeps_data_on_the_gpu(tmp_path):
    if "CUDAExecutionProvider" not in sluice.get_available_providers():
        # Without a GPU, binding to one names the device the session lacks.
        sess = sluice.InferenceSession(str(save(tmp_path, "classifier")))
        binding = sess.io_binding()
        x = FEEDS["classifier"](np.random.default_rng(3))["input"]
        with pytest.raises(sluice.InvalidArgumentError, match="gpu:0"):
            binding.bind_ortvalue_input(
                "input", sluice.OrtValue.ortvalue_from_numpy(x, "cuda", 0))
        return
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")),
                                   providers=["CUDAExecutionProvider"])
    x = FEEDS["classifier"](np.random.default_rng(3))["input"]
    want = sess.run(["probs"], {"input": x})[0]
    binding = sess.io_binding()
    binding.bind_ortvalue_input("input", sluice.OrtValue.ortvalue_from_numpy(x, "cuda", 0))
    binding.bind_output("probs", "cuda", 0)
    sess.run_with_iobinding(binding)
    (out,) = binding.get_outputs()
    assert out.device_name() == "cuda"
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def test_cuda_device_ids_are_cuda_ordinals(tmp_path):
    # A CUDAExecutionProvider with device_id 1 makes a session whose only
    # GPU, /gpu:0, is CUDA device 1: IO binding's device ids name CUDA
    # devices, as in onnxruntime. (Set by hand here: this check needs no GPU.)
    sess = sluice.InferenceSession(str(save(tmp_path, "classifier")))
    sess._cuda_device = 1
    assert sess._gpu_name(1) == "gpu:0"
    with pytest.raises(sluice.InvalidArgumentError, match="runs on CUDA device 1"):
        sess._gpu_name(0)
    sess._cuda_device = None  # no provider pinned: /gpu:N is CUDA device N
    assert sess._gpu_name(1) == "gpu:1"
