"""Runtime configuration the TensorFlow way: a :class:`Config` per session,
and process defaults every later session starts from.

    sluice.config.set_memory_growth("gpu:0", True)          # process default
    sluice.config.set_memory_limit("gpu:0", "8GiB")
    sess = sluice.Session("model.onnx",
                          config=sluice.Config(inter_op_threads=4))

A Config maps onto sluice's RuntimeConfig (proto/config.proto); ``to_text()``
shows the text proto it becomes. Precedence, lowest first: the process
defaults set here, the session's Config, then the SLUICE_* environment
variables (SLUICE_GPU_ALLOW_GROWTH, SLUICE_GPU_MEMORY_LIMIT,
SLUICE_GPU_GRAPHS, SLUICE_USE_CUDNN), which override both as they do for
the ``sluice`` command, and the session's ``log`` says so. Nothing is locked
once a session has started: a changed default applies to sessions made
after it.

Memory limits are bytes (int), a fraction of the device (float in (0, 1]),
or a string such as ``"4GiB"``, ``"512M"`` or ``"0.5"``.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from sluice import _sluice
from sluice.errors import InvalidArgumentError

MemoryLimit = Union[int, float, str]

_PLACEMENTS = {"auto": "PLACEMENT_AUTO", "single": "PLACEMENT_SINGLE",
               "manual": "PLACEMENT_MANUAL"}
_LEVELS = {"none": "OPTIMIZATION_NONE", "basic": "OPTIMIZATION_BASIC",
           "all": "OPTIMIZATION_ALL"}
_PRECISIONS = {"highest": False, "high": True, "tf32": True}
_REDUCED = {"float16": "PRECISION_FLOAT16", "bfloat16": "PRECISION_BFLOAT16"}
_CONV_LAYOUTS = {"auto": "CONV_LAYOUT_AUTO", "nchw": "CONV_LAYOUT_NCHW",
                 "nhwc": "CONV_LAYOUT_NHWC"}
_INT_FIELDS = ("inter_op_threads", "intra_op_threads", "plan_cache_max_plans",
               "plan_cache_max_bytes")
# RuntimeConfig.resource_limits (core/resource_limits.h); max_import_folded_bytes
# is the deprecated name of max_folded_bytes, still read (with a note).
_LIMIT_FIELDS = ("max_created_tensor_bytes", "max_folded_constant_bytes",
                 "max_folded_bytes", "max_import_folded_bytes")
_BOOL_FIELDS = ("allow_growth", "use_gpu", "soft_placement", "log_placement",
                "gpu_graphs", "use_cudnn")
_FIELDS = ("memory_limit", "allow_growth", "logical_devices", "visible_gpus",
           "use_gpu", "placement", "default_device", "soft_placement",
           "log_placement", "inter_op_threads", "intra_op_threads",
           "precision", "conv_layout", "gpu_graphs", "use_cudnn",
           "optimization_level", "plan_cache_max_plans", "plan_cache_max_bytes",
           "max_folded_constant_bytes", "max_created_tensor_bytes",
           "max_folded_bytes", "max_import_folded_bytes", "text")


def _device_key(device: Any) -> str:
    """"gpu:0", "/gpu:0", "GPU:0", a PhysicalDevice -> "gpu:0"; "gpu" for
    every GPU, "cpu" for the CPU."""
    name = getattr(device, "name", device)
    if not isinstance(name, str):
        raise InvalidArgumentError(f"device {device!r}: expected a name such "
                                   "as 'gpu:0' or a sluice.PhysicalDevice")
    key = name.strip().lower().lstrip("/")
    kind, _, index = key.partition(":")
    if kind not in ("cpu", "gpu") or (index and not index.isdigit()):
        raise InvalidArgumentError(
            f"device '{name}': expected 'cpu', 'gpu' or 'gpu:N'")
    if kind == "cpu":
        return "cpu"
    return key if index else "gpu"


def _limit_text(limit: MemoryLimit, what: str) -> str:
    """A MemoryLimit message body: "bytes: N" or "fraction: F"."""
    if isinstance(limit, bool):
        raise InvalidArgumentError(f"{what}: {limit!r} is not a memory limit")
    if isinstance(limit, int):
        return f"bytes: {limit}"
    if isinstance(limit, float):
        return f"fraction: {limit!r}"
    if isinstance(limit, str):
        try:
            kind, value = _sluice.parse_memory_limit(limit)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"{what}: {e.message}") from None
        return f"bytes: {int(value)}" if kind == "bytes" else f"fraction: {value!r}"
    raise InvalidArgumentError(
        f"{what}: {limit!r} is not bytes (int), a fraction (float) or a "
        "string such as '4GiB'")


def _bool(value: Any, what: str) -> str:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what}: expected True or False, got {value!r}")
    return "true" if value else "false"


class Config:
    """A session's runtime configuration (sluice's RuntimeConfig).

    Every argument is optional; what is left out takes sluice's default
    (or the process default from :func:`set_memory_growth` and friends).

    Args:
      memory_limit: every GPU's limit, or a dict of limits by device
        (``{"gpu:0": "8GiB", "gpu:1": 0.5}``; ``"gpu"`` means every GPU).
      allow_growth: True (default) reserves GPU memory on demand up to the
        limit; False reserves the whole limit when the session starts.
      logical_devices: ``{"gpu:0": [limit, limit]}`` splits a GPU into
        logical GPUs; ``{"cpu": 3}`` or ``{"cpu": [budget, None]}`` splits
        the CPU into logical CPUs (each with an optional memory budget).
      visible_gpus: physical GPU indices the session may use.
      use_gpu: False hides every GPU.
      placement: ``"auto"`` (default), ``"single"`` or ``"manual"``.
      default_device: where nodes without a request go under manual and
        single placement (``"gpu:0"``, ``"cpu:0"``).
      soft_placement, log_placement: as in TensorFlow.
      inter_op_threads, intra_op_threads: thread counts (0: the cores).
      precision: ``"highest"`` (default) or ``"high"`` / ``"tf32"`` to
        allow TF32 matrix products on the GPU; ``"float16"`` or
        ``"bfloat16"`` to run a float32 model in that type (weights
        converted once at load, float32 accumulation, outputs in float32:
        the config's ``precision`` field).
      conv_layout: ``"auto"`` (default: NHWC on a GPU with a 16-bit
        precision, or on the CPU alone in float32 where oneDNN runs the
        convolutions, else NCHW), ``"nchw"`` or ``"nhwc"``: the layout
        convolutions run in (the config's ``conv_layout`` field).
      gpu_graphs: replay GPU steps as CUDA graphs (default True).
      use_cudnn: convolutions on cuDNN when it loads.
      optimization_level: ``"none"``, ``"basic"`` or ``"all"`` (default).
      plan_cache_max_plans, plan_cache_max_bytes: bounds of the plan cache.
      max_created_tensor_bytes, max_folded_constant_bytes, max_folded_bytes:
        resource limits (``resource_limits`` in the config): the largest
        random input or importer-made constant, the largest constant
        folding makes (at import and in the optimizer), and the total it
        may fold. max_import_folded_bytes: the deprecated name of
        max_folded_bytes.
      text: more RuntimeConfig text proto, appended as it is.

    Raises:
      InvalidArgumentError: a value sluice rejects, naming the field.
    """

    def __init__(self, *, memory_limit: Union[MemoryLimit, Mapping[Any, MemoryLimit], None] = None,
                 allow_growth: Optional[bool] = None,
                 logical_devices: Optional[Mapping[Any, Any]] = None,
                 visible_gpus: Optional[Iterable[int]] = None,
                 use_gpu: Optional[bool] = None,
                 placement: Optional[str] = None,
                 default_device: Optional[str] = None,
                 soft_placement: Optional[bool] = None,
                 log_placement: Optional[bool] = None,
                 inter_op_threads: Optional[int] = None,
                 intra_op_threads: Optional[int] = None,
                 precision: Optional[str] = None,
                 conv_layout: Optional[str] = None,
                 gpu_graphs: Optional[bool] = None,
                 use_cudnn: Optional[bool] = None,
                 optimization_level: Optional[str] = None,
                 plan_cache_max_plans: Optional[int] = None,
                 plan_cache_max_bytes: Optional[int] = None,
                 max_folded_constant_bytes: Optional[int] = None,
                 max_created_tensor_bytes: Optional[int] = None,
                 max_folded_bytes: Optional[int] = None,
                 max_import_folded_bytes: Optional[int] = None,
                 text: Optional[str] = None) -> None:
        values = dict(locals())
        self._fields: Dict[str, Any] = {}
        for name in _FIELDS:
            if values[name] is not None:
                self._fields[name] = values[name]
        if "memory_limit" in self._fields and not isinstance(
                self._fields["memory_limit"], Mapping):
            self._fields["memory_limit"] = {"gpu": self._fields["memory_limit"]}
        if "memory_limit" in self._fields:
            self._fields["memory_limit"] = {
                _device_key(k): v for k, v in self._fields["memory_limit"].items()}
        if "logical_devices" in self._fields:
            self._fields["logical_devices"] = {
                _device_key(k): v for k, v in self._fields["logical_devices"].items()}
        _sluice.check_config(self.to_text())

    @classmethod
    def from_file(cls, path: str) -> "Config":
        """A Config from a RuntimeConfig text proto file (``--config``)."""
        try:
            with open(path, encoding="utf-8") as f:
                return cls(text=f.read())
        except FileNotFoundError:
            from sluice.errors import NotFoundError
            raise NotFoundError(f"config file '{path}' does not exist") from None

    def merged(self, other: Optional["Config"]) -> "Config":
        """This config with every field ``other`` sets taken from ``other``
        (dicts of limits merge by device)."""
        result = copy.deepcopy(self)
        if other is None:
            return result
        for name, value in other._fields.items():
            if name in ("memory_limit", "logical_devices") and name in result._fields:
                result._fields[name] = {**result._fields[name], **value}
            elif name == "text" and name in result._fields:
                result._fields[name] = result._fields[name] + "\n" + value
            else:
                result._fields[name] = copy.deepcopy(value)
        return result

    def get(self, name: str) -> Any:
        """The value given for ``name`` (an argument of the constructor), or
        None."""
        return self._fields.get(name)

    def to_text(self) -> str:
        """The RuntimeConfig text proto this config stands for."""
        f = self._fields
        lines = []
        for name in _BOOL_FIELDS:
            if name in f:
                lines.append(f"{name}: {_bool(f[name], name)}")
        for name in _INT_FIELDS:
            if name in f:
                lines.append(f"{name}: {int(f[name])}")
        if "visible_gpus" in f:
            lines += [f"visible_gpus: {int(i)}" for i in f["visible_gpus"]]
        if "placement" in f:
            p = str(f["placement"]).lower()
            if p not in _PLACEMENTS:
                raise InvalidArgumentError(
                    f"placement: '{f['placement']}' is not auto, single or manual")
            lines.append(f"placement_strategy: {_PLACEMENTS[p]}")
        if "optimization_level" in f:
            o = str(f["optimization_level"]).lower()
            if o not in _LEVELS:
                raise InvalidArgumentError(
                    f"optimization_level: '{f['optimization_level']}' is not "
                    "none, basic or all")
            lines.append(f"optimization_level: {_LEVELS[o]}")
        if "precision" in f:
            p = str(f["precision"]).lower()
            if p in _REDUCED:
                lines.append(f"precision: {_REDUCED[p]}")
            elif p not in _PRECISIONS:
                raise InvalidArgumentError(
                    f"precision: '{f['precision']}' is not highest, high, "
                    "tf32, float16 or bfloat16")
            else:
                lines.append(f"allow_tf32: {'true' if _PRECISIONS[p] else 'false'}")
        if "conv_layout" in f:
            layout = str(f["conv_layout"]).lower()
            if layout not in _CONV_LAYOUTS:
                raise InvalidArgumentError(
                    f"conv_layout: '{f['conv_layout']}' is not auto, nchw or nhwc")
            lines.append(f"conv_layout: {_CONV_LAYOUTS[layout]}")
        if "default_device" in f:
            lines.append(f"default_device: \"{f['default_device']}\"")
        limits = {}
        for name in _LIMIT_FIELDS:
            if name in f:
                limits[name] = int(f[name])
        if limits:
            body = " ".join(f"{k}: {v}" for k, v in limits.items())
            lines.append(f"resource_limits {{ {body} }}")
        gpus: Dict[int, list] = {}
        for key, limit in f.get("memory_limit", {}).items():
            if key == "cpu":
                raise InvalidArgumentError(
                    "memory_limit: the CPU has no limit of its own; give a "
                    "budget with logical_devices={'cpu': [budget]}")
            text = _limit_text(limit, f"memory_limit[{key}]")
            if key == "gpu":
                lines.append(f"gpu_memory_limit {{ {text} }}")
            else:
                gpus.setdefault(int(key.split(":")[1]), []).append(
                    f"memory_limit {{ {text} }}")
        for key, devices in f.get("logical_devices", {}).items():
            if key == "cpu":
                if isinstance(devices, int) and not isinstance(devices, bool):
                    devices = [None] * devices
                for budget in devices:
                    body = ("" if budget is None else
                            f"memory_limit {{ {_limit_text(budget, 'logical_devices[cpu]')} }}")
                    lines.append(f"logical_cpus {{ {body} }}")
            elif key == "gpu":
                raise InvalidArgumentError(
                    "logical_devices: name the GPU to split ('gpu:0')")
            else:
                entries = gpus.setdefault(int(key.split(":")[1]), [])
                for limit in devices:
                    text = _limit_text(limit, f"logical_devices[{key}]")
                    entries.append(f"logical_devices {{ memory_limit {{ {text} }} }}")
        for index, entries in sorted(gpus.items()):
            lines.append(f"gpu {{ index: {index} {' '.join(entries)} }}")
        if "text" in f:
            lines.append(f["text"])
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"sluice.Config({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.to_text() == other.to_text()


# --- Process defaults ----------------------------------------------------------

_lock = threading.Lock()
_defaults = Config()


def defaults() -> Config:
    """The process defaults every new session starts from (a copy)."""
    with _lock:
        return copy.deepcopy(_defaults)


def effective(config: Optional[Config]) -> Config:
    """What a session made now with ``config`` runs with, before the
    environment variables: the process defaults overlaid with ``config``."""
    with _lock:
        return _defaults.merged(config)


def _update(**fields: Any) -> None:
    global _defaults
    with _lock:
        candidate = _defaults.merged(Config(**fields))
        _defaults = candidate


def set_memory_growth(device: Any, enable: bool) -> None:
    """Whether GPUs reserve memory on demand (True, sluice's default) or take
    their whole limit at session start. As in TensorFlow, growth is one
    policy for every GPU: ``device`` must be a GPU ("gpu", "gpu:N" or a
    PhysicalDevice), and the setting applies to all of them.
    SLUICE_GPU_ALLOW_GROWTH overrides it."""
    key = _device_key(device)
    if key == "cpu":
        raise InvalidArgumentError("set_memory_growth: the CPU has no growth "
                                   "policy; name a GPU")
    _update(allow_growth=_bool(enable, "enable") == "true")


def get_memory_growth(device: Any) -> Optional[bool]:
    """The growth default set with :func:`set_memory_growth`, or None."""
    _device_key(device)
    return defaults().get("allow_growth")


def set_memory_limit(device: Any, limit: Optional[MemoryLimit]) -> None:
    """A memory limit for a GPU ("gpu:N"), or for every GPU ("gpu"), for
    sessions made from now on; None removes it. SLUICE_GPU_MEMORY_LIMIT
    overrides it."""
    global _defaults
    key = _device_key(device)
    if limit is None:
        with _lock:
            limits = dict(_defaults.get("memory_limit") or {})
            limits.pop(key, None)
            fields = dict(_defaults._fields)
            fields["memory_limit"] = limits
            if not limits:
                del fields["memory_limit"]
            fresh = Config()
            fresh._fields = fields
            _defaults = fresh
        return
    _update(memory_limit={key: limit})


def get_memory_limit(device: Any) -> Optional[MemoryLimit]:
    """The limit set with :func:`set_memory_limit` for ``device``, or None."""
    return (defaults().get("memory_limit") or {}).get(_device_key(device))


def set_logical_device_configuration(device: Any, limits: Any) -> None:
    """Splits a GPU into logical GPUs with these limits
    (``set_logical_device_configuration("gpu:0", ["8GiB", "8GiB"])``), or
    the CPU into logical CPUs (``("cpu", 3)`` or a list of budgets)."""
    _update(logical_devices={_device_key(device): limits})


def reset() -> None:
    """Forgets every process default."""
    global _defaults
    with _lock:
        _defaults = Config()


__all__ = ["Config", "MemoryLimit", "defaults", "effective",
           "set_memory_growth", "get_memory_growth", "set_memory_limit",
           "get_memory_limit", "set_logical_device_configuration", "reset"]
