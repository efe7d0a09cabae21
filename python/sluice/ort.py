"""onnxruntime's Python names over sluice, so that a program switches by
changing its import:

    import sluice as ort                     # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx",
                                providers=["CUDAExecutionProvider",
                                           "CPUExecutionProvider"])
    print(sess.get_inputs()[0])              # NodeArg(name='x', type='tensor(float)', shape=['N', 3])
    outputs = sess.run(None, {"x": x})       # every output, a list of NumPy arrays

What maps onto what (python/README.md has the table): SessionOptions'
thread counts and optimisation level, the execution providers and their
options (device_id, gpu_mem_limit, arena_extend_strategy, use_tf32) become
fields of the session's :class:`sluice.Config`; IO binding is sluice's
device feeds and fetch device (``Session.run(..., output_device=)``). What
has no counterpart in sluice is refused with a message saying so, or, for
tuning knobs that cannot change results (logging, memory patterns),
accepted and ignored as documented.
"""

from __future__ import annotations

import enum
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from sluice import _sluice
from sluice import config as _config
from sluice.config import Config
from sluice.errors import InvalidArgumentError
from sluice.session import Session

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels; sluice has three (optimization_level)."""
    ORT_DISABLE_ALL = 0      # NONE
    ORT_ENABLE_BASIC = 1     # BASIC
    ORT_ENABLE_EXTENDED = 2  # ALL (sluice's fusions)
    ORT_ENABLE_LAYOUT = 3    # ALL
    ORT_ENABLE_ALL = 99      # ALL


_LEVELS = {0: "NONE", 1: "BASIC", 2: "ALL", 3: "ALL", 99: "ALL"}


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0  # inter_op_threads: 1
    ORT_PARALLEL = 1    # inter_op_threads: inter_op_num_threads (0: the cores)


# SessionOptions attributes onnxruntime has that change nothing sluice
# computes; accepted and ignored.
_IGNORED_OPTIONS = {
    "log_severity_level": 2, "log_verbosity_level": 0, "logid": "",
    "enable_mem_pattern": True, "enable_mem_reuse": True,
    "enable_cpu_mem_arena": True, "use_deterministic_compute": False,
}


class SessionOptions:
    """onnxruntime.SessionOptions: ``intra_op_num_threads`` and
    ``inter_op_num_threads`` (0: one per core) are the config's
    intra_op_threads and inter_op_threads; ``execution_mode``
    ORT_SEQUENTIAL runs one node at a time (inter_op_threads 1),
    ORT_PARALLEL independent nodes at once; ``graph_optimization_level``
    is optimization_level (DISABLE_ALL: NONE, ENABLE_BASIC: BASIC, the rest:
    ALL). Logging and memory-pattern options are accepted and ignored;
    ``add_session_config_entry`` and the rest raise NotImplementedError.
    sluice's own fields: ``config`` (a :class:`sluice.Config` the options
    are laid over)."""

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode: Optional[ExecutionMode] = None
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self.config: Optional[Config] = None
        for name, value in _IGNORED_OPTIONS.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        known = {"intra_op_num_threads", "inter_op_num_threads",
                 "graph_optimization_level", "execution_mode",
                 "enable_profiling", "optimized_model_filepath", "config"}
        if name not in known and name not in _IGNORED_OPTIONS:
            raise AttributeError(
                f"SessionOptions.{name}: not an option sluice maps (see "
                "python/README.md, 'onnxruntime names')")
        object.__setattr__(self, name, value)

    def add_session_config_entry(self, key: str, value: str) -> None:
        raise NotImplementedError(
            f"SessionOptions.add_session_config_entry('{key}'): onnxruntime's "
            "config keys have no sluice counterpart; use options.config "
            "(a sluice.Config)")

    def to_config(self) -> Config:
        """The sluice Config these options stand for."""
        if self.enable_profiling:
            raise NotImplementedError(
                "SessionOptions.enable_profiling: use Session.bench(trace=...) "
                "for a Chrome trace of a step")
        if self.optimized_model_filepath:
            raise NotImplementedError(
                "SessionOptions.optimized_model_filepath: sluice does not "
                "write the optimised graph; `sluice inspect --optimized` "
                "shows it")
        inter = int(self.inter_op_num_threads)
        if self.execution_mode is not None and \
                ExecutionMode(self.execution_mode) == ExecutionMode.ORT_SEQUENTIAL:
            inter = 1
        level = _LEVELS.get(int(self.graph_optimization_level))
        if level is None:
            raise InvalidArgumentError(
                f"graph_optimization_level {self.graph_optimization_level!r}: "
                "expected a GraphOptimizationLevel")
        mine = Config(intra_op_threads=int(self.intra_op_num_threads),
                      inter_op_threads=inter, optimization_level=level)
        return mine if self.config is None else self.config.merged(mine)


class NodeArg:
    """A graph input or output as onnxruntime describes it: ``name``,
    ``type`` ("tensor(float)") and ``shape`` (ints, symbolic dims by name,
    None for an unknown one)."""

    def __init__(self, name: str, type: str, shape: Optional[List[Any]]) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    __str__ = __repr__


# sluice dtype names whose ONNX names differ.
_ONNX_TYPES = {"float32": "float", "float64": "double"}


def _node_arg(spec: Any) -> NodeArg:
    shape = None if spec.shape is None else list(spec.shape)
    return NodeArg(spec.name, f"tensor({_ONNX_TYPES.get(spec.dtype, spec.dtype)})", shape)


def get_available_providers() -> List[str]:
    """CUDAExecutionProvider first when this build has CUDA and a GPU is
    usable, then CPUExecutionProvider."""
    providers = [CPU]
    if _sluice.with_cuda and any(
            g.get("usable") for g in _sluice.devices().get("gpus", [])):
        providers.insert(0, CUDA)
    return providers


def get_all_providers() -> List[str]:
    """The providers sluice knows: CUDAExecutionProvider and
    CPUExecutionProvider."""
    return [CUDA, CPU]


def get_device() -> str:
    """"GPU" when a GPU is usable, else "CPU" (onnxruntime.get_device)."""
    return "GPU" if CUDA in get_available_providers() else "CPU"


def _provider_list(providers: Optional[Sequence[Any]],
                   provider_options: Optional[Sequence[Mapping[str, Any]]]
                   ) -> List[Tuple[str, Dict[str, Any]]]:
    """[(name, options)] from onnxruntime's two forms: names with a
    parallel list of option dicts, or (name, options) tuples."""
    if providers is None:
        return []
    if isinstance(providers, str):
        raise InvalidArgumentError(
            f"providers: expected a list such as ['{providers}'], got a string")
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgumentError(
            f"provider_options: {len(provider_options)} dicts for "
            f"{len(providers)} providers; give one per provider")
    out = []
    for i, p in enumerate(providers):
        if isinstance(p, (tuple, list)):
            name, options = p[0], dict(p[1])
        else:
            name, options = p, {}
        if provider_options is not None:
            options.update(provider_options[i])
        out.append((str(name), {str(k): v for k, v in options.items()}))
    return out


def _cuda_options(options: Mapping[str, Any]) -> Tuple[int, Dict[str, Any]]:
    """(device_id, Config fields) for CUDAExecutionProvider's options."""
    fields: Dict[str, Any] = {}
    device_id = int(options.get("device_id", 0))
    for key, value in options.items():
        if key == "device_id":
            continue
        if key == "gpu_mem_limit":
            fields["memory_limit"] = {f"gpu:{device_id}": int(value)}
        elif key == "arena_extend_strategy":
            if str(value) not in ("kNextPowerOfTwo", "kSameAsRequested", "0", "1"):
                raise InvalidArgumentError(
                    f"arena_extend_strategy '{value}': expected kNextPowerOfTwo "
                    "or kSameAsRequested")
            # Either way the arena grows on demand, up to the limit.
            fields["allow_growth"] = True
        elif key == "use_tf32":
            fields["allow_tf32"] = str(value) not in ("0", "False", "false")
        elif key in ("cudnn_conv_algo_search", "do_copy_in_default_stream",
                     "cudnn_conv_use_max_workspace", "cudnn_conv1d_pad_to_nc1d",
                     "enable_cuda_graph", "tunable_op_enable"):
            # sluice times cuDNN's algorithms itself, copies on its own
            # streams and replays CUDA graphs by default (gpu_graphs).
            if key == "enable_cuda_graph":
                fields["gpu_graphs"] = str(value) not in ("0", "False", "false")
        else:
            raise InvalidArgumentError(
                f"CUDAExecutionProvider option '{key}': not one sluice maps "
                "(device_id, gpu_mem_limit, arena_extend_strategy, use_tf32, "
                "enable_cuda_graph; see python/README.md)")
    return device_id, fields


