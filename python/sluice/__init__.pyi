# Type stubs for the sluice package: every public name, with its signature.
# The docstrings are on the objects themselves (help(sluice.Session)).
from typing import (Any, Dict, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)
import os

import numpy as np

from sluice import config as config
from sluice import errors as errors
from sluice.graph_builder import GraphBuilder as GraphBuilder
from sluice.graph_builder import GraphTensor as GraphTensor

__version__: str
with_cuda: bool
with_onnx: bool
dtypes: Tuple[str, ...]

MemoryLimit = Union[int, float, str]
Dim = Union[int, str, None]
Model = Union[str, os.PathLike[str], bytes, bytearray, memoryview, Any]

# --- errors -------------------------------------------------------------------
class DeviceArray:
    """A result left in a GPU's memory by Session.run(output_device="gpu:N")."""
    def __dlpack__(self, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def data_ptr(self) -> int: ...

class Error(Exception):
    code: str
    code_value: int
    message: str
    def __init__(self, message: str = ...) -> None: ...
class CancelledError(Error): ...
class UnknownError(Error): ...
class InvalidArgumentError(Error, ValueError): ...
class DeadlineExceededError(Error): ...
class NotFoundError(Error): ...
class AlreadyExistsError(Error): ...
class PermissionDeniedError(Error): ...
class ResourceExhaustedError(Error): ...
class FailedPreconditionError(Error): ...
class AbortedError(Error): ...
class OutOfRangeError(Error): ...
class UnimplementedError(Error): ...
class InternalError(Error): ...
class UnavailableError(Error): ...
class DataLossError(Error): ...
class UnauthenticatedError(Error): ...
def error_for_code(code: int, message: str) -> Error: ...

# --- config -------------------------------------------------------------------
class Config:
    # Every RuntimeConfig field (proto/config.proto) is a keyword argument
    # and an attribute of the same name: Config.fields() lists them.
    def __init__(self, text: Optional[str] = ..., *,
                 memory_limit: Union[MemoryLimit, Mapping[Any, MemoryLimit], None] = ...,
                 logical_devices: Optional[Mapping[Any, Any]] = ...,
                 placement: Optional[str] = ...,
                 precision: Optional[str] = ...,
                 **fields: Any) -> None: ...
    @staticmethod
    def fields() -> List[Tuple[str, str, List[str]]]: ...
    @classmethod
    def from_text(cls, text: str) -> Config: ...
    @classmethod
    def from_file(cls, path: str) -> Config: ...
    def merged(self, other: Optional[Config]) -> Config: ...
    def copy(self) -> Config: ...
    def get(self, name: str) -> Any: ...
    def set(self, name: str, value: Any) -> None: ...
    def to_text(self) -> str: ...
    def save(self, path: str) -> None: ...
    def __getattr__(self, name: str) -> Any: ...

# --- devices ------------------------------------------------------------------
class PhysicalDevice(NamedTuple):
    name: str
    device_type: str
    index: int
    memory_bytes: int
    details: Dict[str, Any]
def devices() -> Dict[str, Any]: ...
def list_physical_devices(kind: Optional[str] = ...) -> List[PhysicalDevice]: ...

# --- sessions -----------------------------------------------------------------
class TensorSpec(NamedTuple):
    name: str
    dtype: str
    shape: Optional[Tuple[Dim, ...]]

class Report(Dict[str, Any]):
    def __getattr__(self, name: str) -> Any: ...

class Session:
    def __init__(self, model: Model, config: Optional[Config] = ...,
                 device: Optional[str] = ..., *,
                 dims: Optional[Mapping[str, int]] = ...,
                 format: Optional[str] = ...) -> None: ...
    @property
    def inputs(self) -> List[TensorSpec]: ...
    @property
    def outputs(self) -> List[TensorSpec]: ...
    def run(self, fetches: Union[str, Sequence[str], None] = ...,
            feeds: Optional[Mapping[str, Any]] = ..., *,
            output_device: Optional[str] = ...,
            timeout: Optional[float] = ...) -> Any: ...
    def placement(self) -> Report: ...
    def bench(self, feeds: Optional[Mapping[str, Any]] = ..., *,
              warmup: int = ..., runs: Optional[int] = ...,
              seconds: float = ..., top: int = ...,
              trace: Optional[str] = ..., seed: int = ...,
              io_device: Optional[str] = ...) -> Report: ...
    @property
    def log(self) -> List[str]: ...
    @property
    def config_text(self) -> str: ...
    @property
    def devices(self) -> List[str]: ...
    def stats(self) -> Dict[str, int]: ...
    def release_unused_memory(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def world_size(self) -> int: ...
    def serve(self, feeds: Optional[Mapping[str, Any]] = ...) -> None: ...

def place(model: Model, devices: Optional[str] = ..., *,
          config: Optional[Config] = ..., strategy: Optional[str] = ...,
          batch: int = ..., optimization_level: Optional[str] = ...,
          format: Optional[str] = ...) -> Report: ...

# --- custom CUDA kernels ------------------------------------------------------
OutputSpec = Tuple[Optional[Any], Union[int, Sequence[int]]]

class CudaKernel:
    source: str
    name: str
    outputs: List[OutputSpec]
    block: List[int]
    grid: Optional[List[int]]
    grid_from_output: int
    shared_memory_bytes: int
    options: List[str]
    node_name: str
    cpu_fallback: Union[str, GraphBuilder, None]
    config: Optional[Config]
    def __init__(self, source: str, name: str, *,
                 outputs: Optional[Sequence[OutputSpec]] = ...,
                 block: Union[int, Sequence[int]] = ...,
                 grid: Union[int, Sequence[int], None] = ...,
                 grid_from_output: int = ...,
                 shared_memory_bytes: int = ...,
                 options: Sequence[str] = ...,
                 node_name: str = ...,
                 cpu_fallback: Union[str, GraphBuilder, None] = ...,
                 config: Optional[Config] = ...) -> None: ...
    def graph_text(self, input_dtypes: Sequence[Any],
                   input_shapes: Optional[Sequence[Optional[Sequence[int]]]] = ...) -> str: ...
    def add_to(self, builder: GraphBuilder, *inputs: GraphTensor,
               name: Optional[str] = ...) -> Any: ...
    def session(self, input_dtypes: Sequence[Any]) -> Session: ...
    def __call__(self, *args: Any) -> Any: ...

def cuda_kernel(source: str, name: str, *,
                outputs: Optional[Sequence[OutputSpec]] = ...,
                block: Union[int, Sequence[int]] = ...,
                grid: Union[int, Sequence[int], None] = ...,
                grid_from_output: int = ...,
                shared_memory_bytes: int = ...,
                options: Sequence[str] = ...,
                node_name: str = ...,
                cpu_fallback: Union[str, GraphBuilder, None] = ...,
                config: Optional[Config] = ...) -> CudaKernel: ...

# --- onnxruntime's names (sluice/ort.py) --------------------------------------
from sluice.ort import (ExecutionMode as ExecutionMode,
                        GraphOptimizationLevel as GraphOptimizationLevel,
                        InferenceSession as InferenceSession,
                        IOBinding as IOBinding, NodeArg as NodeArg,
                        OrtValue as OrtValue, SessionOptions as SessionOptions,
                        get_all_providers as get_all_providers,
                        get_available_providers as get_available_providers,
                        get_device as get_device)

# --- TensorFlow's names (sluice/config.py, sluice/device_scope.py) -------------
from sluice.config import (LogicalDevice as LogicalDevice,
                           LogicalDeviceConfiguration as LogicalDeviceConfiguration,
                           list_logical_devices as list_logical_devices,
                           set_visible_devices as set_visible_devices)
from sluice.device_scope import device as device
