"""sluice.Config, the process defaults and the environment overrides."""

import numpy as np
import pytest

import sluice


def test_config_maps_onto_runtime_config():
    c = sluice.Config(memory_limit="2GiB", allow_growth=False,
                      inter_op_threads=2, optimization_level="basic",
                      placement="single", precision="tf32",
                      logical_devices={"cpu": 2, "gpu:0": [0.25, 0.25]},
                      max_created_tensor_bytes=1 << 20)
    text = c.to_text()
    assert "gpu_memory_limit { bytes: 2147483648 }" in text
    assert "allow_growth: false" in text
    assert "inter_op_threads: 2" in text
    assert "optimization_level: OPTIMIZATION_BASIC" in text
    assert "placement_strategy: PLACEMENT_SINGLE" in text
    assert "allow_tf32: true" in text
    assert text.count("logical_cpus") == 2
    # Index 0 is proto3's default, which the text leaves out.
    assert "gpu { logical_devices { memory_limit { fraction: 0.25 } }" in text
    assert "max_created_tensor_bytes: 1048576" in text


def test_per_device_limits_and_fraction():
    text = sluice.Config(memory_limit={"gpu:1": 0.5, "/GPU:0": 1024}).to_text()
    assert "gpu { memory_limit { bytes: 1024 } }" in text
    assert "gpu { index: 1 memory_limit { fraction: 0.5 } }" in text


@pytest.mark.parametrize("kwargs, words", [
    ({"memory_limit": 1.5}, "fraction"),
    ({"inter_op_threads": -1}, "inter_op_threads"),
    ({"memory_limit": "lots"}, "memory_limit"),
    ({"placement": "random"}, "placement"),
    ({"optimization_level": "max"}, "optimization_level"),
    ({"conv_layout": "hwcn"}, "conv_layout"),
    ({"allow_growth": "yes"}, "allow_growth"),
    ({"logical_devices": {"tpu:0": [1]}}, "tpu"),
    ({"text": "no_such_field: 1"}, "no_such_field"),
])
def test_impossible_config_is_invalid_argument(kwargs, words):
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Config(**kwargs)
    assert e.value.code == "INVALID_ARGUMENT"
    assert words in e.value.message
    assert isinstance(e.value, ValueError)


def test_session_rejects_impossible_config_at_creation(mlp_path):
    # A logical GPU on a GPU index the machine does not have is only known
    # to be impossible when the session looks at the devices.
    cfg = sluice.Config(visible_gpus=[57], placement="manual", default_device="gpu:57")
    with pytest.raises(sluice.Error) as e:
        sluice.Session(mlp_path, config=cfg)
    assert e.value.code in ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND",
                            "UNAVAILABLE")


def test_config_from_file(tmp_path):
    p = tmp_path / "run.pbtxt"
    p.write_text("inter_op_threads: 3\n")
    assert "inter_op_threads: 3" in sluice.Config.from_file(str(p)).to_text()
    with pytest.raises(sluice.NotFoundError):
        sluice.Config.from_file(str(tmp_path / "missing.pbtxt"))


def test_process_defaults_apply_to_new_sessions(mlp_path):
    sluice.config.set_memory_growth("gpu:0", False)
    sluice.config.set_memory_limit("gpu", "1GiB")
    sluice.config.set_logical_device_configuration("cpu", 2)
    assert sluice.config.get_memory_growth("gpu") is False
    assert sluice.config.get_memory_limit("gpu") == 1 << 30
    sess = sluice.Session(mlp_path)
    assert "allow_growth: false" in sess.config_text
    assert "bytes: 1073741824" in sess.config_text
    assert sess.config_text.count("logical_cpus") == 2
    # The session's own config wins over the defaults.
    sess = sluice.Session(mlp_path, config=sluice.Config(allow_growth=True))
    assert "allow_growth: true" in sess.config_text
    with pytest.warns(UserWarning, match="the 2 sessions made before keep"):
        sluice.config.set_memory_limit("gpu", None)
    assert sluice.config.get_memory_limit("gpu") is None


