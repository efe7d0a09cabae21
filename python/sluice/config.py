"""Runtime configuration: a :class:`Config` per session (sluice's
RuntimeConfig message itself), and process defaults every later session
starts from, set the TensorFlow way.

    cfg = sluice.Config(inter_op_threads=4, optimization_level="BASIC",
                        cpu_convolutions="LOOPS", memory_limit="8GiB")
    cfg.optimization_level                  # "BASIC"
    cfg.to_text()                           # what a --config file holds
    sluice.Config.from_text(cfg.to_text()) == cfg
    sluice.config.set_memory_growth("gpu:0", True)        # process default

A Config holds the RuntimeConfig message of proto/config.proto, through
sluice's own parser, printer and checks (python/src/config_bindings.cc):
every field the proto has is an argument and an attribute of the same name,
enum fields take the short names the docs use (``"NONE"``, ``"NHWC"``) or
the full ones, in any case, and read back as short names; a field of a
nested message may be given by its own name when that is unambiguous
(``max_folded_bytes`` for ``resource_limits.max_folded_bytes``).
``Config.fields()`` lists them all. A value sluice rejects raises
:class:`sluice.InvalidArgumentError` with the library's message, naming the
field.

Conveniences beyond the fields: ``memory_limit`` (every GPU's, or a dict by
device), ``logical_devices`` (split a GPU or the CPU), ``placement`` (the
``placement_strategy`` field) and ``precision="high"`` / ``"tf32"`` /
``"highest"`` (the ``allow_tf32`` field; ``precision`` otherwise is the
field of that name: ``"MODEL"``, ``"FLOAT16"``, ``"BFLOAT16"``).

Precedence, lowest first: the process defaults set here, the session's
Config (MergeRuntimeConfig: the fields it sets win, GPUs merge by index),
then the SLUICE_* environment variables (SLUICE_GPU_ALLOW_GROWTH,
SLUICE_GPU_MEMORY_LIMIT, SLUICE_GPU_GRAPHS, SLUICE_USE_CUDNN), which
override both as they do for the ``sluice`` command, and the session's
``log`` says so. Nothing is locked once a session has started: a changed
default applies to sessions made after it (the setters return a note
saying so once a session exists).

Memory limits are bytes (int), a fraction of the device (float in (0, 1]),
or a string such as ``"4GiB"``, ``"512M"`` or ``"0.5"``.
"""

from __future__ import annotations

import threading
import types
import warnings
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union

from sluice import _sluice
from sluice.errors import InvalidArgumentError

MemoryLimit = Union[int, float, str]

# precision= values that set allow_tf32 rather than the precision field.
_TF32 = {"highest": False, "high": True, "tf32": True}


def _device_key(device: Any) -> str:
    """"gpu:0", "/gpu:0", "GPU:0", TensorFlow's "/physical_device:GPU:0",
    a PhysicalDevice -> "gpu:0"; "gpu" for every GPU, "cpu" for the CPU."""
    name = getattr(device, "name", device)
    if not isinstance(name, str):
        raise InvalidArgumentError(f"device {device!r}: expected a name such "
                                   "as 'gpu:0' or a sluice.PhysicalDevice")
    key = name.strip().lower()
    if "device:" in key:  # TensorFlow's "/physical_device:GPU:1", "/device:GPU:1"
        key = key[key.rindex("device:") + len("device:"):]
    key = key.lstrip("/")
    kind, _, index = key.partition(":")
    if kind not in ("cpu", "gpu") or (index and not index.isdigit()):
        raise InvalidArgumentError(
            f"device '{name}': expected 'cpu', 'gpu' or 'gpu:N'")
    if kind == "cpu":
        return "cpu"
    return key if index else "gpu"


def _gpu_entry(gpus: List[Dict[str, Any]], index: int) -> Dict[str, Any]:
    """The `gpu` entry (a dict of GpuConfig fields) for physical GPU index."""
    for entry in gpus:
        if entry.get("index", 0) == index:
            return entry
    entry = {"index": index}
    gpus.append(entry)
    gpus.sort(key=lambda e: e.get("index", 0))
    return entry