def _providers_config(providers: List[Tuple[str, Dict[str, Any]]],
                      available: Optional[List[str]] = None) -> Config:
    """The Config fields a provider list stands for, with ``available``
    providers (default: get_available_providers()). CUDA listed where it
    is not available falls back to the CPU with a warning, as onnxruntime
    does."""
    if not providers:
        return Config()
    if available is None:
        available = get_available_providers()
    names = [name for name, _ in providers]
    fields: Dict[str, Any] = {}
    for name, options in providers:
        if name == CUDA and CUDA not in available:
            _cuda_options(options)  # still checked
            names.remove(CUDA)
            warnings.warn("CUDAExecutionProvider is not available here "
                          f"({'this build has no CUDA' if not _sluice.with_cuda else 'no usable GPU'}); "
                          "running on the CPU", stacklevel=4)
        elif name == CUDA:
            device_id, cuda_fields = _cuda_options(options)
            fields.update(cuda_fields)
            # The GPU onnxruntime would use: the session places on it.
            fields["visible_gpus"] = [device_id]
        elif name == CPU:
            if options:
                raise InvalidArgumentError(
                    f"CPUExecutionProvider options {sorted(options)}: sluice "
                    "maps none (use SessionOptions for threads)")
        else:
            warnings.warn(f"sluice has no {name}; it is ignored "
                          f"(available: {', '.join(get_available_providers())})",
                          stacklevel=4)
    if CUDA not in names:
        fields["use_gpu"] = False
    return Config(**fields)


