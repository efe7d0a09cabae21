"""Feeds and results that stay on a GPU, through DLPack (issue 16): CUDA
feeds read in place, ``output_device="gpu:0"`` results shared with
PyTorch and CuPy, no transfer through the host. Every test here needs
PyTorch with a CUDA GPU and a sluice built with CUDA, and skips without
them; the CPU-side checks (unsupported DLPack devices, output_device on
the CPU) are in test_session.py.

On the H200: build the wheel for the Python that has torch (and cupy),
install it there, and run
    python -m pytest -q tests/python/test_device_tensors.py
"""

import numpy as np
import pytest

import sluice
from conftest import identity_graph

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="PyTorch sees no CUDA GPU")


def _gpu_session(graph):
    sess = sluice.Session(graph)
    if "/gpu:0" not in sess.devices:
        pytest.skip(f"the session runs on {sess.devices} (sluice built "
                    "without CUDA, or no usable GPU)")
    return sess


def _neg_session(shape=(-1, 3)):
    return _gpu_session(identity_graph("float32", shape=shape, ops=("Neg",)))


def test_cuda_feed_and_gpu_results_share_memory_both_ways():
    sess = _neg_session()
    x = torch.arange(12, dtype=torch.float32, device="cuda:0").reshape(4, 3)
    fed_back, y = sess.run(["x", "y"], {"x": x}, output_device="gpu:0")
    assert isinstance(y, sluice.DeviceArray) and y.shape == (4, 3)
    assert y.dtype == "float32"
    assert fed_back.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    assert y.__dlpack_device__() == (2, 0)
    assert fed_back.data_ptr == x.data_ptr()
    # The feed, fetched back, is the caller's own memory: no copy either way.
    t = torch.from_dlpack(fed_back)
    assert t.data_ptr() == x.data_ptr()
    # A result is sluice's GPU buffer, shared: importing it twice gives the
    # same memory.
    ty = torch.from_dlpack(y)
    assert ty.device == x.device and ty.dtype == torch.float32
    assert torch.from_dlpack(y).data_ptr() == ty.data_ptr()
    assert torch.equal(ty, -x)
    # x is unchanged, and still the caller's.
    assert torch.equal(x, torch.arange(12, dtype=torch.float32, device="cuda:0").reshape(4, 3))


def test_cuda_feed_with_default_numpy_results():
    sess = _neg_session()
    x = torch.randn(5, 3, device="cuda:0")
    y = sess.run("y", {"x": x})
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, -x.cpu().numpy())


def test_gpu_results_feed_the_next_step_without_the_host():
    sess = _neg_session()
    x = torch.randn(2, 3, device="cuda:0")
    y = sess.run("y", {"x": x}, output_device="gpu:0")
    z = sess.run("y", {"x": y}, output_device="gpu:0")  # a DLPack feed
    assert torch.equal(torch.from_dlpack(z), x)


def test_a_result_outlives_the_session_and_the_feed():
    sess = _neg_session()
    x = torch.ones(3, 3, device="cuda:0")
    y = sess.run("y", {"x": x}, output_device="gpu:0")
    del sess, x
    assert torch.equal(torch.from_dlpack(y), -torch.ones(3, 3, device="cuda:0"))


def test_work_on_the_callers_stream_is_ordered_before_the_step():
    # sluice passes its compute stream to __dlpack__(stream=...), and torch
    # makes it wait for the current stream: no synchronize needed here.
    sess = _neg_session(shape=(-1, 4096))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.randn(4096, 4096, device="cuda:0")
        x = a
        for _ in range(8):  # long enough to be running when sluice starts
            x = torch.tanh(x @ a)
        want = -x
        y = sess.run("y", {"x": x}, output_device="gpu:0")
        got = torch.from_dlpack(y)
        assert torch.equal(got, want)


def test_strided_cuda_feed_is_refused_with_a_clear_message():
    sess = _neg_session()
    x = torch.randn(3, 4, device="cuda:0").t()  # [4, 3], not C-contiguous
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("y", {"x": x})
    assert "C-contiguous" in e.value.message
    np.testing.assert_array_equal(sess.run("y", {"x": x.contiguous()}),
                                  -x.cpu().numpy())


def test_wrong_dtype_cuda_feed_names_the_input():
    sess = _neg_session()
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sess.run("y", {"x": torch.ones(2, 3, dtype=torch.int32, device="cuda:0")})
    assert "input 'x' has dtype int32" in e.value.message


def test_one_gib_cuda_feed_makes_no_host_to_device_transfer():
    n = (1 << 30) // 4
    sess = _neg_session(shape=(-1,))
    links = lambda report: {l["link"]: l["bytes"] for l in report.profile["links"]}
    # A host feed is copied in (so the check below can fail)...
    small = links(sess.bench({"x": np.ones(1024, np.float32)}, warmup=0, runs=1))
    assert small.get("/cpu:0 -> /gpu:0", 0) == 1024 * 4
    # ...a 1 GiB tensor that lives on the GPU is not; only the result comes
    # back to the host (bench fetches to the host).
    x = torch.ones(n, dtype=torch.float32, device="cuda:0")
    big = links(sess.bench({"x": x}, warmup=0, runs=1))
    assert "/cpu:0 -> /gpu:0" not in big, big
    assert big.get("/gpu:0 -> /cpu:0") == n * 4
    # And with the result left on the GPU nothing crosses at all.
    y = sess.run("y", {"x": x}, output_device="gpu:0")
    assert torch.from_dlpack(y)[::1 << 20].eq(-1).all()
    # bench(io_device=...) as `sluice bench --io-device`: the host feed is
    # copied to the GPU once, before timing, and the steps copy nothing.
    kept = sess.bench({"x": np.ones(1024, np.float32)}, warmup=0, runs=2,
                      io_device="gpu:0")
    assert not links(kept), links(kept)
    assert any("stay on gpu:0" in n for n in kept.notes), kept.notes


def test_cupy_round_trip():
    cupy = pytest.importorskip("cupy")
    sess = _neg_session()
    x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    fed_back, y = sess.run(["x", "y"], {"x": x}, output_device="gpu:0")
    assert cupy.from_dlpack(fed_back).data.ptr == x.data.ptr
    cupy.testing.assert_array_equal(cupy.from_dlpack(y), -x)


def test_a_memory_limit_set_from_python_is_the_gpus_and_is_not_exceeded():
    limit = 64 << 20
    sess = sluice.Session(identity_graph("float32", shape=(-1,), ops=("Neg",)),
                          config=sluice.Config(memory_limit=limit, allow_growth=True))
    if "/gpu:0" not in sess.devices:
        pytest.skip(f"the session runs on {sess.devices}")
    gpu = [d for d in sess.placement().devices if d["name"] == "/gpu:0"]
    assert gpu and gpu[0]["memory_limit"] == limit, sess.placement().devices
    # A step within the limit runs, and its peak stays under it...
    small = np.ones(1 << 20, np.float32)  # 4 MiB in, 4 MiB out
    r = sess.bench({"x": small}, warmup=0, runs=2)
    peaks = [m for m in r.peak_memory if m["device"] == "/gpu:0"]
    assert peaks and peaks[0]["limit"] == limit
    assert 0 < peaks[0]["peak_bytes_in_use"] <= limit
    # ...one whose feed alone is twice the limit is refused, not run past it.
    with pytest.raises(sluice.ResourceExhaustedError):
        sess.run("y", {"x": np.ones(32 << 20, np.float32)})
