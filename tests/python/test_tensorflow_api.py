"""TensorFlow's names where TensorFlow users look: sluice.config's
list_physical_devices, set_memory_growth, set_logical_device_configuration
(MiB), list_logical_devices, set_visible_devices, and ``sluice.device``
for a GraphBuilder's nodes; setters after a session say what they affect."""

import warnings

import numpy as np
import pytest

import sluice


def test_logical_cpus_in_megabytes_show_in_list_logical_devices():
    cpu = sluice.config.list_physical_devices("CPU")[0]
    assert sluice.list_logical_devices("CPU") == [sluice.LogicalDevice("/cpu:0", "CPU")]
    sluice.config.set_logical_device_configuration(
        cpu, [sluice.LogicalDeviceConfiguration(memory_limit=64),
              sluice.LogicalDeviceConfiguration()])
    assert sluice.config.defaults().logical_cpus == [
        {"memory_limit": 64 << 20}, {}]
    assert [d.name for d in sluice.config.list_logical_devices("cpu")] == \
        ["/cpu:0", "/cpu:1"]
    assert sluice.config.get_logical_device_configuration("cpu") == [
        sluice.LogicalDeviceConfiguration(64), sluice.LogicalDeviceConfiguration(None)]


def test_logical_gpus_in_megabytes():
    sluice.config.set_logical_device_configuration(
        "gpu:0", [sluice.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
    assert sluice.config.defaults().gpu == [
        {"logical_devices": [{"memory_limit": 1 << 30}] * 2}]
    if not sluice.list_physical_devices("GPU"):
        # No GPU to split here: the CPU alone, as `sluice devices --config`.
        assert sluice.config.list_logical_devices() == [
            sluice.LogicalDevice("/cpu:0", "CPU")]
    else:
        gpus = sluice.config.list_logical_devices("GPU")
        assert [d.name for d in gpus][:2] == ["/gpu:0", "/gpu:1"]


def test_set_visible_devices_hides_gpus_but_never_the_cpu(mlp_path):
    sluice.config.set_visible_devices(sluice.list_physical_devices("CPU"))
    assert sluice.config.defaults().use_gpu is False
    assert sluice.config.get_visible_devices("GPU") == []
    assert sluice.list_logical_devices("GPU") == []
    assert sluice.Session(mlp_path).devices == ["/cpu:0"]
    with pytest.warns(UserWarning, match="the visible devices: changed"):
        sluice.config.set_visible_devices(["gpu:1", "cpu"])
    assert sluice.config.defaults().visible_gpus == [1]
    assert sluice.config.defaults().use_gpu is None
    with pytest.raises(sluice.InvalidArgumentError, match="cannot be hidden"):
        sluice.config.set_visible_devices([], "CPU")


def test_tensorflow_device_spellings_are_taken():
    sluice.config.set_memory_limit("/physical_device:GPU:1", 1 << 30)
    assert sluice.config.get_memory_limit("/device:GPU:1") == 1 << 30
    assert sluice.config.get_memory_limit("gpu:1") == 1 << 30


def test_experimental_names_are_the_same_functions():
    exp = sluice.config.experimental
    assert exp.set_memory_growth is sluice.config.set_memory_growth
    assert exp.VirtualDeviceConfiguration is sluice.LogicalDeviceConfiguration
    exp.set_memory_growth(sluice.PhysicalDevice("gpu:0", "GPU", 0, 0, {}), True)
    assert exp.get_memory_growth("gpu:0") is True


def test_setters_after_a_session_warn_what_they_affect(mlp_path):
    sluice.Session(mlp_path)
    with pytest.warns(UserWarning, match="changed for the sessions made from now on"):
        note = sluice.config.set_logical_device_configuration("cpu", 2)
    assert "logical devices of cpu" in note
    # ... and do it: TensorFlow would raise instead (a machine's GPUs stay).
    devices = sluice.Session(mlp_path).devices
    assert [d for d in devices if d.startswith("/cpu")] == ["/cpu:0", "/cpu:1"]


def test_device_scope_requests_devices_for_graph_builder_nodes():
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [None, 4])
    with sluice.device("/GPU:1"):
        a = b.relu(x, name="a")
        with b.device("/cpu:0"):
            c = b.relu(a, name="c")
            with sluice.device("/job:localhost/replica:0/task:0/device:GPU:0"):
                d = b.relu(c, name="d")
        e = b.relu(d, name="e")
    f = b.relu(e, name="f")
    b.output("y", f)
    text = b.to_text()
    devices = {}
    for block in text.split("node {")[1:]:
        name = block.split('name: "')[1].split('"')[0]
        devices[name] = block.split('device: "')[1].split('"')[0] if 'device: "' in block else ""
    assert devices["a"] == "/gpu:1" and devices["c"] == "/cpu:0"
    assert devices["d"] == "/gpu:0" and devices["e"] == "/gpu:1" and devices["f"] == ""
    # Soft placement runs it on this machine whatever it has.
    out = sluice.Session(b).run("y", {"x": np.ones((2, 4), np.float32)})
    assert out.shape == (2, 4)
    with pytest.raises(sluice.InvalidArgumentError, match="tpu"):
        with sluice.device("/tpu:0"):
            pass
