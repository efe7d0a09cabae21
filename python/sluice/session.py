"""Sessions: a model loaded, placed and ready to run, and ``place`` for
planning without running.

    sess = sluice.Session("examples/mlp.pbtxt")
    probs = sess.run("probs", {"x": np.ones((4, 16), np.float32)})
    sess.placement().nodes[0]["device"]
    sluice.place("model.onnx", devices="4xgpu:80GiB").estimated_step_seconds

What is copied. A feed that is a C-contiguous NumPy array (or any
``__dlpack__`` object) in host memory, aligned to its element size, is read
in place: sluice keeps a reference for the step and copies nothing. Other
feeds are copied once into a contiguous array (strided views, Python lists
and scalars, which take the input's dtype). Results come back as NumPy
arrays over sluice's own output buffers, without a copy, unless sluice
still holds that buffer (a graph constant, a feed passed straight through,
the same value fetched twice): those are copied, so an array never aliases
memory the model or the caller uses. bfloat16, float8 and 4-/2-bit dtypes travel as
ml_dtypes arrays (without ml_dtypes installed, results of those dtypes come
back as their raw unsigned integers).

GPU memory. A ``__dlpack__`` feed on a CUDA GPU that the session uses
(``__dlpack_device__`` kDLCUDA, device id = CUDA ordinal) is read in place
on that GPU, with no copy through the host; it must be C-contiguous. sluice
asks for it with ``__dlpack__(stream=<its compute stream>)``, so the
producer orders its pending work before the step (producers without the
``stream`` argument must have finished writing it). Pinned host memory
(kDLCUDAHost, torch's ``pin_memory()``) is host memory that a GPU reads by
one DMA, with no staging copy. With ``run(..., output_device="gpu:0")``
results stay on that GPU as DLPack objects (``torch.from_dlpack``,
``cupy.from_dlpack``) sharing sluice's buffers; ``run`` returns after the
step's GPU work has finished, so they may be read on any stream. A feed on
another device type (ROCm, OpenCL, ...) is an InvalidArgumentError.

The GIL is released while a step runs, so ``run`` from several threads
executes in parallel on one session.
"""

from __future__ import annotations

import os
import threading
from typing import (Any, Dict, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np

from sluice import _sluice
from sluice import config as _config
from sluice.config import Config
from sluice.errors import InvalidArgumentError

try:  # bfloat16, float8, int4: optional
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None

Dim = Union[int, str, None]


class TensorSpec(NamedTuple):
    """A graph input or output: ``name``, ``dtype`` (a sluice dtype name such
    as "float32", "bfloat16"), and ``shape``: a tuple whose entries are ints,
    the name of a symbolic dimension ("batch"), or None for an unknown one;
    None for an unknown rank."""

    name: str
    dtype: str
    shape: Optional[Tuple[Dim, ...]]


class Report(dict):
    """A report of the library's (reports/: placement, bench; the same
    fields ``sluice place --json`` and ``sluice bench --json`` print) as a
    dict whose keys also read as attributes, recursively:
    ``report.devices[0].name``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @staticmethod
    def wrap(value: Any) -> Any:
        if isinstance(value, dict):
            return Report({k: Report.wrap(v) for k, v in value.items()})
        if isinstance(value, list):
            return [Report.wrap(v) for v in value]
        return value


Model = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


def _model_source(model: Model, format: Optional[str]) -> Tuple[str, bytes, str]:
    """(path, data, format) for the extension."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), b"", format or ""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "", bytes(model), format or ""
    to_bytes = getattr(model, "to_bytes", None)  # sluice.GraphBuilder
    if callable(to_bytes) and hasattr(model, "add_node"):
        return "", to_bytes(), "pb"
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):
        guess = "onnx" if type(model).__name__ == "ModelProto" else "pb"
        return "", serialize(), format or guess
    raise InvalidArgumentError(
        f"model: expected a path, bytes, an onnx.ModelProto or a "
        f"sluice.GraphBuilder, got {type(model).__name__}")


