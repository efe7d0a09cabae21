"""sluice.devices() and list_physical_devices()."""

import pytest

import sluice


def test_devices_has_the_cli_facts():
    d = sluice.devices()
    assert {"cpu", "gpus", "peer_access", "notes", "cudnn"} <= set(d)
    assert d["cpu"]["cores"] >= 1
    assert d["cpu"]["memory_bytes"] > 0
    if not d["gpus"]:
        assert d["no_gpu_reason"]


def test_list_physical_devices_cpu_first():
    devs = sluice.list_physical_devices()
    assert devs[0].name == "cpu:0" and devs[0].device_type == "CPU"
    assert devs[0].memory_bytes == sluice.devices()["cpu"]["memory_bytes"]


def test_without_a_gpu_only_the_cpu_is_listed():
    usable = [g for g in sluice.devices()["gpus"] if g["usable"]]
    devs = sluice.list_physical_devices()
    assert len(devs) == 1 + len(usable)
    assert len(sluice.list_physical_devices("gpu")) == len(usable)
    if not usable:  # CI: no GPU
        assert [d.name for d in devs] == ["cpu:0"]
        assert sluice.list_physical_devices("GPU") == []


def test_kind_filter():
    assert [d.device_type for d in sluice.list_physical_devices("cpu")] == ["CPU"]
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.list_physical_devices("tpu")
    assert e.value.code == "INVALID_ARGUMENT" and "tpu" in e.value.message
