"""Session.placement(), sluice.place() and Session.bench()."""

import json

import numpy as np
import pytest

import sluice


def test_session_placement_is_what_place_prints(mlp_path):
    sess = sluice.Session(mlp_path)
    p = sess.placement()
    assert p.model == mlp_path
    names = {n.name for n in p.nodes}
    assert "fc1/relu" in names  # fc1's MatMul, bias Add and Relu: one FusedMatMul
    assert all(n.device.startswith("/cpu:") or n.device.startswith("/gpu:") for n in p.nodes)
    assert all(n.reason for n in p.nodes)
    # Every node on some device (the CPU here, a GPU where there is one).
    assert sum(d.nodes for d in p.devices) >= len([n for n in p.nodes if n.device])
    assert max(d.nodes for d in p.devices) >= 1
    assert p.estimated_step_seconds > 0
    assert p["optimization"]["level"] == "all"


def test_place_on_absent_hardware(mlp_path):
    p = sluice.place(mlp_path, devices="4xgpu:80GiB")
    assert [d.name for d in p.devices] == ["/gpu:0", "/gpu:1", "/gpu:2", "/gpu:3"]
    assert all(d.memory_limit == 80 * 2**30 for d in p.devices)
    assert {n.device for n in p.nodes} <= {d.name for d in p.devices}
    p = sluice.place(mlp_path, devices="2xgpu:16GiB,cpu", strategy="single",
                     optimization_level="none", batch=8)
    assert p.strategy == "single" and p.batch == 8


def test_place_errors(mlp_path):
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.place(mlp_path, devices="3xtpu")
    assert "tpu" in e.value.message
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.place(mlp_path, strategy="greedy")
    with pytest.raises(sluice.NotFoundError):
        sluice.place("/nonexistent/model.pb")


def test_place_on_tiny_devices_fails_with_resource_exhausted(examples):
    with pytest.raises(sluice.Error) as e:
        sluice.place(str(examples / "transformer_block.pb"), devices="gpu:1KiB")
    assert e.value.code in ("RESOURCE_EXHAUSTED", "INVALID_ARGUMENT")
    assert e.value.message


def test_bench_reports_what_the_cli_does(mlp_path, mlp_input, tmp_path):
    sess = sluice.Session(mlp_path)
    trace = tmp_path / "trace.json"
    r = sess.bench({"x": mlp_input}, warmup=1, runs=20, trace=str(trace))
    assert r.ok and r.runs == 20
    lat = r.latency_s
    assert 0 < lat["min"] <= lat.p50 <= lat.p90 <= lat.p99 <= lat["max"]
    assert r.steps_per_s > 0 and r.session_create_s > 0 and r.first_run_s > 0
    assert r.profile.top_ops and r.profile.top_nodes
    assert "latency: min" in r.text
    assert json.loads(trace.read_text())
    # No feeds: random inputs, as `sluice bench --random-inputs`.
    assert sluice.Session(mlp_path).bench(runs=3, seconds=0.1).runs == 3


def test_bench_io_device_keeps_feeds_and_results_there(mlp_path, mlp_input):
    # On the CPU the data is where the steps need it anyway; the report says
    # where it stayed. A device the session does not have is an error naming it.
    sess = sluice.Session(mlp_path)
    r = sess.bench({"x": mlp_input}, warmup=0, runs=2, io_device="cpu:0")
    assert r.runs == 2 and any("stay on cpu:0" in n for n in r.notes), r.notes
    if not sluice.list_physical_devices("gpu"):
        with pytest.raises(sluice.Error, match="gpu:0"):
            sess.bench({"x": mlp_input}, runs=1, io_device="gpu:0")


def test_bench_errors(mlp_path):
    sess = sluice.Session(mlp_path)
    with pytest.raises(sluice.InvalidArgumentError):
        sess.bench(runs=0)
    with pytest.raises(sluice.InvalidArgumentError):
        sess.bench({"x": np.ones((2, 3), np.float32)}, runs=1)
