"""The installed wheel needs nothing outside itself and pip: protobuf, Abseil,
libonnx_proto and oneDNN come inside it (sluice.libs/, put there by
scripts/build_wheel.sh's auditwheel repair), never from the machine that
built it. scripts/python_test.sh installs that repaired wheel into a fresh
venv and runs these from /tmp."""

import glob
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import sluice
from sluice import _sluice

EXTENSION = pathlib.Path(_sluice.__file__).resolve()
WHEEL_LIBS = EXTENSION.parent.parent / "sluice.libs"
# The libraries the build links from Debian's packages.
BUNDLED = re.compile(r"^lib(protobuf|absl_|onnx|dnnl|gomp)")


def ldd(path):
    """{soname: resolved path or 'not found'} of `path`'s dependencies."""
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                         check=True).stdout
    deps = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (not found|\S+)", line)
        if m:
            deps[m.group(1)] = m.group(2)
    return deps


def test_installed_from_a_repaired_wheel():
    assert WHEEL_LIBS.is_dir(), (
        f"{WHEEL_LIBS} is missing: the installed sluice is not a repaired "
        "wheel (scripts/python_test.sh installs one from scripts/build_wheel.sh)")
    tags = next(EXTENSION.parent.parent.glob("sluice-*.dist-info")) / "WHEEL"
    assert "manylinux_2_" in tags.read_text()


def test_extension_links_protobuf_abseil_and_onnx_only_from_the_wheel():
    deps = ldd(EXTENSION)
    assert "not found" not in deps.values(), deps
    bundled = {name: path for name, path in deps.items() if BUNDLED.match(name)}
    # The extension does link them (the wheel's renamed copies).
    assert any(n.startswith("libprotobuf") for n in bundled), deps
    assert any(n.startswith("libabsl_") for n in bundled), deps
    if sluice.with_onnx:
        assert any(n.startswith("libonnx") for n in bundled), deps
    for name, path in bundled.items():
        assert pathlib.Path(path).resolve().parent == WHEEL_LIBS, (name, path)


def test_mpi_is_not_in_the_wheel_and_the_shim_takes_the_machines():
    """MPI must match the mpirun that starts a job, so the wheel carries only
    the shim (sluice/libsluice_mpi.so, decision 52), never a libmpi."""
    assert not [p for p in WHEEL_LIBS.iterdir()
                if re.match(r"lib(mpi|open-pal|open-rte|hwloc|event)", p.name)]
    assert not any(n.startswith("libmpi") for n in ldd(EXTENSION))
    report = subprocess.run([sys.executable, "-m", "sluice", "devices"],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    line = next(l for l in report.stdout.splitlines() if l.startswith("MPI:"))
    shim = EXTENSION.parent / "libsluice_mpi.so"
    if "built without MPI" in line:
        assert not shim.exists()
        return
    assert shim.exists(), f"a build with MPI ({line}) must ship {shim}"
    deps = ldd(shim)
    mpi = [n for n in deps if n.startswith("libmpi")]
    assert mpi, deps
    if deps[mpi[0]] == "not found":
        assert "not available here" in line and "libmpi" in line, line
    else:
        assert "MPI v" in line or "MPICH" in line, line


SESSION = textwrap.dedent("""
    import sys, numpy as np, sluice
    sess = sluice.Session(sys.argv[1])
    logits, probs = sess.run(None, {"x": np.load(sys.argv[2])})
    want = np.load(sys.argv[3])
    assert np.allclose(probs, want, atol=1e-4), abs(probs - want).max()
    maps = open("/proc/self/maps").read().split()
    print("\\n".join(sorted({p for p in maps if p.startswith("/")})))
""")


def session_command(examples):
    return [sys.executable, "-c", SESSION, str(examples / "mlp.pbtxt"),
            str(examples / "mlp_input.npy"), str(examples / "mlp_probs_expected.npy")]


def can_hide_system_libraries():
    """Whether this process may cover files in a private mount namespace."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def test_a_session_runs_and_maps_only_the_wheels_copies(examples):
    """One Python process (one start, ~1 s) runs the MLP and lists the files
    it mapped. Where a private mount namespace is allowed (root, CI), every
    Debian copy of the bundled libraries is covered by /dev/null first, as
    on a machine without them."""
    command = session_command(examples)
    if can_hide_system_libraries():
        system = sorted({os.path.realpath(p)
                         for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu")
                         for p in glob.glob(f"{d}/lib*.so*")
                         if BUNDLED.match(os.path.basename(p))})
        hide = "".join(f"mount --bind /dev/null {shlex.quote(p)} && " for p in system)
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   hide + shlex.join(command)]
    r = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    mapped = [pathlib.Path(p) for p in r.stdout.split()]
    bundled = [p for p in mapped if BUNDLED.match(p.name)]
    assert bundled
    assert all(p.parent == WHEEL_LIBS for p in bundled), bundled
