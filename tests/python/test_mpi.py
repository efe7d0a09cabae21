"""One Python job over two processes under mpirun (decision 41): rank 0 runs
the MLP, split over both ranks by examples/cluster/mlp_2ranks.pbtxt, rank 1
serves it, and rank 0's result, kept after its session is gone, matches the
NumPy reference. The installed package opens MPI through its shim
(sluice/libsluice_mpi.so, decision 52). Skips where mpirun is missing or
sluice was built without MPI."""

import shutil
import subprocess
import sys
import textwrap

import pytest

import sluice

RANKS = textwrap.dedent("""
    import sys, numpy as np, sluice
    root = sys.argv[1]
    config = sluice.Config.from_file(root + "/examples/cluster/mlp_2ranks.pbtxt")
    s = sluice.Session(root + "/examples/mlp.pbtxt", config=config)
    assert s.world_size == 2
    if s.rank == 0:
        probs = s.run("probs", {"x": np.load(root + "/examples/mlp_input.npy")})
        del s  # the result outlives the session (a budgeted CPU's memory)
        want = np.load(root + "/examples/mlp_probs_expected.npy")
        assert np.allclose(probs, want, atol=1e-5), abs(probs - want).max()
        print("rank 0: probs match", flush=True)
    else:
        s.serve()
        print("rank 1: served", flush=True)
""")


def mpi_line():
    out = subprocess.run([sys.executable, "-m", "sluice", "devices"],
                         capture_output=True, text=True, timeout=60).stdout
    return next((l for l in out.splitlines() if l.startswith("MPI:")), "")


def test_two_ranks_under_mpirun(examples):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed (scripts/setup.sh installs openmpi-bin)")
    if "built without MPI" in mpi_line():
        pytest.skip("this sluice was built without MPI")
    r = subprocess.run(
        ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root",
         "--mca", "btl_vader_single_copy_mechanism", "none", "--bind-to", "none",
         sys.executable, "-c", RANKS, str(examples.parent)],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0: probs match" in r.stdout, r.stdout + r.stderr
    assert "rank 1: served" in r.stdout, r.stdout + r.stderr