class OrtValue:
    """A tensor for IO binding: a NumPy array, or data on a GPU (a
    sluice.DeviceArray, or any CUDA ``__dlpack__`` object)."""

    def __init__(self, value: Any, device_type: str = "cpu", device_id: int = 0) -> None:
        self._value = value
        self._device = (str(device_type).lower(), int(device_id))

    @staticmethod
    def ortvalue_from_numpy(array: Any, device_type: str = "cpu",
                            device_id: int = 0) -> "OrtValue":
        """``array`` on "cpu", or to be copied to "cuda" device ``device_id``
        once it is bound to a session (sluice copies through a session)."""
        kind = str(device_type).lower()
        if kind not in ("cpu", "cuda"):
            raise InvalidArgumentError(
                f"device_type '{device_type}': sluice has 'cpu' and 'cuda'")
        return OrtValue(np.ascontiguousarray(array), kind, device_id)

    def device_name(self) -> str:
        return self._device[0]

    def is_tensor(self) -> bool:
        return True

    def shape(self) -> List[int]:
        return list(self._value.shape)

    def data_type(self) -> str:
        dtype = getattr(self._value, "dtype", None)
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        return f"tensor({_ONNX_TYPES.get(name, name)})"

    def numpy(self) -> np.ndarray:
        if isinstance(self._value, np.ndarray):
            return self._value
        session = getattr(self, "_session", None)
        if session is None:
            raise InvalidArgumentError(
                "OrtValue.numpy(): this value is on a GPU; copy it with "
                "IOBinding.copy_outputs_to_cpu()")
        return session._s.copy_to(self._value, "cpu")

    def _on(self, session: "InferenceSession") -> Any:
        """The value as a feed of `session`: copied to the GPU once."""
        kind, index = self._device
        if kind == "cuda" and isinstance(self._value, np.ndarray):
            self._value = session._session._s.copy_to(
                self._value, session._gpu_name(index))
        self._session = session._session
        return self._value


