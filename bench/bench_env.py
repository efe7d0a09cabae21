"""What bench/run_suite.py and bench/peers.py share: the environment a
sluice binary needs, the GPUs it sees, and a description of the machine.

    from bench_env import tool_env, sluice_gpus, cpu_model, nvidia_smi_gpus
"""
import json
import os
import platform
import shutil
import subprocess


def tool_env(binary):
    """The environment for a sluice binary: a `lib` folder beside its `bin`
    (scripts/prepare_gpu.sh's .gpu/ layout) and CUDA's libraries on
    LD_LIBRARY_PATH."""
    env = dict(os.environ)
    extra = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))), "lib"),
             "/usr/local/cuda/lib64"]
    extra = [p for p in extra if os.path.isdir(p)]
    if extra:
        env["LD_LIBRARY_PATH"] = ":".join(
            extra + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env


def sluice_gpus(sluice):
    """GPU names sluice sees, and why none when it sees none."""
    try:
        r = subprocess.run([sluice, "devices", "--json"], capture_output=True,
                           text=True, env=tool_env(sluice), timeout=120)
        d = json.loads(r.stdout)
        return [g.get("name", "?") for g in d.get("gpus", [])], \
            d.get("no_gpu_reason", "")
    except Exception as e:  # a missing or broken binary: say so, go on
        return [], f"sluice devices failed: {e}"


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (platform's guess otherwise)."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def nvidia_smi_gpus():
    """"name, memory, driver" per GPU from nvidia-smi; empty without it."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
             "--format=csv,noheader"], capture_output=True, text=True,
            timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]
