"""NumPy round trips for every dtype sluice supports."""

import numpy as np
import pytest

import sluice
from conftest import identity_graph

NUMPY = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
         "uint8", "uint16", "uint32", "uint64", "bool"]
ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
             "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int4",
             "uint4", "int2", "uint2"]


def test_every_sluice_dtype_is_covered():
    assert set(sluice.dtypes) == set(NUMPY) | set(ML_DTYPES)


def sample(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        return rng.integers(0, 2, (2, 3)).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
    return rng.standard_normal((2, 3)).astype(dtype)


@pytest.mark.parametrize("level", ["none", "all"])
@pytest.mark.parametrize("dtype", NUMPY)
def test_numpy_round_trip(dtype, level):
    sess = sluice.Session(identity_graph(dtype),
                          config=sluice.Config(optimization_level=level))
    assert sess.inputs[0].dtype == dtype
    x = sample(dtype)
    y = sess.run("y", {"x": x})
    assert y.dtype == np.dtype(dtype) and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64",
                                   "int32", "int64"])
def test_computed_results(dtype):
    sess = sluice.Session(identity_graph(dtype, ops=("Neg",)))
    x = sample(dtype) // 2 if dtype.startswith("int") else sample(dtype)
    np.testing.assert_array_equal(sess.run("y", {"x": x}), -x)


@pytest.mark.parametrize("dtype", ML_DTYPES)
def test_ml_dtypes_round_trip(dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if not hasattr(ml_dtypes, dtype):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {dtype}")
    t = np.dtype(getattr(ml_dtypes, dtype))
    values = np.array([[0, 1, 2], [1, 0.5, 2]], np.float32)
    if dtype == "float8_e8m0fnu":
        values = np.array([[1, 2, 4], [0.5, 8, 1]], np.float32)
    x = values.astype(t)
    sess = sluice.Session(identity_graph(dtype),
                          config=sluice.Config(optimization_level="none"))
    y = sess.run("y", {"x": x})
    assert y.dtype == t
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))