def _numpy_dtype(name: Optional[str]) -> Any:
    if name is None:
        return None
    if hasattr(np, name) and name not in ("bool",):
        return np.dtype(name)
    if name == "bool":
        return np.bool_
    if _ml_dtypes is not None and hasattr(_ml_dtypes, name):
        return np.dtype(getattr(_ml_dtypes, name))
    return None


def _normalize_feed(value: Any, expected: Optional[str],
                    feed: str = "") -> Tuple[np.ndarray, Optional[str]]:
    """What the extension could not borrow as it is: a C-contiguous host
    array in native byte order (of the same rank: a scalar stays 0-d), and
    the sluice dtype name when the array carries raw bits. `feed` names
    the feed in errors: InvalidArgumentError for a value NumPy cannot make
    an array of, a DLPack export that fails, or a dtype sluice lacks."""
    what = f"feed '{feed}'" if feed else "the value"
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        device = getattr(value, "__dlpack_device__", lambda: (1, 0))()
        if int(device[0]) not in (1, 3):  # kDLCPU, kDLCUDAHost
            # The extension takes CUDA memory itself and refuses other
            # devices; this is an object it could not read as an array.
            raise InvalidArgumentError(
                f"{what}: in device memory (DLPack device {tuple(device)}) "
                "that sluice cannot read in place; make it a C-contiguous "
                "CUDA array, or copy it to the CPU (e.g. tensor.cpu())")
        try:
            value = np.from_dlpack(value)
        except (TypeError, ValueError, BufferError) as e:
            raise InvalidArgumentError(
                f"{what}: its __dlpack__() gave no DLPack capsule NumPy can "
                f"read ({type(e).__name__}: {e})") from e
    if isinstance(value, np.ndarray):
        array = value
    else:
        try:
            array = np.asarray(value, dtype=_numpy_dtype(expected))
        except (TypeError, ValueError, OverflowError) as e:
            kind = f"a {expected} array" if expected else "an array"
            raise InvalidArgumentError(
                f"{what}: NumPy cannot make {kind} of {type(value).__name__} "
                f"{value!r:.40} ({e})") from e
    name = None
    if type(array.dtype).__module__.startswith("ml_dtypes") or \
            array.dtype.name not in _NUMPY_NAMES:
        name = array.dtype.name
        if name not in _ML_DTYPES_NAMES:
            raise InvalidArgumentError(
                f"{what}: an array of dtype {array.dtype} has no sluice dtype "
                f"(sluice takes {', '.join(sorted(_NUMPY_NAMES | _ML_DTYPES_NAMES))})")
        array = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    elif not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return np.asarray(array, order="C"), name


