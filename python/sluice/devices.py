"""The devices this machine offers sluice: the library's device report
(reports/device_report.h), the facts ``sluice devices --json`` prints.

    sluice.list_physical_devices("gpu")   # [] on a machine without a GPU
    sluice.devices()["cpu"]["cores"]
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, NamedTuple, Optional

from sluice import _sluice
from sluice.errors import InvalidArgumentError


class PhysicalDevice(NamedTuple):
    """One device: ``name`` ("cpu:0", "gpu:1", usable as a device argument
    anywhere), ``device_type`` ("CPU" or "GPU"), ``index``, its memory in
    bytes, and every fact discovery found (``details``, the entry of
    :func:`devices`)."""

    name: str
    device_type: str
    index: int
    memory_bytes: int
    details: Dict[str, Any]


def devices() -> Dict[str, Any]:
    """What ``sluice devices --json`` prints: ``cpu`` (model_name, cores,
    memory_bytes, available_bytes), ``gpus`` (index, name,
    compute_capability, total_memory_bytes, free_memory_bytes, sm_count,
    pci_bus_id, usable, unusable_reason), ``peer_access``, ``no_gpu_reason``
    (when there is no GPU), ``cudnn`` and ``notes``."""
    return _sluice.devices()


def list_physical_devices(kind: Optional[str] = None) -> List[PhysicalDevice]:
    """The CPU and the usable GPUs, as TensorFlow's
    ``tf.config.list_physical_devices``; ``kind`` "cpu" or "gpu" (any case)
    keeps one kind. A GPU this build cannot use is left out (``devices()``
    lists it with the reason); when ``kind`` is "gpu" and none is usable, a
    RuntimeWarning says why (no CUDA in this build, no driver, no cuBLAS:
    ``pip install sluice[cuda]``), and sessions run on the CPU."""
    if kind is not None and kind.lower() not in ("cpu", "gpu"):
        raise InvalidArgumentError(f"kind '{kind}': expected 'cpu', 'gpu' or None")
    facts = devices()
    found = [PhysicalDevice("cpu:0", "CPU", 0, facts["cpu"]["memory_bytes"],
                            facts["cpu"])]
    for gpu in facts["gpus"]:
        if gpu.get("usable", False):
            found.append(PhysicalDevice(f"gpu:{gpu['index']}", "GPU",
                                        gpu["index"], gpu["total_memory_bytes"],
                                        gpu))
    if kind is None:
        return found
    kept = [d for d in found if d.device_type == kind.upper()]
    if not kept and kind.upper() == "GPU":
        warnings.warn(f"no usable GPU: {no_gpu_reason(facts)}", RuntimeWarning,
                      stacklevel=2)
    return kept


def no_gpu_reason(facts: Optional[Dict[str, Any]] = None) -> str:
    """Why sluice uses no GPU here, in one line ("" when some GPU is
    usable): discovery's reason when no GPU is listed, else each listed
    GPU's reason for not being usable."""
    facts = devices() if facts is None else facts
    gpus = facts["gpus"]
    if any(g.get("usable", False) for g in gpus):
        return ""
    if not gpus:
        return facts.get("no_gpu_reason", "no GPU found")
    return "; ".join(f"gpu:{g['index']}: {g.get('unusable_reason', 'not usable')}"
                     for g in gpus)


__all__ = ["PhysicalDevice", "devices", "list_physical_devices"]
