"""Shared fixtures for the sluice Python tests (scripts/python_test.sh runs
them against the installed wheel, from outside the source tree)."""

import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(os.environ.get(
    "SLUICE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def examples():
    return EXAMPLES


@pytest.fixture(scope="session")
def mlp_path():
    return str(EXAMPLES / "mlp.pbtxt")


@pytest.fixture(scope="session")
def mlp_input():
    return np.load(EXAMPLES / "mlp_input.npy")


@pytest.fixture(autouse=True)
def _clean_defaults():
    # Each test starts as a fresh process: no defaults, no session made yet
    # (so a setter warns only after the test's own sessions).
    import sluice
    sluice.config.reset()
    sluice.config.sessions_started = 0
    yield
    sluice.config.reset()


_ENUMS = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE",
          "float8_e8m0fnu": "DT_FLOAT8_E8M0", "float4_e2m1fn": "DT_FLOAT4_E2M1"}


def identity_graph(dtype, shape=(-1, 3), ops=("Identity",)):
    """Text GraphDef: input x of `dtype` through `ops` to output y; `shape`
    None: an input of unknown rank."""
    enum = _ENUMS.get(dtype, "DT_" + dtype.upper())
    if shape is None:
        shape_text = "unknown_rank: true"
    else:
        shape_text = "dim: [" + ", ".join(str(d) for d in shape) + "]"
    text = [f'node {{ name: "x" op: "Input" attr {{ key: "dtype" value {{ type: {enum} }} }} '
            f'attr {{ key: "shape" value {{ shape {{ {shape_text} }} }} }} }}']
    prev = "x"
    for i, op in enumerate(ops):
        text.append(f'node {{ name: "n{i}" op: "{op}" input: "{prev}" }}')
        prev = f"n{i}"
    text.append(f'signature {{ inputs {{ name: "x" }} outputs {{ name: "y" tensor: "{prev}" }} }}')
    return "\n".join(text).encode()
