"""sluice: run dataflow graphs (.pb, .pbtxt, ONNX) on the CPU and CUDA GPUs.

    import numpy as np, sluice
    sess = sluice.Session("examples/mlp.pbtxt")
    logits, probs = sess.run(None, {"x": np.ones((4, 16), np.float32)})

See python/README.md and the README's Python quick start.
"""

from sluice import _sluice
from sluice import errors
from sluice.errors import *  # noqa: F401,F403 - the exception classes
from sluice.errors import error_for_code as _error_for_code

_sluice._set_error_factory(_error_for_code)

from sluice import _libraries  # noqa: E402

_libraries.register()  # CUDA libraries from nvidia-* pip packages first

from sluice import config  # noqa: E402
from sluice.config import Config  # noqa: E402
from sluice.config import (LogicalDevice, LogicalDeviceConfiguration,  # noqa: E402
                           list_logical_devices, set_visible_devices)
from sluice.devices import PhysicalDevice, devices, list_physical_devices  # noqa: E402
from sluice.device_scope import device  # noqa: E402
from sluice.session import Report, Session, TensorSpec, place  # noqa: E402
from sluice.graph_builder import GraphBuilder, GraphTensor  # noqa: E402
from sluice.cuda_kernel import CudaKernel, cuda_kernel  # noqa: E402
from sluice.ort import (ExecutionMode, GraphOptimizationLevel, InferenceSession,  # noqa: E402
                        IOBinding, NodeArg, OrtValue, SessionOptions,
                        get_all_providers, get_available_providers, get_device)
DeviceArray = _sluice.DeviceArray  # results left on a GPU (Session.run)

__version__ = "0.1.0"
#: Whether this build has CUDA kernels (a CPU-only wheel has none).
with_cuda: bool = _sluice.with_cuda
#: Whether this build imports ONNX models.
with_onnx: bool = _sluice.with_onnx
#: Every dtype name sluice knows ("float32", "bfloat16", "int4", ...).
dtypes = tuple(_sluice.dtype_names())

__all__ = ["Config", "CudaKernel", "PhysicalDevice", "Report", "Session", "TensorSpec",
           "config", "cuda_kernel", "devices", "dtypes", "errors", "list_physical_devices",
           "place", "with_cuda", "with_onnx", "__version__"] + errors.__all__
__all__ += ["DeviceArray", "GraphBuilder", "GraphTensor"]
# onnxruntime's names (sluice/ort.py) and TensorFlow's (sluice/config.py,
# sluice/device_scope.py).
__all__ += ["ExecutionMode", "GraphOptimizationLevel", "InferenceSession",
            "IOBinding", "NodeArg", "OrtValue", "SessionOptions",
            "get_all_providers", "get_available_providers", "get_device",
            "LogicalDevice", "LogicalDeviceConfiguration", "device",
            "list_logical_devices", "set_visible_devices"]
