"""Property tests of the Python API under hypothesis: whatever a caller
hands `Session.run` (any dtype, shape and strides, DLPack producers that
behave or lie, arguments of the wrong Python type, feeds another thread
writes to during the step), the step either returns the right values or
raises an exception that says what was wrong; it never crashes the
interpreter.

Bounded for CI: every test draws a fixed number of examples, derandomized
(the same ones on every run, so a failure reproduces), with no deadline (a
loaded 2-core CI machine is slow); sessions are made once per graph and
reused. The whole file takes a few seconds.
"""

import enum
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sluice
from conftest import identity_graph

NUMPY = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
         "uint8", "uint16", "uint32", "uint64", "bool"]

# What a bad argument may raise: sluice's own errors (InvalidArgumentError
# is also a ValueError), or TypeError for an argument of the wrong Python
# type (Session.run's checks).
REFUSALS = (sluice.Error, TypeError)


def bounded(n):
    return settings(max_examples=n, deadline=None, derandomize=True,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


_SESSIONS = {}


def session(dtype, ops=("Identity",)):
    """One session per (dtype, ops), made on first use and kept: the
    examples run steps, not session set-ups."""
    key = (dtype, ops)
    if key not in _SESSIONS:
        _SESSIONS[key] = sluice.Session(identity_graph(dtype, shape=None, ops=ops),
                                        config=sluice.Config(optimization_level="none"),
                                        device="cpu:0")
    return _SESSIONS[key]


def same_bits(got, want):
    """Equal element for element, bit for bit (NaNs included)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    raw = np.dtype(f"u{want.dtype.itemsize}")
    np.testing.assert_array_equal(contiguous(got).view(raw), contiguous(want).view(raw))


def contiguous(x):
    """A C-contiguous copy (np.ascontiguousarray makes a scalar 1-D)."""
    return np.array(x, order="C", copy=True)


# Arrays: a dtype, a shape, values from random bytes (every bit pattern:
# NaNs, infinities, subnormals), then a view of them with other strides.

@st.composite
def host_arrays(draw, dtypes=st.sampled_from(NUMPY)):
    dtype = np.dtype(draw(dtypes))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=5)))
    n = int(np.prod(shape, dtype=np.int64))
    raw = draw(st.binary(min_size=n * dtype.itemsize, max_size=n * dtype.itemsize))
    if dtype == np.bool_:
        base = (np.frombuffer(raw, np.uint8) & 1).astype(bool).reshape(shape)
    else:
        base = np.frombuffer(raw, dtype).reshape(shape).copy()
        if dtype.itemsize > 1 and draw(st.integers(0, 5)) == 0:
            base = base.astype(dtype.newbyteorder())  # the same values, swapped bytes
    return draw(views_of(base))


@st.composite
def views_of(draw, base):
    """`base` as it is, or one of the layouts NumPy makes without copying:
    reversed or stepped axes, a transpose, Fortran order, a broadcast axis
    (stride 0), a read-only array, or memory off the element alignment."""
    kind = draw(st.sampled_from(["as is", "steps", "transpose", "fortran",
                                 "broadcast", "read-only", "misaligned"]))
    if kind == "steps" and base.ndim > 0:
        index = tuple(slice(None, None, draw(st.sampled_from([1, 2, -1, -2])))
                      for _ in range(base.ndim))
        return np.repeat(np.repeat(base, 2, axis=0), 1, axis=-1)[index]
    if kind == "transpose":
        return base.transpose(draw(st.permutations(range(base.ndim))))
    if kind == "fortran":
        return np.asfortranarray(base)
    if kind == "broadcast":
        return np.broadcast_to(base, (draw(st.integers(0, 3)),) + base.shape)
    if kind == "read-only":
        view = base.view()
        view.flags.writeable = False
        return view
    if kind == "misaligned" and base.dtype.itemsize > 1:
        store = np.zeros(base.nbytes + 1, np.uint8)
        view = store[1:].view(base.dtype).reshape(base.shape)
        view[...] = base
        return view
    return base


@bounded(200)
@given(x=host_arrays(), graph_dtype=st.sampled_from(NUMPY), same=st.booleans())
def test_any_host_array_comes_back_bit_for_bit_or_is_refused(x, graph_dtype, same):
    dtype = x.dtype.name if same else graph_dtype
    sess = session(dtype)
    if dtype != x.dtype.name:
        with pytest.raises(sluice.InvalidArgumentError, match="x"):
            sess.run("y", {"x": x})
        return
    same_bits(sess.run("y", {"x": x}), native(x))


def native(x):
    """`x` C-contiguous in the machine's byte order: what a step returns."""
    return contiguous(x).astype(x.dtype.newbyteorder("="))


@bounded(40)
@given(rank=st.integers(0, 64), seed=st.integers(0, 2**32 - 1))
def test_ranks_past_the_limit_are_refused_by_name(rank, seed):
    # NumPy allows 64 dimensions, sluice 32: a bigger feed is refused before
    # the step, never written past a fixed-size array of dimensions.
    dims = [1] * rank
    if rank:
        dims[seed % rank] = 2
    x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
    sess = session("float32")
    if rank > 32:
        with pytest.raises(sluice.InvalidArgumentError, match="rank"):
            sess.run("y", {"x": x})
    else:
        same_bits(sess.run("y", {"x": x}), x)


@bounded(60)
@given(data=st.data())
def test_ml_dtypes_arrays_come_back_bit_for_bit(data):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    names = [n for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4")
             if hasattr(ml_dtypes, n)]
    name = data.draw(st.sampled_from(names))
    dtype = np.dtype(getattr(ml_dtypes, name))
    bits = data.draw(host_arrays(st.just(f"uint{8 * dtype.itemsize}")))
    if name in ("int4", "uint4"):
        bits = bits & 0x7  # a value both 4-bit types hold
    x = data.draw(views_of(contiguous(bits).view(dtype)))
    same_bits(session(name).run("y", {"x": x}), contiguous(x))


# DLPack producers: objects with __dlpack__ / __dlpack_device__ (no
# __array_interface__, so sluice asks them), honest or not.

class ProducerError(RuntimeError):
    """Raised by a producer on purpose: sluice lets it through."""


class Producer:
    def __init__(self, array, device, capsule, stream_arg):
        self._array = array
        self._device = device
        self._capsule = capsule
        self._stream_arg = stream_arg

    def __dlpack_device__(self):
        if self._device == "raises":
            raise ProducerError("no device")
        return self._device

    def __dlpack__(self, **kwargs):
        if kwargs and not self._stream_arg:
            raise TypeError("__dlpack__() takes no stream")
        if self._capsule == "numpy":
            return self._array.__dlpack__()
        if self._capsule == "consumed":
            capsule = self._array.__dlpack__()
            np.from_dlpack(_Capsule(capsule))  # now "used_dltensor"
            return capsule
        if self._capsule == "raises":
            raise ProducerError("no capsule")
        return self._capsule  # not a capsule at all


class _Capsule:
    """Hands NumPy a capsule made already."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)


DEVICES = st.one_of(
    st.sampled_from([(1, 0), (3, 0)]),                     # host memory
    st.tuples(st.sampled_from([2, 4, 7, 10, 13, 14, 99, -1]), st.integers(-1, 9)),
    st.sampled_from(["raises", None, "cpu", (1,), (1, "0"), (1.5, 0), [1, 0],
                     (2**70, 0)]))


@bounded(150)
@given(x=host_arrays(st.sampled_from(["float32", "int64", "bool"])),
       device=DEVICES,
       capsule=st.sampled_from(["numpy", "numpy", "consumed", "raises", None, 7, "capsule"]),
       stream_arg=st.booleans())
def test_dlpack_producers_give_their_array_or_an_error(x, device, capsule, stream_arg):
    sess = session(x.dtype.name)
    feed = Producer(x, device, capsule, stream_arg)
    # NumPy's __dlpack__ exports no read-only array (DLPack before 1.0
    # cannot say so) and no byte-swapped one: then the producer fails.
    honest = (device in [(1, 0), (3, 0)] and capsule == "numpy" and x.flags.writeable
              and x.dtype.isnative)
    try:
        y = sess.run("y", {"x": feed})
    except (ProducerError,) + REFUSALS as e:
        assert not honest, f"an honest host producer was refused: {e!r}"
        assert str(e)
        return
    assert honest, "a dishonest producer's feed was taken"
    same_bits(y, native(x))


# Arguments of the wrong Python type, anywhere run() takes one.

ODD = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.complex_numbers(),
              st.text(max_size=5), st.binary(max_size=5),
              st.sampled_from([object(), np.float32(1.5), np.int8(-3), Ellipsis,
                               np.array(["a", "bc"]), np.array([{"a": 1}], dtype=object),
                               np.zeros(3, dtype=[("a", "f4"), ("b", "i2")]),
                               np.array(["2024-01-01"], dtype="datetime64[D]"),
                               np.zeros(2, np.complex64), np.float32, range(3),
                               memoryview(b"abcd"), bytearray(b"\x00\x01")])),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.tuples(children, children),
                               st.dictionaries(st.text(max_size=3), children, max_size=2)),
    max_leaves=6)


# A Python float past float32's range becomes inf, with NumPy's warning.
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@bounded(250)
@given(fetches=st.one_of(st.none(), st.just("y"), st.just(["y", "y"]), ODD),
       feeds=st.one_of(st.dictionaries(st.sampled_from(["x", "y", "", "x:0"]) | st.integers(),
                                       ODD, max_size=2),
                       st.dictionaries(st.just("x"), ODD, min_size=1), ODD),
       output_device=st.one_of(st.none(), st.sampled_from(["cpu", "gpu:0", "tpu:3", "", "/cpu:0"]),
                               ODD),
       timeout=st.one_of(st.none(), st.floats(), st.integers(), ODD))
def test_wrong_types_anywhere_raise_and_the_session_runs_on(fetches, feeds, output_device,
                                                           timeout):
    sess = session("float32", ("Neg",))
    try:
        sess.run(fetches, feeds, output_device=output_device, timeout=timeout)
    except REFUSALS as e:
        assert str(e)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(sess.run("y", {"x": x}), -x)


@bounded(60)
@given(model=ODD, config=st.one_of(st.none(), ODD), device=st.one_of(st.none(), ODD),
       dims=st.one_of(st.none(), ODD))
def test_sessions_from_wrong_types_raise(model, config, device, dims):
    assume(not isinstance(model, str))  # a path: the file system's business
    with pytest.raises(REFUSALS) as e:
        sluice.Session(model, config=config, device=device, dims=dims)
    assert str(e.value)


# Feeds written to, reshaped, resized and dropped by another thread while
# steps run on them: each step reads values that were in the feed at some
# point (no torn memory, no use after free), resizing a borrowed feed is
# refused by NumPy, and nothing crashes.

@bounded(16)
@given(n=st.sampled_from([1, 4096, 65536]), seed=st.integers(0, 2**16),
       mutation=st.sampled_from(["fill", "reshape", "resize", "drop", "bytearray"]))
def test_feeds_mutated_during_steps_by_another_thread(n, seed, mutation):
    values = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
    sess = session("float32", ("Neg",) * 8)
    bsess = session("uint8", ("Identity",) * 8)
    feed = np.full(n, values[0], np.float32)
    buffer = bytearray(n)
    feeds = {"x": feed}
    stop = threading.Event()
    errors = []

    def mutate():
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            try:
                if mutation == "fill":
                    feed[...] = values[rng.integers(len(values))]
                elif mutation == "reshape":
                    feed.shape = (n,) if feed.ndim == 2 else (1, n)
                elif mutation == "resize":
                    feed.resize(2 * n)  # refused while a step borrows it
                elif mutation == "drop":
                    feeds.pop("x", None)
                    feeds["x"] = np.full(n, values[rng.integers(len(values))], np.float32)
                else:
                    buffer.extend(b"\x01")
                    del buffer[-1:]
            except (ValueError, BufferError):
                pass  # NumPy and bytearray refuse to move memory in use

    def step(k):
        try:
            for _ in range(20):
                if mutation == "bytearray":
                    out = bsess.run("y", {"x": buffer})
                    assert out.dtype == np.uint8 and np.all(out <= 1)
                    continue
                if mutation == "drop":  # the dict itself, changing under run()
                    try:
                        y = sess.run("y", feeds)
                    except sluice.InvalidArgumentError as e:
                        assert "missing input 'x'" in e.message  # read between pop and set
                        continue
                else:
                    y = sess.run("y", {"x": feed})
                assert y.size == n
                assert np.isin(y, values).all(), np.unique(y)
        except Exception as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)

    mutator = threading.Thread(target=mutate)
    steppers = [threading.Thread(target=step, args=(k,)) for k in range(3)]
    mutator.start()
    for t in steppers:
        t.start()
    for t in steppers:
        t.join()
    stop.set()
    mutator.join()
    assert errors == []


# What the properties above found, kept as plain cases.

def test_a_scalar_feed_stays_a_scalar():
    # Lists, Python numbers and ml_dtypes arrays go through a NumPy
    # conversion that once made every 0-d feed 1-d.
    assert session("float32").run("y", {"x": 2.5}).shape == ()
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array(1.5, ml_dtypes.bfloat16)
    y = session("bfloat16").run("y", {"x": x})
    assert y.shape == () and y.dtype == x.dtype and y == x


def test_a_feed_of_rank_33_is_refused_not_written_past_the_dimensions():
    with pytest.raises(sluice.InvalidArgumentError,
                       match="feed 'x': an array of rank 33: sluice tensors have at most 32"):
        session("float32").run("y", {"x": np.zeros((1,) * 33, np.float32)})


def test_a_dlpack_device_that_is_not_a_pair_of_ints_is_named():
    feed = Producer(np.zeros(2, np.float32), None, "numpy", False)
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"feed 'x': its __dlpack_device__\(\) returned None"):
        session("float32").run("y", {"x": feed})


class DLDeviceType(enum.IntEnum):
    """As torch's __dlpack_device__ returns it (an IntEnum, not an int)."""
    kDLCPU = 1
    kDLCUDA = 2


def test_a_dlpack_device_of_int_subclasses_is_read():
    x = np.arange(4, dtype=np.float32)
    feed = Producer(x, (DLDeviceType.kDLCPU, 0), "numpy", True)
    same_bits(session("float32").run("y", {"x": feed}), x)
    # bool is an int subclass too, but no device type.
    with pytest.raises(sluice.InvalidArgumentError, match=r"returned \(True, 0\)"):
        session("float32").run("y", {"x": Producer(x, (True, 0), "numpy", True)})


def test_wrong_python_types_name_the_argument():
    sess = session("float32")
    with pytest.raises(TypeError, match="feeds must be a mapping"):
        sess.run("y", [np.zeros(2, np.float32)])
    with pytest.raises(TypeError, match="feeds must be a mapping"):
        sess.run("y", np.array(["a", "bc"]))  # no truth value to test first
    with pytest.raises(TypeError, match="a feed name must be a str, not int"):
        sess.run("y", {0: np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="fetches must be a name"):
        sess.run(3, {"x": np.zeros(2, np.float32)})
    with pytest.raises(sluice.InvalidArgumentError, match="feed 'x': an array of dtype <U2"):
        sess.run("y", {"x": np.array(["ab"])})
    with pytest.raises(sluice.InvalidArgumentError, match="feed 'x': NumPy cannot make a float32 array of list"):
        sess.run("y", {"x": [[1.0], [2.0, 3.0]]})
    with pytest.raises(TypeError, match="bench: feeds must be a mapping"):
        sess.bench("x", runs=1, warmup=0)
    with pytest.raises(sluice.InvalidArgumentError, match="feed 'x': NumPy cannot make"):
        sess.bench({"x": object()}, runs=1, warmup=0)
    # No limit: an infinite timeout once overflowed the deadline's clock.
    np.testing.assert_array_equal(sess.run("y", {"x": [1.0]}, timeout=float("inf")), [1.0])