def test_limit_for_a_missing_gpu_is_an_error_at_session_creation(mlp_path):
    sluice.config.set_memory_limit("gpu:0", "1GiB")
    assert "gpu { memory_limit { bytes: 1073741824 } }" in \
        sluice.config.effective(None).to_text()
    if sluice.list_physical_devices("gpu"):
        assert sluice.Session(mlp_path).run("probs", {"x": [[0.0] * 16]}).shape == (1, 10)
        return
    with pytest.raises(sluice.FailedPreconditionError) as e:
        sluice.Session(mlp_path)
    assert e.value.code == "FAILED_PRECONDITION" and "GPU" in e.value.message


def test_memory_growth_names_a_gpu():
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.config.set_memory_growth("cpu", True)
    with pytest.raises(sluice.InvalidArgumentError):
        sluice.config.set_memory_growth("gpu:0", "yes")
    sluice.config.set_memory_growth(sluice.PhysicalDevice(
        "gpu:0", "GPU", 0, 0, {}), True)
    assert sluice.config.get_memory_growth("gpu:0") is True


def test_environment_overrides_the_process_default(mlp_path, monkeypatch):
    sluice.config.set_memory_growth("gpu", True)
    monkeypatch.setenv("SLUICE_GPU_ALLOW_GROWTH", "false")
    monkeypatch.setenv("SLUICE_GPU_MEMORY_LIMIT", "0.5")
    sess = sluice.Session(mlp_path)
    assert "allow_growth: false" in sess.config_text
    assert "fraction: 0.5" in sess.config_text
    assert any("SLUICE_GPU_ALLOW_GROWTH" in line for line in sess.log)
    out = sess.run("probs", {"x": np.ones((1, 16), np.float32)})
    assert out.shape == (1, 10)


def test_bad_environment_value_is_an_error(mlp_path, monkeypatch):
    monkeypatch.setenv("SLUICE_GPU_ALLOW_GROWTH", "maybe")
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Session(mlp_path)
    assert "SLUICE_GPU_ALLOW_GROWTH" in e.value.message


@pytest.mark.parametrize("precision, field", [("float16", "PRECISION_FLOAT16"),
                                              ("bfloat16", "PRECISION_BFLOAT16")])
def test_reduced_precision_runs_the_model_in_that_type(mlp_path, mlp_input,
                                                       precision, field):
    assert f"precision: {field}" in sluice.Config(precision=precision).to_text()
    want_sess = sluice.Session(mlp_path, config=sluice.Config(use_gpu=False))
    sess = sluice.Session(mlp_path, config=sluice.Config(use_gpu=False,
                                                         precision=precision))
    feeds = {sess.inputs[0].name: mlp_input}
    want = want_sess.run(None, feeds)
    got = sess.run(None, feeds)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float32
        rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
        assert 0 < rel < 3e-2


def test_unknown_precision_is_invalid_argument():
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Config(precision="int4")
    assert e.value.message == (
        "precision: unknown value 'int4'; use MODEL, FLOAT16 or BFLOAT16 "
        "(or the full names PRECISION_MODEL, PRECISION_FLOAT16, PRECISION_BFLOAT16)")


def test_conv_layout_maps_onto_runtime_config():
    assert "conv_layout: CONV_LAYOUT_NHWC" in sluice.Config(conv_layout="nhwc").to_text()
    assert "conv_layout: CONV_LAYOUT_NCHW" in sluice.Config(conv_layout="NCHW").to_text()
    assert "conv_layout" not in sluice.Config().to_text()


def test_every_runtime_config_field_is_an_argument_and_an_attribute():
    # Config wraps the message: each field of proto/config.proto is there by
    # name, with no list of them in Python.
    sample = {"bool": True, "int": 3, "float": 0.5, "str": "/cpu:0",
              "memory_limit": "1GiB", "message": {}, "int[]": [0],
              "message[]": [{}]}
    names = [f[0] for f in sluice.Config.fields()]
    assert "cpu_convolutions" in names and "resource_limits.max_folded_bytes" in names
    for name, kind, values in sluice.Config.fields():
        value = values[-1] if kind == "enum" else sample[kind]
        c = sluice.Config()
        c.set(name, value)
        got = c.get(name)
        if kind == "memory_limit":
            assert got == 1 << 30
        elif kind != "message" and kind != "message[]":
            assert got == value, name
        assert sluice.Config.from_text(c.to_text()) == c, name