_NUMPY_NAMES = {"float16", "float32", "float64", "int8", "int16", "int32",
                "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
# sluice dtypes NumPy lacks, which ml_dtypes names the same way.
_ML_DTYPES_NAMES = set(_sluice.dtype_names()) - _NUMPY_NAMES


def _view_result(array: np.ndarray, name: str) -> np.ndarray:
    dtype = _numpy_dtype(name)
    if dtype is None:
        return array
    return array.view(dtype)


_sluice._set_converters(_normalize_feed, _view_result)


def _specs(raw: Sequence[Tuple[str, str, List[int], List[str], int]]) -> List[TensorSpec]:
    specs = []
    for name, dtype, dims, names, rank in raw:
        shape = None
        if rank >= 0:
            shape = tuple(
                d if d >= 0 else (n or None) for d, n in zip(dims, names))
        specs.append(TensorSpec(name, dtype, shape))
    return specs


def _feed_lists(method: str, feeds: Any) -> Tuple[Sequence[Any], Sequence[Any]]:
    """(names, values) of a feeds mapping, read once (another thread may
    change the dict meanwhile)."""
    if feeds is None:
        return (), ()
    try:
        pairs = tuple(feeds.items())
    except AttributeError:
        raise TypeError(f"{method}: feeds must be a mapping of feed names to "
                        f"values, not {type(feeds).__name__}") from None
    if not pairs:
        return (), ()
    return tuple(zip(*pairs))  # type: ignore[return-value]


def _explain_type_error(method: str, fetches: Sequence[Any], names: Sequence[Any],
                        device: Any) -> None:
    """After the extension refused `method`'s arguments: a TypeError naming
    the one of the wrong type; returns when all are right."""
    for what, values in (("fetch", fetches), ("feed name", names)):
        for value in values:
            if not isinstance(value, str):
                raise TypeError(f"{method}: a {what} must be a str, not "
                                f"{type(value).__name__} ({value!r:.40})") from None
    if not isinstance(device, str):
        raise TypeError(f"{method}: output_device must be a device name such as "
                        f"'gpu:0', not {type(device).__name__}") from None


def _timeout_seconds(timeout: Any) -> float:
    """run()'s timeout (not None) in seconds for the extension."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer,
                                                              np.floating)):
        raise TypeError(f"run: timeout must be a number of seconds or None, "
                        f"not {type(timeout).__name__}")
    if not timeout > 0:
        raise InvalidArgumentError(f"run: timeout must be > 0 seconds, not {timeout}")
    try:
        return float(timeout)
    except OverflowError:  # an int past float's range: no limit, as inf
        return float("inf")


class Session:
    """A model ready to run: loaded, validated, optimised and placed on this
    machine's devices.

    Args:
      model: a path (.pb, .pbtxt, .onnx), the model's bytes, an
        ``onnx.ModelProto`` (serialized and imported; external data is not
        read), or a ``sluice.GraphBuilder``.
      config: a :class:`sluice.Config`; the process defaults of
        ``sluice.config`` fill in what it leaves out, and the SLUICE_*
        environment variables override both.
      device: run every node on this device where it has a kernel
        ("cpu:0", "gpu:1"), as ``sluice run --device``.
      dims: values of symbolic ONNX dimensions, fixed at import
        (``{"batch": 8}``, as ``--dim batch=8``).
      format: for bytes, "pb", "pbtxt" or "onnx" (default: guessed).

    Raises:
      NotFoundError: no such file. InvalidArgumentError: an invalid model or
      config. ResourceExhaustedError: a device's memory limit.
    """

    def __init__(self, model: Model, config: Optional[Config] = None,
                 device: Optional[str] = None, *,
                 dims: Optional[Mapping[str, int]] = None,
                 format: Optional[str] = None) -> None:
        path, data, fmt = _model_source(model, format)
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"Session: config must be a sluice.Config, not "
                            f"{type(config).__name__}")
        if dims is not None and not isinstance(dims, Mapping):
            raise TypeError(f"Session: dims must be a mapping of dimension names to "
                            f"sizes, not {type(dims).__name__}")
        text = _config.effective(config).to_text()
        try:
            dim_flags = [f"{k}={int(v)}" for k, v in (dims or {}).items()]
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(f"Session: dims {dims!r:.60}: each size must "
                                       f"be an int ({e})") from e
        device_name = "" if device is None else str(getattr(device, "name", device))
        self._s = _sluice._Session(path, data, fmt, text, device_name, dim_flags)
        _config.sessions_started += 1
        self._inputs = _specs(self._s.inputs())
        self._outputs = _specs(self._s.outputs())
        self._output_names = [o.name for o in self._outputs]
        self._run = self._s.run

    @property
    def inputs(self) -> List[TensorSpec]:
        """The graph inputs: name, dtype, shape (symbolic dims by name)."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorSpec]:
        """The graph outputs, in the order ``run(None)`` returns them."""
        return list(self._outputs)

    def run(self, fetches: Union[str, Sequence[str], None] = None,
            feeds: Optional[Mapping[str, Any]] = None, *,
            output_device: Optional[str] = None,
            timeout: Optional[float] = None) -> Any:
        """Runs one step.

        Args:
          fetches: an output or node name ("probs", "fc1/add:0"): returns
            one array; a list of names: returns a list; None: every graph
            output, as a list in ``outputs`` order.
          feeds: name -> NumPy array, ``__dlpack__`` object (PyTorch, CuPy,
            JAX; on the CPU or a CUDA GPU the session uses), list or scalar.
          output_device: None or "cpu" (default): NumPy arrays. A GPU of
            the session ("gpu:0"): ``sluice.DeviceArray`` objects (``__dlpack__``,
            ``__dlpack_device__``, ``shape``, ``dtype``, ``data_ptr``) over
            the results in that GPU's memory; each ``__dlpack__`` call gives
            a new capsule over the same memory,
            with no copy to the host (``torch.from_dlpack(out)`` shares
            it). The step's GPU work is finished when ``run`` returns.
          timeout: seconds the step may take (None: no limit). Past them
            the step stops before its next node and ``run`` raises
            ``DeadlineExceededError`` naming that node; the session stays
            usable. Ctrl-C (SIGINT) on the main thread stops the step the
            same way and raises ``KeyboardInterrupt``.

        Returns:
          NumPy arrays or DLPack objects (see the module docstring for what
          is copied).

        Raises:
          InvalidArgumentError: a missing, unknown, wrongly typed or shaped
            feed, an unknown fetch (the message names it and the expected
            signature), a feed on a device sluice does not take or a GPU the
            session does not use, a strided CUDA feed, or an output_device
            that is not the session's; a feed NumPy cannot make an array
            of, of a dtype sluice lacks (strings, objects, complex) or of
            rank above 32, or a DLPack producer whose device or capsule is
            unusable ("feed 'x': ..."). TypeError: feeds that are not a
            mapping, a feed name or fetch that is not a str, an
            output_device that is not a str, a timeout that is not a
            number. ResourceExhaustedError: out of memory.
        """
        # The fast path checks nothing the extension checks anyway: a
        # TypeError from it is explained afterwards (_explain_type_error).
        names, values = _feed_lists("run", feeds)
        device = "" if output_device is None else output_device
        seconds = 0.0 if timeout is None else _timeout_seconds(timeout)
        # Ctrl-C reaches Python's main thread only: there it stops the step.
        interruptible = threading.current_thread() is threading.main_thread()
        one = isinstance(fetches, str)
        if one:
            fetch_list = [fetches]
        elif fetches is None:
            fetch_list = []
        else:
            try:
                fetch_list = list(fetches)
            except TypeError:
                raise TypeError(f"run: fetches must be a name, a list of names or "
                                f"None, not {type(fetches).__name__}") from None
        try:
            out = self._run(fetch_list, names, values, device, seconds, interruptible)
        except TypeError:
            _explain_type_error("run", fetch_list, names, device)
            raise  # not an argument's type: the feed's own (a producer's) error
        return out[0] if one else out

    @property
    def rank(self) -> int:
        """This process's rank in a job of several processes (a config
        with ``cluster``, started by mpirun or SLUICE_RANK...); 0 alone."""
        return self._s.rank()

    @property
    def world_size(self) -> int:
        """The number of processes of the job; 1 alone."""
        return self._s.world_size()

    def serve(self, feeds: Optional[Mapping[str, Any]] = None) -> None:
        """On the ranks other than 0 of a job: runs this rank's part of
        every step rank 0's ``run`` starts, until rank 0's session goes
        away (returns) or the job breaks (raises), as ``sluice run`` does
        on those ranks. ``feeds``: values of the feeds rank 0's steps
        expect on this rank (C++ ``StepOptions::feeds_on_ranks``), the same
        for every step.

        Raises:
          FailedPreconditionError: on rank 0, or in a session of one
            process. The job's errors (a rank that stopped answering).
        """
        feeds = feeds or {}
        self._s.serve(list(feeds), list(feeds.values()))

    def placement(self) -> Report:
        """What ``sluice place --json --explain`` prints for this model on
        this machine with this session's config (after the environment
        overrides): ``devices`` (name, type, memory_limit, budget, nodes,
        weight_bytes, peak_activation_bytes, busy_seconds), ``nodes`` (name,
        op, device, reason), ``links``, ``transfers`` (each with
        ``constant``: a constant the destination holds itself, not copied
        per step), ``estimated_step_seconds``, ``strategy``,
        ``optimization``, ``notes``."""
        return Report.wrap(self._s.placement())

    def bench(self, feeds: Optional[Mapping[str, Any]] = None, *,
              warmup: int = 3, runs: Optional[int] = None,
              seconds: float = 2.0, top: int = 10,
              trace: Optional[str] = None, seed: int = 0,
              io_device: Optional[str] = None) -> Report:
        """Times steps as ``sluice bench --json`` does, on this session:
        ``session_create_s``, ``first_run_s``, ``runs``, ``latency_s`` (min,
        p50, p90, p99, max), ``steps_per_s``, ``peak_memory``, ``profile``
        (top ops and nodes, bytes per link) and ``notes``; ``text`` holds the
        report ``sluice bench`` prints. Inputs not in ``feeds`` get random
        values (seeded). ``trace``: write one profiled step as a Chrome
        trace. Timed steps: ``runs`` of them, else as many as ``seconds``
        allows. ``io_device`` (e.g. ``"gpu:0"``, as ``sluice bench
        --io-device``): the feeds are copied there once, before timing, and
        the results stay there, so no step copies to or from the host."""
        if warmup < 0 or (runs is not None and runs < 1) or seconds <= 0 or top < 1:
            raise InvalidArgumentError(
                "bench: warmup >= 0, runs >= 1, seconds > 0 and top >= 1")
        names, values = _feed_lists("bench", feeds)
        try:
            raw, text = self._s.bench(names, values, warmup, runs or 0, float(seconds),
                                      top, trace or "", seed, io_device or "")
        except TypeError:
            _explain_type_error("bench", (), names, "")
            raise
        report = Report.wrap(raw)
        report["text"] = text
        return report

    @property
    def log(self) -> List[str]:
        """What the session noted while starting (environment overrides)."""
        return self._s.log()

    @property
    def config_text(self) -> str:
        """The RuntimeConfig in force, environment overrides applied."""
        return self._s.config_text()

    @property
    def devices(self) -> List[str]:
        """The devices this session set up ("/cpu:0", "/gpu:0")."""
        return self._s.devices()

    def stats(self) -> Dict[str, Union[int, str]]:
        """runs, plans_compiled, plans_cached, plans_evicted,
        plan_cache_bytes, gpu_graphs, gpu_graph_steps, and the host copies:
        host_copies_direct (one DMA from or into pinned memory, such as a
        ``pin_memory()`` feed), host_copies_staged, gpu_graph_direct_feeds,
        gpu_graph_copied_feeds; gpu_kernel_host_waits (waits for a GPU
        inside kernels that read a count or a check back: NonZero,
        NonMaxSuppression, ...) and gpu_graph_why_not (a string: why the
        last plan used on a GPU is not replayed as a CUDA graph, or "")."""
        return self._s.stats()

    def release_unused_memory(self) -> int:
        """Gives GPU memory that holds no tensor back, and the host blocks
        kept for the next CPU steps; returns the bytes."""
        return self._s.release_unused_memory()

    def __repr__(self) -> str:
        ins = ", ".join(f"{i.name}: {i.dtype}{list(i.shape) if i.shape is not None else '[?]'}"
                        for i in self._inputs)
        return f"<sluice.Session ({ins}) -> {self._output_names}>"


def place(model: Model, devices: Optional[str] = None, *,
          config: Optional[Config] = None, strategy: Optional[str] = None,
          batch: int = 1, optimization_level: Optional[str] = None,
          format: Optional[str] = None) -> Report:
    """Places a model without running it, as ``sluice place --json
    --explain``: on ``devices`` ("4xgpu:80GiB", "2xgpu:16GiB,cpu"), which
    need not exist, or on this machine's devices when None. ``strategy``:
    "auto", "single" or "manual"; ``batch``: the value of unknown
    dimensions. Returns the same Report as :meth:`Session.placement`."""
    path, data, fmt = _model_source(model, format)
    if int(batch) < 1:
        raise InvalidArgumentError(f"batch {batch}: expected at least 1")
    cfg = _config.effective(config).merged(
        Config(placement=strategy, optimization_level=optimization_level))
    return Report.wrap(_sluice.place(path, data, fmt, cfg.to_text(),
                                     devices or "", int(batch)))


__all__ = ["Session", "TensorSpec", "Report", "place"]
