"""Where the CUDA libraries are looked for (sluice/_libraries.py over
device/dynamic_library.h): the nvidia-* pip packages on sys.path first. And
without a usable GPU, list_physical_devices("GPU") says why."""

import sys
import warnings

import pytest

import sluice
from sluice import _libraries, _sluice


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A site-packages folder laid out as pip installs NVIDIA's packages,
    put on sys.path; the extension's roots are restored afterwards."""
    site = tmp_path / "site-packages"
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "plain"), str(site), str(site)])
    yield site
    monkeypatch.undo()
    _libraries.register()


def test_roots_are_the_sys_path_folders_holding_nvidia_each_once(fake_site):
    assert _libraries.package_roots() == [str(fake_site)]


def test_register_hands_the_package_lib_folders_to_the_extension(fake_site):
    _libraries.register()
    assert _sluice.package_library_dirs() == [
        str(fake_site / "nvidia" / "cu13" / "lib"),
        str(fake_site / "nvidia" / "cudnn" / "lib")]


def test_the_current_folder_is_never_a_root(tmp_path, monkeypatch):
    (tmp_path / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [""])
    assert _libraries.package_roots() == []


def test_without_a_usable_gpu_listing_gpus_warns_why():
    if any(g["usable"] for g in sluice.devices()["gpus"]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert sluice.list_physical_devices("GPU")
        return
    with pytest.warns(RuntimeWarning, match="no usable GPU: .+") as w:
        assert sluice.list_physical_devices("GPU") == []
    reason = sluice.devices()["no_gpu_reason"] or "not usable"
    assert any(reason in str(x.message) for x in w)