class IOBinding:
    """onnxruntime's IO binding over sluice's device feeds and fetch
    device: inputs bound on "cuda" are copied to that GPU once (when bound)
    and read in place by every run; outputs bound to "cuda" stay on the GPU
    (``output_device``). All outputs of a step go to one device."""

    def __init__(self, session: "InferenceSession") -> None:
        self._session = session
        self._inputs: Dict[str, Any] = {}
        self._outputs: List[str] = []
        self._output_device: Optional[str] = None
        self._output_cuda_id = 0
        self._results: List[OrtValue] = []

    def bind_cpu_input(self, name: str, array: Any) -> None:
        self._inputs[name] = np.ascontiguousarray(array)

    def bind_input(self, name: str, device_type: str = "cpu", device_id: int = 0,
                   element_type: Any = None, shape: Any = None,
                   buffer_ptr: Any = None) -> None:
        if buffer_ptr is not None and not hasattr(buffer_ptr, "__dlpack__"):
            raise NotImplementedError(
                "bind_input(buffer_ptr=int): sluice takes device memory as a "
                "__dlpack__ object (torch, CuPy) so that it knows its owner; "
                "pass that object, or use bind_ortvalue_input")
        if buffer_ptr is None:
            raise InvalidArgumentError(f"bind_input('{name}'): give buffer_ptr "
                                       "(a __dlpack__ object) or use bind_cpu_input")
        self._inputs[name] = buffer_ptr

    def bind_ortvalue_input(self, name: str, value: OrtValue) -> None:
        self._inputs[name] = value._on(self._session)

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type: Any = None, shape: Any = None,
                    buffer_ptr: Any = None) -> None:
        if buffer_ptr is not None:
            raise NotImplementedError(
                "bind_output(buffer_ptr=...): sluice allocates its results "
                "(preallocated outputs are not supported); bind the device "
                "and read get_outputs()")
        kind = str(device_type).lower()
        if kind not in ("cpu", "cuda"):
            raise InvalidArgumentError(
                f"device_type '{device_type}': sluice has 'cpu' and 'cuda'")
        device = "cpu" if kind == "cpu" else self._session._gpu_name(int(device_id))
        if self._output_device not in (None, device):
            raise InvalidArgumentError(
                f"bind_output('{name}', {device}): the outputs already go to "
                f"{self._output_device}; sluice fetches a step's outputs to "
                "one device")
        self._output_device = device
        self._output_cuda_id = int(device_id)
        self._outputs.append(name)

    def bind_ortvalue_output(self, name: str, value: OrtValue) -> None:
        raise NotImplementedError(
            "bind_ortvalue_output: sluice allocates its results (preallocated "
            "outputs are not supported); use bind_output(name, device)")

    def get_outputs(self) -> List[OrtValue]:
        return list(self._results)

    def copy_outputs_to_cpu(self) -> List[np.ndarray]:
        return [v.numpy() for v in self._results]

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._output_device = None

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: bound inputs are copied when bound."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: a run's GPU work has finished when it returns."""

    def _run(self) -> None:
        session = self._session._session
        names = self._outputs or [o.name for o in session.outputs]
        device = self._output_device or "cpu"
        values = session.run(names, self._inputs,
                             output_device=None if device == "cpu" else device)
        kind, index = ("cpu", 0) if device == "cpu" else ("cuda", self._output_cuda_id)
        self._results = []
        for v in values:
            value = OrtValue(v, kind, index)
            value._session = session
            self._results.append(value)