def test_enums_take_and_give_the_short_names_the_docs_use():
    c = sluice.Config(optimization_level="NONE", conv_layout="nhwc",
                      cpu_convolutions="CPU_CONVOLUTIONS_LOOPS")
    assert (c.optimization_level, c.conv_layout, c.cpu_convolutions) == \
        ("NONE", "NHWC", "LOOPS")
    assert "optimization_level: OPTIMIZATION_NONE" in c.to_text()
    assert "cpu_convolutions: CPU_CONVOLUTIONS_LOOPS" in c.to_text()
    with pytest.raises(sluice.InvalidArgumentError) as e:
        c.cpu_convolutions = "openmp"
    assert e.value.message.startswith(
        "cpu_convolutions: unknown value 'openmp'; use AUTO, ONEDNN or LOOPS")
    assert c.cpu_convolutions == "LOOPS"  # a rejected value changes nothing


def test_text_round_trip_and_the_library_parser_messages(tmp_path):
    text = ("optimization_level: basic\nresource_limits { max_folded_bytes: 9 }\n"
            "gpu { index: 1 memory_limit { fraction: 0.5 } }\n")
    c = sluice.Config.from_text(text)
    assert c.max_folded_bytes == 9 and c.optimization_level == "BASIC"
    assert c.gpu == [{"index": 1, "memory_limit": 0.5}]
    path = tmp_path / "run.pbtxt"
    c.save(str(path))
    assert sluice.Config.from_file(str(path)) == c
    # The parser's own position and message, as `--config` prints them.
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Config.from_text("inter_op_threads: 2\noptimization_level: MAX\n")
    assert e.value.message.startswith(
        "<sluice.Config text>:2:21: optimization_level: unknown value 'MAX'")


def test_unknown_field_lists_the_fields():
    with pytest.raises(sluice.InvalidArgumentError) as e:
        sluice.Config(inter_op_thread=2)
    assert "no field 'inter_op_thread'" in e.value.message
    assert "inter_op_threads" in e.value.message
    with pytest.raises(AttributeError):
        sluice.Config().no_such_field


def test_merged_lays_fields_over_and_merges_gpus_by_index():
    base = sluice.Config(inter_op_threads=4, memory_limit={"gpu:0": "1GiB"})
    over = sluice.Config(allow_growth=False, memory_limit={"gpu:1": 0.5})
    m = base.merged(over)
    assert m.inter_op_threads == 4 and m.allow_growth is False
    assert m.gpu == [{"memory_limit": 1 << 30}, {"index": 1, "memory_limit": 0.5}]


def test_setters_after_a_session_say_what_they_affect(mlp_path):
    assert sluice.config.set_memory_growth("gpu", True) is None  # none made yet
    sluice.Session(mlp_path)
    with pytest.warns(UserWarning):
        note = sluice.config.set_memory_growth("gpu", False)
    assert note == ("memory growth: changed for the sessions made from now on; "
                    "the session made before keeps its config")


def test_cluster_config_keeps_an_empty_cluster_and_its_timeouts():
    # `cluster {}` alone makes a session one rank of a job (docs/design.md
    # decision 41), as in the CLI's config files: the empty message must
    # survive the way to the library, and its fields round-trip.
    assert "cluster { }" in sluice.Config(cluster={}).to_text()
    assert "cluster" not in sluice.Config().to_text()
    c = sluice.Config(cluster={"step_timeout_seconds": 5,
                               "join_timeout_seconds": 30})
    text = c.to_text()
    assert "step_timeout_seconds: 5" in text
    assert "join_timeout_seconds: 30" in text
    assert sluice.Config.from_text(text) == c
