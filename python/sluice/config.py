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
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from sluice import _sluice
from sluice.errors import InvalidArgumentError

MemoryLimit = Union[int, float, str]

# precision= values that set allow_tf32 rather than the precision field.
_TF32 = {"highest": False, "high": True, "tf32": True}


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
    made = f"{sessions_started} session{'s' if sessions_started != 1 else ''}"
    note = (f"{what or 'this setting'}: changed for the sessions made from now "
            f"on; the {made} made before keep their config")
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


def set_logical_device_configuration(device: Any, limits: Any) -> Optional[str]:
    """Splits a GPU into logical GPUs with these limits
    (``set_logical_device_configuration("gpu:0", ["8GiB", "8GiB"])``), or
    the CPU into logical CPUs (``("cpu", 3)`` or a list of budgets)."""
    key = _device_key(device)
    return _update(lambda c: c._set_logical_devices({key: limits}),
                   f"the logical devices of {key}")


def reset() -> None:
    """Forgets every process default."""
    global _defaults
    with _lock:
        _defaults = Config()


__all__ = ["Config", "MemoryLimit", "defaults", "effective",
           "set_memory_growth", "get_memory_growth", "set_memory_limit",
           "get_memory_limit", "set_logical_device_configuration", "reset"]