class InferenceSession:
    """onnxruntime.InferenceSession over a :class:`sluice.Session`.

    Args:
      path_or_bytes: a model path (.onnx, .pb, .pbtxt) or its bytes.
      sess_options: a :class:`SessionOptions`.
      providers: names or (name, options) tuples; "CUDAExecutionProvider"
        lets the session use GPU ``device_id`` (default 0) with the CPU for
        what it cannot run; "CPUExecutionProvider" alone keeps every node on
        the CPU; None: sluice's own choice (every usable GPU, then the CPU).
      provider_options: one dict per provider (device_id, gpu_mem_limit in
        bytes, arena_extend_strategy, use_tf32, enable_cuda_graph).
    """

    def __init__(self, path_or_bytes: Union[str, "os.PathLike[str]", bytes],
                 sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Mapping[str, Any]]] = None,
                 **kwargs: Any) -> None:
        if kwargs:
            raise InvalidArgumentError(
                f"InferenceSession: unknown arguments {sorted(kwargs)}")
        self._model = path_or_bytes
        self._options = sess_options or SessionOptions()
        self._make(providers, provider_options)

    def _make(self, providers: Optional[Sequence[Any]],
              provider_options: Optional[Sequence[Mapping[str, Any]]]) -> None:
        listed = _provider_list(providers, provider_options)
        config = self._options.to_config().merged(_providers_config(listed))
        model = self._model
        if isinstance(model, (bytes, bytearray, memoryview)):
            self._session = Session(bytes(model), config=config, format="onnx")
        else:
            self._session = Session(os.fspath(model), config=config)
        self._providers = listed
        # The CUDA device the providers pinned the session to (it is the
        # session's /gpu:0 then), or None: every GPU, /gpu:N is CUDA device N.
        self._cuda_device: Optional[int] = None
        for name, options in listed:
            if name == CUDA and CUDA in get_available_providers():
                self._cuda_device = int(options.get("device_id", 0))

    def _gpu_name(self, device_id: int) -> str:
        """The session's name for CUDA device ``device_id`` ("gpu:0")."""
        if self._cuda_device is None:
            return f"gpu:{device_id}"
        if device_id != self._cuda_device:
            raise InvalidArgumentError(
                f"CUDA device {device_id}: this session runs on CUDA device "
                f"{self._cuda_device} (its CUDAExecutionProvider's device_id)")
        return "gpu:0"

    # --- onnxruntime's methods ---------------------------------------------

    def get_inputs(self) -> List[NodeArg]:
        return [_node_arg(s) for s in self._session.inputs]

    def get_outputs(self) -> List[NodeArg]:
        return [_node_arg(s) for s in self._session.outputs]

    def get_overridable_initializers(self) -> List[NodeArg]:
        """Always empty: sluice folds initializers into the graph."""
        return []

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Mapping[str, Any], run_options: Any = None) -> List[np.ndarray]:
        """Every output (output_names None or empty) or those named, as a
        list of NumPy arrays in that order."""
        names = list(output_names) if output_names else None
        return self._session.run(names, input_feed)

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: Any = None) -> None:
        iobinding._run()

    def get_providers(self) -> List[str]:
        """The providers in effect: CUDAExecutionProvider first when the
        session placed on a GPU."""
        if any(d.startswith("/gpu:") for d in self._session.devices):
            return [CUDA, CPU]
        return [CPU]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        options = {name: {k: str(v) for k, v in opts.items()}
                   for name, opts in self._providers}
        return {p: options.get(p, {}) for p in self.get_providers()}

    def set_providers(self, providers: Optional[Sequence[Any]] = None,
                      provider_options: Optional[Sequence[Mapping[str, Any]]] = None) -> None:
        """Remakes the session with these providers."""
        self._make(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        return self._options

    @property
    def session(self) -> Session:
        """The sluice.Session underneath (placement(), bench(), config)."""
        return self._session

    def end_profiling(self) -> str:
        raise NotImplementedError(
            "end_profiling: use Session.bench(trace='step.json') for a Chrome "
            "trace of a step (InferenceSession.session)")

    def get_modelmeta(self) -> Any:
        raise NotImplementedError(
            "get_modelmeta: sluice keeps no ONNX model metadata")


__all__ = ["ExecutionMode", "GraphOptimizationLevel", "InferenceSession",
           "IOBinding", "NodeArg", "OrtValue", "SessionOptions",
           "get_all_providers", "get_available_providers", "get_device"]
