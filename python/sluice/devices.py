"""The devices this machine offers sluice: the library's device report
(reports/device_report.h), the facts ``sluice devices --json`` prints.

    sluice.list_physical_devices("gpu")   # [] on a machine without a GPU
    sluice.devices()["cpu"]["cores"]
"""

from __future__ import annotations

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
    lists it with the reason)."""
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
    return [d for d in found if d.device_type == kind.upper()]


__all__ = ["PhysicalDevice", "devices", "list_physical_devices"]
