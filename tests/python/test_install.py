"""The package comes from the installed wheel and runs the CLI."""

import json
import pathlib
import shutil
import subprocess
import sys

import sluice
from conftest import ROOT


def test_imported_from_site_packages_not_the_source_tree():
    here = pathlib.Path(sluice.__file__).resolve()
    assert "site-packages" in here.parts
    assert not here.is_relative_to(ROOT / "python")


def test_version_and_build_facts():
    assert sluice.__version__ == "0.1.0"
    assert isinstance(sluice.with_cuda, bool)
    assert "float32" in sluice.dtypes and "bfloat16" in sluice.dtypes


def test_stub_for_every_public_name():
    pkg = pathlib.Path(sluice.__file__).parent
    stub = (pkg / "__init__.pyi").read_text()
    for name in sluice.__all__:
        assert name in stub, name
    assert (pkg / "py.typed").exists()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "sluice", *args],
                          capture_output=True, text=True, timeout=120)


def test_python_m_sluice_help_and_usage_error():
    r = run_cli("--help")
    assert r.returncode == 0 and "devices" in r.stdout
    r = run_cli("nonsense")
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_python_m_sluice_devices_json_matches_api():
    r = run_cli("devices", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cpu"]["cores"] == sluice.devices()["cpu"]["cores"]


def test_python_m_sluice_run(mlp_path, tmp_path):
    r = run_cli("run", mlp_path, "--random-inputs", "--output-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "probs.npy").exists()


def test_console_script_installed():
    script = pathlib.Path(sys.executable).parent / "sluice"
    assert script.exists() or shutil.which("sluice")