class Config:
    """A session's runtime configuration: sluice's RuntimeConfig message.

    Args:
      text: a config file's text (a RuntimeConfig text proto), read first;
        the keyword arguments are set over it.
      memory_limit: every GPU's limit, or a dict of limits by device
        (``{"gpu:0": "8GiB", "gpu:1": 0.5}``; ``"gpu"`` means every GPU).
      logical_devices: ``{"gpu:0": [limit, limit]}`` splits a GPU into
        logical GPUs; ``{"cpu": 3}`` or ``{"cpu": [budget, None]}`` splits
        the CPU into logical CPUs (each with an optional memory budget).
      placement: ``"auto"``, ``"single"`` or ``"manual"``
        (the ``placement_strategy`` field).
      precision: a ``Precision`` (``"MODEL"``, ``"FLOAT16"``,
        ``"BFLOAT16"``), or ``"high"`` / ``"tf32"`` / ``"highest"`` to
        allow TF32 matrix products on the GPU or not (``allow_tf32``).
      **fields: any field of RuntimeConfig (proto/config.proto documents
        each and its default), by its name or, for a field of
        ``resource_limits``, its own name. ``Config.fields()`` lists them.

    Raises:
      InvalidArgumentError: an unknown field, or a value sluice rejects
        (the library's message, naming the field).
    """

    __slots__ = ("_c",)

    def __init__(self, text: Optional[str] = None, *,
                 memory_limit: Union[MemoryLimit, Mapping[Any, MemoryLimit], None] = None,
                 logical_devices: Optional[Mapping[Any, Any]] = None,
                 placement: Optional[str] = None,
                 precision: Optional[str] = None,
                 **fields: Any) -> None:
        c = (_sluice._Config() if text is None
             else _sluice._Config.from_text(text, "<sluice.Config text>"))
        object.__setattr__(self, "_c", c)
        if placement is not None:
            fields["placement_strategy"] = placement
        if precision is not None:
            key = str(precision).lower()
            if key in _TF32:
                fields["allow_tf32"] = _TF32[key]
            else:
                fields["precision"] = precision
        for name, value in fields.items():
            if value is not None:
                c.set(self._path(name), value)
        if memory_limit is not None:
            if not isinstance(memory_limit, Mapping):
                memory_limit = {"gpu": memory_limit}
            self._set_memory_limits(memory_limit)
        if logical_devices is not None:
            self._set_logical_devices(logical_devices)
        c.validate()

    # --- Fields ------------------------------------------------------------

    @staticmethod
    def fields() -> List[Tuple[str, str, List[str]]]:
        """(name, kind, values) of every RuntimeConfig field: kind "bool",
        "int", "float", "str", "enum" (values: its short names), "message",
        "memory_limit"; "[]" appended for a repeated field. Fields of
        resource_limits are listed as "resource_limits.NAME"."""
        return [tuple(f) for f in _sluice._Config.fields()]

    @staticmethod
    def _path(name: str) -> str:
        path = _sluice._Config.resolve(name) if "." not in name else name
        if not path:
            names = sorted({f[0].split(".")[-1] for f in _sluice._Config.fields()})
            raise InvalidArgumentError(
                f"Config: RuntimeConfig has no field '{name}'; fields: "
                + ", ".join(names))
        return path

    def get(self, name: str) -> Any:
        """The field called ``name`` ("inter_op_threads",
        "resource_limits.max_folded_bytes" or "max_folded_bytes"): enums as
        short names, messages as dicts of their set fields, a memory limit
        as bytes or a fraction; None for an optional field left unset."""
        return self._c.get(self._path(name))

    def set(self, name: str, value: Any) -> None:
        """Sets the field called ``name`` (None clears it), validated; a
        rejected value leaves the config as it was."""
        candidate = self._c.copy()
        candidate.set(self._path(name), value)
        candidate.validate()
        object.__setattr__(self, "_c", candidate)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.get(name)
        except InvalidArgumentError:
            raise AttributeError(
                f"sluice.Config has no field '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.set(name, value)

    def __dir__(self) -> Iterable[str]:
        names = {f[0].split(".")[-1] for f in self.fields()}
        return sorted(set(super().__dir__()) | names)

    # --- Conveniences ------------------------------------------------------

    def _set_memory_limits(self, limits: Mapping[Any, MemoryLimit]) -> None:
        gpus = self._c.get("gpu")
        for device, limit in limits.items():
            key = _device_key(device)
            if key == "cpu":
                raise InvalidArgumentError(
                    "memory_limit: the CPU has no limit of its own; give a "
                    "budget with logical_devices={'cpu': [budget]}")
            what = f"memory_limit[{key}]"
            if key == "gpu":
                self._set_limit("gpu_memory_limit", limit, what)
            else:
                entry = _gpu_entry(gpus, int(key.split(":")[1]))
                entry["memory_limit"] = self._checked_limit(limit, what)
        self._c.set("gpu", gpus)

    def _checked_limit(self, limit: Any, what: str) -> Any:
        probe = _sluice._Config()
        try:
            probe.set("gpu_memory_limit", limit)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(
                what + e.message[len("gpu_memory_limit"):]) from None
        return probe.get("gpu_memory_limit")

    def _set_limit(self, path: str, limit: Any, what: str) -> None:
        self._c.set(path, self._checked_limit(limit, what))

    def _set_logical_devices(self, devices: Mapping[Any, Any]) -> None:
        gpus = self._c.get("gpu")
        for device, limits in devices.items():
            key = _device_key(device)
            what = f"logical_devices[{key}]"
            if key == "cpu":
                if isinstance(limits, int) and not isinstance(limits, bool):
                    limits = [None] * limits
                cpus = [{} if b is None else
                        {"memory_limit": self._checked_limit(b, what)}
                        for b in limits]
                self._c.set("logical_cpus", cpus)
            elif key == "gpu":
                raise InvalidArgumentError(
                    "logical_devices: name the GPU to split ('gpu:0')")
            else:
                entry = _gpu_entry(gpus, int(key.split(":")[1]))
                entry["logical_devices"] = [
                    {"memory_limit": self._checked_limit(limit, what)}
                    for limit in limits]
        self._c.set("gpu", gpus)

    # --- Text, files, merging ----------------------------------------------

    @classmethod
    def from_text(cls, text: str) -> "Config":
        """A Config from a config file's text (RuntimeConfig text proto;
        enum values by short or full names), validated."""
        return cls(text)

    @classmethod
    def from_file(cls, path: str) -> "Config":
        """A Config from a RuntimeConfig text proto file (``--config``)."""
        config = cls.__new__(cls)
        object.__setattr__(config, "_c", _sluice._Config.load(str(path)))
        config._c.validate()
        return config

    def to_text(self) -> str:
        """The text a config file holds: one line per field set, enum values
        by their full names (any protobuf text parser reads it back)."""
        return self._c.to_text()

    def save(self, path: str) -> None:
        """Writes :meth:`to_text` to ``path`` (for ``sluice ... --config``)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_text())

    def merged(self, other: Optional["Config"]) -> "Config":
        """This config with ``other`` laid over it: every field ``other``
        sets wins, messages merge field by field, GPUs merge by index."""
        result = Config.__new__(Config)
        object.__setattr__(result, "_c", self._c.copy() if other is None
                           else self._c.merged(other._c))
        return result

    def copy(self) -> "Config":
        return self.merged(None)

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={self._c.get(name)!r}"
                         for name in self._c.set_fields())
        return f"sluice.Config({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._c == other._c

    def __reduce__(self) -> Any:
        return (Config.from_text, (self.to_text(),))


# --- Process defaults ----------------------------------------------------------

_lock = threading.Lock()
_defaults = Config()
#: Sessions made so far (sluice.session counts them): after the first, a
#: setter says that it changes only sessions made from now on.
sessions_started = 0


def defaults() -> Config:
    """The process defaults every new session starts from (a copy)."""
    with _lock:
        return _defaults.copy()


def effective(config: Optional[Config]) -> Config:
    """What a session made now with ``config`` runs with, before the
    environment variables: the process defaults overlaid with ``config``."""
    with _lock:
        return _defaults.merged(config)


def _note(what: str = "") -> Optional[str]:
    """None before the first session; after it, says (and warns) that the
    change reaches only sessions made from now on, where TensorFlow raises
    "cannot be modified after being initialized"."""
    if sessions_started == 0:
        return None
    made = (f"the {sessions_started} sessions made before keep their config"
            if sessions_started != 1 else
            "the session made before keeps its config")
    note = (f"{what or 'this setting'}: changed for the sessions made from now "
            f"on; {made}")
    warnings.warn(note, stacklevel=4)
    return note


def _update(change: Any, what: str = "") -> Optional[str]:
    """Applies ``change(config)`` to a copy of the defaults, validates it and
    keeps it."""
    global _defaults
    with _lock:
        candidate = _defaults.copy()
        change(candidate)
        candidate._c.validate()
        _defaults = candidate
    return _note(what)


def set_memory_growth(device: Any, enable: bool) -> Optional[str]:
    """Whether GPUs reserve memory on demand (True, sluice's default) or take
    their whole limit at session start. As in TensorFlow, growth is one
    policy for every GPU: ``device`` must be a GPU ("gpu", "gpu:N" or a
    PhysicalDevice), and the setting applies to all of them.
    SLUICE_GPU_ALLOW_GROWTH overrides it. Returns None, or once a session
    has started, a note saying what the call affects."""
    if _device_key(device) == "cpu":
        raise InvalidArgumentError("set_memory_growth: the CPU has no growth "
                                   "policy; name a GPU")
    if not isinstance(enable, bool):
        raise InvalidArgumentError(f"enable: expected True or False, got {enable!r}")
    return _update(lambda c: c.set("allow_growth", enable), "memory growth")


def get_memory_growth(device: Any) -> Optional[bool]:
    """The growth default set with :func:`set_memory_growth`, or None."""
    _device_key(device)
    return defaults().allow_growth


def set_memory_limit(device: Any, limit: Optional[MemoryLimit]) -> Optional[str]:
    """A memory limit for a GPU ("gpu:N"), or for every GPU ("gpu"), for
    sessions made from now on; None removes it. SLUICE_GPU_MEMORY_LIMIT
    overrides it."""
    key = _device_key(device)

    def change(c: Config) -> None:
        if limit is not None:
            c._set_memory_limits({key: limit})
        elif key == "gpu":
            c._c.set("gpu_memory_limit", None)
        elif key != "cpu":
            gpus = [g for g in c._c.get("gpu")]
            for entry in gpus:
                if entry.get("index", 0) == int(key.split(":")[1]):
                    entry.pop("memory_limit", None)
            c._c.set("gpu", [g for g in gpus if set(g) - {"index"}])
    return _update(change, f"the memory limit of {key}")


def get_memory_limit(device: Any) -> Optional[MemoryLimit]:
    """The limit set with :func:`set_memory_limit` for ``device`` (bytes as
    an int, a fraction as a float), or None."""
    key = _device_key(device)
    c = defaults()
    if key == "gpu":
        return c.gpu_memory_limit
    for entry in c.gpu:
        if key == f"gpu:{entry.get('index', 0)}":
            return entry.get("memory_limit")
    return None


class LogicalDeviceConfiguration(NamedTuple):
    """One logical device, as TensorFlow's
    ``tf.config.LogicalDeviceConfiguration``: ``memory_limit`` in megabytes
    (MiB, as TensorFlow takes it; None: a logical CPU without a budget)."""

    memory_limit: Optional[int] = None


class LogicalDevice(NamedTuple):
    """A device a session made now would set up: ``name`` ("/gpu:0",
    sluice's short names; TensorFlow says "/device:GPU:0") and
    ``device_type`` ("CPU" or "GPU")."""

    name: str
    device_type: str


def _limit_of(entry: Any) -> Any:
    """A memory limit from a LogicalDeviceConfiguration (MiB) or one of
    sluice's own (bytes, a fraction, "4GiB")."""
    if isinstance(entry, LogicalDeviceConfiguration) or (
            hasattr(entry, "memory_limit") and not isinstance(entry, (int, float, str))):
        mb = entry.memory_limit
        return None if mb is None else int(mb) * (1 << 20)
    return entry


def set_logical_device_configuration(device: Any, logical_devices: Any) -> Optional[str]:
    """Splits a GPU into logical GPUs, or the CPU into logical CPUs, for
    sessions made from now on. ``logical_devices``: TensorFlow's list of
    :class:`LogicalDeviceConfiguration` (memory_limit in MiB), or sluice's
    limits (``["8GiB", "8GiB"]``, fractions, bytes); for the CPU also a
    count (``("cpu", 3)``)."""
    key = _device_key(device)
    if not isinstance(logical_devices, int) or isinstance(logical_devices, bool):
        logical_devices = [_limit_of(e) for e in logical_devices]
    return _update(lambda c: c._set_logical_devices({key: logical_devices}),
                   f"the logical devices of {key}")


def get_logical_device_configuration(device: Any) -> Optional[List[LogicalDeviceConfiguration]]:
    """The split set for ``device`` with set_logical_device_configuration
    (memory limits in MiB where they are bytes), or None."""
    key = _device_key(device)
    c = defaults()
    if key == "cpu":
        entries = c.logical_cpus
    else:
        entries = next((g.get("logical_devices") for g in c.gpu
                        if key == f"gpu:{g.get('index', 0)}"), None)
    if not entries:
        return None
    out = []
    for e in entries:
        limit = e.get("memory_limit")
        out.append(LogicalDeviceConfiguration(
            limit // (1 << 20) if isinstance(limit, int) else limit))
    return out


def list_logical_devices(device_type: Optional[str] = None) -> List[LogicalDevice]:
    """The devices a session made now (process defaults, then the
    environment) would set up, CPUs first, as TensorFlow's
    ``tf.config.list_logical_devices``; ``device_type`` "cpu" or "gpu"
    keeps one kind."""
    if device_type is not None and device_type.lower() not in ("cpu", "gpu"):
        raise InvalidArgumentError(
            f"device_type '{device_type}': expected 'cpu', 'gpu' or None")
    report = _sluice.devices(effective(None).to_text())["config"]
    found = [LogicalDevice(d["name"], "CPU") for d in report["cpu_devices"]]
    found += [LogicalDevice(d["name"], "GPU") for d in report["gpu_devices"]]
    if device_type is None:
        return found
    return [d for d in found if d.device_type == device_type.upper()]


def set_visible_devices(devices: Any, device_type: Optional[str] = None) -> Optional[str]:
    """Which physical devices sessions made from now on may use, as
    TensorFlow's ``tf.config.set_visible_devices``: a PhysicalDevice (or
    "gpu:N") or a list of them. The CPU is always visible; a list without a
    GPU hides every GPU (use_gpu: false). ``device_type`` "GPU" limits the
    call to GPUs (the others in ``devices`` are ignored)."""
    if not isinstance(devices, (list, tuple)):
        devices = [devices]
    keys = [_device_key(d) for d in devices]
    if device_type is not None and device_type.lower() == "cpu":
        if "cpu" not in keys:
            raise InvalidArgumentError(
                "set_visible_devices: the CPU cannot be hidden; sluice runs "
                "what no GPU can on it")
        return None
    gpus = sorted({int(k.split(":")[1]) for k in keys if k.startswith("gpu:")})
    if "gpu" in keys:
        return _update(lambda c: (c.set("visible_gpus", None), c.set("use_gpu", None)),
                       "the visible devices")

    def change(c: Config) -> None:
        if gpus:  # each set is validated: lift use_gpu: false first
            c.set("use_gpu", None)
            c.set("visible_gpus", gpus)
        else:
            c.set("visible_gpus", None)
            c.set("use_gpu", False)
    return _update(change, "the visible devices")


def get_visible_devices(device_type: Optional[str] = None) -> List[Any]:
    """The physical devices sessions made now may use (the CPU, and the
    usable GPUs set_visible_devices leaves)."""
    from sluice.devices import list_physical_devices
    c = defaults()
    visible = c.visible_gpus
    found = [d for d in list_physical_devices(device_type)
             if d.device_type == "CPU" or (c.use_gpu is not False and
                                           (not visible or d.index in visible))]
    return found


def reset() -> None:
    """Forgets every process default."""
    global _defaults
    with _lock:
        _defaults = Config()


def list_physical_devices(device_type: Optional[str] = None) -> List[Any]:
    """sluice.list_physical_devices, here too as in ``tf.config``."""
    from sluice.devices import list_physical_devices as physical
    return physical(device_type)


#: TensorFlow's ``tf.config.experimental`` names.
experimental = types.SimpleNamespace(
    set_memory_growth=set_memory_growth, get_memory_growth=get_memory_growth,
    set_visible_devices=set_visible_devices,
    get_visible_devices=get_visible_devices,
    list_physical_devices=list_physical_devices,
    list_logical_devices=list_logical_devices,
    set_virtual_device_configuration=set_logical_device_configuration,
    get_virtual_device_configuration=get_logical_device_configuration,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration)

__all__ = ["Config", "LogicalDevice", "LogicalDeviceConfiguration",
           "MemoryLimit", "defaults", "effective", "experimental",
           "get_logical_device_configuration", "get_memory_growth",
           "get_memory_limit", "get_visible_devices", "list_logical_devices",
           "list_physical_devices", "reset", "set_logical_device_configuration",
           "set_memory_growth", "set_memory_limit", "set_visible_devices"]
