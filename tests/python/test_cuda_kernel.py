"""sluice.cuda_kernel: the CudaKernel graph it builds validates anywhere;
without a GPU, running it fails naming the node; on a GPU (skipped
elsewhere) it matches NumPy."""

import subprocess
import sys

import numpy as np
import pytest

import sluice

SAXPY = r'''
extern "C" __global__ void saxpy(const float* x, const float* y, float* out,
                                 long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.5f * x[i] + y[i];  // "quotes" and \ backslashes
}
'''

# |x| and, in a fixed [1] int32 output, the element count the kernel got.
ABS_AND_COUNT = r'''
template <typename T>
__global__ void abs_and_count(const T* x, T* absval, int* count, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) absval[i] = x[i] < 0 ? -x[i] : x[i];
  if (i == 0) count[0] = (int)n;
}
'''


# 2.5 * a + b as a graph: SAXPY's CPU fallback.
SAXPY_FALLBACK = """
node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "k" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2.5 } } } }
node { name: "m" op: "Mul" input: "a" input: "k" }
node { name: "o" op: "Add" input: "m" input: "b" }
signature { inputs { name: "a" } inputs { name: "b" } outputs { name: "o" tensor: "o" } }
"""


def has_gpu():
    return sluice.with_cuda and any(g["usable"] for g in sluice.devices()["gpus"])


needs_gpu = pytest.mark.skipif(not has_gpu(), reason="no usable GPU")
needs_no_gpu = pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")
needs_cuda_build = pytest.mark.skipif(not sluice.with_cuda,
                                      reason="a CPU-only build has no GPU kernels to plan with")


def inspect(text, tmp_path):
    """`sluice inspect` of a text model: builds and validates it, no GPU."""
    path = tmp_path / "model.pbtxt"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "sluice", "inspect", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_graph_text_validates_without_a_gpu(tmp_path):
    k = sluice.cuda_kernel(SAXPY, "saxpy", block=128, options=["-use_fast_math"])
    text = k.graph_text(["float32", np.float32], input_shapes=[[-1], None])
    assert 'op: "CudaKernel"' in text
    r = inspect(text, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "CudaKernel" in r.stdout


def test_source_round_trips_through_the_text_format(tmp_path):
    # Quotes, backslashes, tabs, newlines and non-ASCII survive the escaping.
    source = SAXPY + "// gr\u00f6\u00dfe \t tab\n"
    text = sluice.cuda_kernel(source, "saxpy").graph_text(["float32", "float32"])
    literal = text.split('key: "source" value { s: ')[1].split(" } }")[0]
    assert "\n" not in literal and "\t" not in literal
    r = inspect(text, tmp_path)
    assert r.returncode == 0, r.stderr


def test_bad_launch_rule_is_a_build_error_naming_the_node(tmp_path):
    k = sluice.cuda_kernel(SAXPY, "saxpy", block=(64, 64), node_name="my_saxpy")
    r = inspect(k.graph_text(["float32", "float32"]), tmp_path)
    assert r.returncode != 0
    assert "my_saxpy" in r.stdout + r.stderr and "4096 threads" in r.stdout + r.stderr


@needs_cuda_build
def test_the_placer_puts_the_node_on_a_gpu():
    k = sluice.cuda_kernel(SAXPY, "saxpy")
    text = k.graph_text(["float32", "float32"])
    report = sluice.place(text.encode(), devices="gpu:16GiB,cpu", format="pbtxt")
    nodes = {n["name"]: n for n in report.nodes}
    assert nodes["cuda_kernel"]["device"].startswith("/gpu:")


def test_outputs_take_an_input_shape_or_a_fixed_one(tmp_path):
    k = sluice.cuda_kernel(ABS_AND_COUNT, "abs_and_count<float>",
                           outputs=[(None, 0), ("int32", (1,))])
    text = k.graph_text(["float32"], input_shapes=[[5, 7]])
    r = inspect(text, tmp_path)
    assert r.returncode == 0, r.stderr
    with pytest.raises(sluice.InvalidArgumentError, match="needs a dtype"):
        sluice.cuda_kernel(SAXPY, "saxpy", outputs=[(None, (3,))]).graph_text(["float32"])
    with pytest.raises(sluice.InvalidArgumentError, match="has 1 inputs"):
        sluice.cuda_kernel(SAXPY, "saxpy", outputs=[(None, 1)]).graph_text(["float32"])


def test_arguments_are_checked_in_python():
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.cuda_kernel("", "k")
    with pytest.raises(sluice.InvalidArgumentError, match="1 to 3"):
        sluice.cuda_kernel(SAXPY, "saxpy", block=(1, 1, 1, 1))


@needs_no_gpu
def test_running_without_a_gpu_fails_naming_the_node():
    k = sluice.cuda_kernel(SAXPY, "saxpy", node_name="my_saxpy")
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(sluice.InvalidArgumentError) as e:
        k(x, x)
    message = str(e.value)
    assert "my_saxpy" in message and "CudaKernel" in message
    assert "runs only on a GPU" in message


@needs_no_gpu
def test_a_session_of_the_graph_fails_the_same_way(tmp_path):
    path = tmp_path / "saxpy.pbtxt"
    path.write_text(sluice.cuda_kernel(SAXPY, "saxpy").graph_text(["float32", "float32"]))
    with pytest.raises(sluice.InvalidArgumentError, match="runs only on a GPU"):
        sluice.Session(str(path))


def test_with_a_cpu_fallback_it_runs_anywhere():
    # On the CPU the fallback runs; on a GPU the kernel: the same values.
    k = sluice.cuda_kernel(SAXPY, "saxpy", cpu_fallback=SAXPY_FALLBACK)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    np.testing.assert_allclose(k(x, y), 2.5 * x + y, rtol=1e-6)
    cpu = sluice.cuda_kernel(SAXPY, "saxpy", cpu_fallback=SAXPY_FALLBACK,
                             config=sluice.Config(use_gpu=False))
    np.testing.assert_allclose(cpu(x, y), 2.5 * x + y, rtol=1e-6)


def saxpy_fallback_builder():
    fb = sluice.GraphBuilder()
    a = fb.input("a", "float32")
    b = fb.input("b", "float32")
    fb.output("o", a * 2.5 + b)
    return fb


def test_add_to_puts_the_node_in_a_graph_builder():
    k = sluice.cuda_kernel(SAXPY, "saxpy", cpu_fallback=saxpy_fallback_builder())
    g = sluice.GraphBuilder()
    x = g.input("x", "float32", [None, 3])
    y = g.input("y", "float32", [None, 3])
    z = k.add_to(g, x, y, name="my_saxpy")
    assert z.dtype == "float32" and z.shape == (None, 3)
    g.output("z", z * 2.0)
    text = g.to_text()
    assert 'op: "CudaKernel"' in text and 'name: "my_saxpy"' in text
    # Runs on the GPU where there is one, else the fallback on the CPU.
    sess = sluice.Session(g)
    x_v = np.arange(6, dtype=np.float32).reshape(2, 3)
    y_v = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(sess.run("z", {"x": x_v, "y": y_v}),
                               2 * (2.5 * x_v + y_v), rtol=1e-6)


def test_add_to_checks_the_node_as_it_is_added():
    g = sluice.GraphBuilder()
    x = g.input("x", "float32")
    with pytest.raises(sluice.InvalidArgumentError, match="4096 threads"):
        sluice.cuda_kernel(SAXPY, "saxpy", block=(64, 64)).add_to(g, x, x)
    with pytest.raises(sluice.InvalidArgumentError, match="GraphBuilder"):
        sluice.cuda_kernel(SAXPY, "saxpy", cpu_fallback=SAXPY_FALLBACK).add_to(g, x, x)


@needs_gpu
def test_saxpy_matches_numpy():
    k = sluice.cuda_kernel(SAXPY, "saxpy", block=128)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_007).astype(np.float32)
    y = rng.standard_normal(10_007).astype(np.float32)
    for _ in range(4):  # later steps replay as a CUDA graph
        np.testing.assert_allclose(k(x, y), 2.5 * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(k(x[:10], y[:10]), 2.5 * x[:10] + y[:10], rtol=1e-6)


@needs_gpu
def test_two_outputs_and_an_explicit_grid_match_numpy():
    k = sluice.cuda_kernel(ABS_AND_COUNT, "abs_and_count<double>",
                           outputs=[(None, 0), ("int32", (1,))], block=64, grid=40)
    x = np.linspace(-3, 3, 2000).reshape(40, 50)
    absval, count = k(x)
    np.testing.assert_array_equal(absval, np.abs(x))
    assert count.dtype == np.int32 and count.tolist() == [2000]


@needs_gpu
def test_a_compile_error_carries_the_log():
    # An undeclared name: NVRTC refuses it (where there is a GPU); without
    # one the node fails as any CudaKernel does, naming it.
    k = sluice.cuda_kernel(SAXPY.replace("2.5f * x[i]", "2.5f * no_such_name"),
                           "saxpy", node_name="broken")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        k(np.ones(4, np.float32), np.ones(4, np.float32))
    assert "broken" in str(e.value) and "error" in str(e.value)


@needs_gpu
def test_called_on_torch_cuda_tensors_it_reads_them_in_place_and_keeps_results_there():
    torch = pytest.importorskip("torch")
    k = sluice.cuda_kernel(SAXPY, "saxpy", block=128)
    x = torch.linspace(-1, 1, 4099, device="cuda:0")
    y = torch.arange(4099, dtype=torch.float32, device="cuda:0")
    for _ in range(3):  # later steps replay as a CUDA graph
        r = k(x, y)
        assert isinstance(r, sluice.DeviceArray)
        out = torch.from_dlpack(r)
        assert out.device == x.device
        torch.testing.assert_close(out, 2.5 * x + y, rtol=1e-6, atol=1e-6)
    # A host argument beside a CUDA one: the result still stays on the GPU.
    host_y = np.arange(4099, dtype=np.float32)
    out = torch.from_dlpack(k(x, host_y))
    torch.testing.assert_close(out.cpu(), (2.5 * x).cpu() + torch.from_numpy(host_y))
