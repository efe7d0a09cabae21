"""Custom CUDA kernels: CUDA C++ source as a graph node (the CudaKernel op,
docs/ops.md "Custom CUDA kernels"), as Numba's ``cuda.jit`` or CuPy's
``RawKernel`` users write them.

    saxpy = sluice.cuda_kernel(r'''
    extern "C" __global__ void saxpy(const float* x, const float* y,
                                     float* out, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) out[i] = 2.5f * x[i] + y[i];
    }''', "saxpy")
    out = saxpy(x, y)                    # NumPy (or DLPack) arrays in and out
    text = saxpy.graph_text(["float32", "float32"])   # the one-node model
    z = saxpy.add_to(builder, x_t, y_t)  # a node of a sluice.GraphBuilder

The kernel's parameters are a pointer per input, a pointer per output, then
``long long n``: the element count of output ``grid_from_output``. sluice
compiles the source with NVRTC for each GPU when the graph's plan is made
(a compile error raises InvalidArgumentError with the compiler's log) and
caches it. On the CPU the node runs its ``cpu_fallback`` graph (a text
GraphDef taking the same inputs and giving the same outputs) when it has
one; without one, making a session of such a graph on a machine without a
GPU raises InvalidArgumentError naming the node.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from sluice.config import Config
from sluice.errors import InvalidArgumentError, UnimplementedError
from sluice.graph_builder import GraphBuilder, GraphTensor
from sluice.session import Session

OutputSpec = Tuple[Optional[str], Union[int, Sequence[int]]]

# sluice dtype names whose DataType enum name is not DT_<NAME>.
_ENUM_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE",
               "float8_e8m0fnu": "DT_FLOAT8_E8M0",
               "float4_e2m1fn": "DT_FLOAT4_E2M1"}


def _enum(dtype: str) -> str:
    return _ENUM_NAMES.get(dtype, "DT_" + dtype.upper())


def _quote(text: str) -> str:
    """A text-format string literal: printable ASCII as is, the rest as
    octal escapes of its UTF-8 bytes."""
    out = []
    for b in text.encode("utf-8"):
        c = chr(b)
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


def _dims(value: Union[int, Sequence[int]], what: str) -> List[int]:
    dims = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if not 1 <= len(dims) <= 3:
        raise InvalidArgumentError(f"{what}: 1 to 3 dimensions (x, y, z), got {dims}")
    return dims


def _dtype_name(value: Any) -> str:
    """A sluice dtype name from a name, a NumPy dtype or an array."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return value.dtype.name
    return np.dtype(value).name


def _cuda_argument(value: Any) -> Optional[Tuple[str, int]]:
    """(dtype name, CUDA device index) of a ``__dlpack__`` argument in CUDA
    memory (a torch or CuPy GPU array); None for one in host memory."""
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        return None
    device = getattr(value, "__dlpack_device__", lambda: (1, 0))()
    if int(device[0]) in (1, 3):  # kDLCPU, kDLCUDAHost
        return None
    if int(device[0]) != 2:  # kDLCUDA
        raise UnimplementedError(
            f"a CudaKernel argument on DLPack device {tuple(device)}: sluice "
            "takes host memory and CUDA device memory")
    dtype = getattr(value, "dtype", None)
    try:
        name = np.dtype(dtype).name  # CuPy, NumPy-like
    except TypeError:
        name = str(dtype).replace("torch.", "")  # torch.float32 -> float32
    return name, int(device[1])


def _host_array(value: Any) -> np.ndarray:
    """A NumPy array over a host DLPack object (no copy), or np.asarray."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return np.asarray(value)


class CudaKernel:
    """A CUDA C++ kernel as a sluice graph node: build the one-node graph
    (:meth:`graph_text`), or call it on arrays (a session per input dtypes,
    made on first use and kept).

    Args:
      source: CUDA C++ source holding the kernel.
      name: the kernel: an ``extern "C"`` name, or a name expression such
        as ``"scale<float>"``, which NVRTC instantiates.
      outputs: one ``(dtype, shape)`` per output. ``shape`` is an int,
        the index of the input whose shape the output takes at run time,
        or a tuple of ints (a fixed shape). ``dtype`` None: the dtype of
        that input. Default: one output like input 0.
      block: threads per block, an int or up to 3 dims (default 256).
      grid: blocks, an int or up to 3 dims; None: ceil(n / threads per
        block), n the elements of output ``grid_from_output``.
      grid_from_output: the output whose element count is ``n``.
      shared_memory_bytes: dynamic shared memory per block (up to 48 KiB).
      options: NVRTC options ("-use_fast_math"); sluice picks the
        architecture.
      node_name: the node's name in the graph (errors name it).
      cpu_fallback: what the CPU runs instead: a :class:`sluice.GraphBuilder`
        or a text GraphDef (as ``.pbtxt`` files hold) whose signature takes
        the kernel's inputs and gives its outputs, in order (``add_to``
        takes only a GraphBuilder). None: the node needs a GPU.
      config: the :class:`sluice.Config` of the sessions ``__call__`` makes.
    """

    def __init__(self, source: str, name: str, *,
                 outputs: Optional[Sequence[OutputSpec]] = None,
                 block: Union[int, Sequence[int]] = 256,
                 grid: Union[int, Sequence[int], None] = None,
                 grid_from_output: int = 0,
                 shared_memory_bytes: int = 0,
                 options: Sequence[str] = (),
                 node_name: str = "cuda_kernel",
                 cpu_fallback: Any = None,
                 config: Optional[Config] = None) -> None:
        if not isinstance(source, str) or not source:
            raise InvalidArgumentError("cuda_kernel: source must be a non-empty string")
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError("cuda_kernel: name must be a non-empty string")
        self.source = source
        self.name = name
        self.outputs: List[OutputSpec] = list(outputs) if outputs is not None else [(None, 0)]
        if not self.outputs:
            raise InvalidArgumentError("cuda_kernel: at least one output")
        self.block = _dims(block, "block")
        self.grid = None if grid is None else _dims(grid, "grid")
        self.grid_from_output = int(grid_from_output)
        self.shared_memory_bytes = int(shared_memory_bytes)
        self.options = [str(o) for o in options]
        self.node_name = str(node_name)
        if cpu_fallback is not None and not (
                isinstance(cpu_fallback, (str, GraphBuilder))):
            raise InvalidArgumentError(
                "cuda_kernel: cpu_fallback must be a sluice.GraphBuilder or a "
                f"text GraphDef (str), got {type(cpu_fallback).__name__}")
        self.cpu_fallback = cpu_fallback
        self.config = config
        self._sessions: Dict[Tuple[str, ...], Any] = {}

    def _output_attrs(self, input_dtypes: Sequence[str]) -> Tuple[List[str], List[int], List[Optional[List[int]]]]:
        dtypes, like, shapes = [], [], []
        for i, spec in enumerate(self.outputs):
            try:
                dtype, shape = spec
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"cuda_kernel: output {i} must be (dtype, shape), got {spec!r}") from None
            if isinstance(shape, (int, np.integer)):
                index = int(shape)
                if not 0 <= index < len(input_dtypes):
                    raise InvalidArgumentError(
                        f"cuda_kernel: output {i} takes the shape of input {index}, "
                        f"but the kernel has {len(input_dtypes)} inputs")
                like.append(index)
                shapes.append(None)
                dtypes.append(_dtype_name(dtype) if dtype is not None else input_dtypes[index])
            else:
                if dtype is None:
                    raise InvalidArgumentError(
                        f"cuda_kernel: output {i} has a fixed shape, so it needs a dtype")
                like.append(-1)
                shapes.append([int(d) for d in shape])
                dtypes.append(_dtype_name(dtype))
        return dtypes, like, shapes

    def graph_text(self, input_dtypes: Sequence[Any],
                   input_shapes: Optional[Sequence[Optional[Sequence[int]]]] = None) -> str:
        """The model (a text GraphDef, as ``.pbtxt`` files hold): Input
        nodes ``x0``, ``x1``, ... of ``input_dtypes`` (names, NumPy dtypes
        or arrays; with ``input_shapes``, of those shapes, -1 for an
        unknown dim, else of unknown shape), the CudaKernel node, and
        outputs ``y0``, ``y1``, ...  ``sluice.Session(text.encode(),
        format="pbtxt")`` runs it; it also validates on machines without
        a GPU."""
        in_dtypes = [_dtype_name(d) for d in input_dtypes]
        out_dtypes, like, shapes = self._output_attrs(in_dtypes)
        lines = []
        for i, dtype in enumerate(in_dtypes):
            shape = ""
            if input_shapes is not None and input_shapes[i] is not None:
                dims = " ".join(f"dim: {int(d)}" for d in input_shapes[i])
                shape = f' attr {{ key: "shape" value {{ shape {{ {dims} }} }} }}'
            lines.append(f'node {{ name: "x{i}" op: "Input" '
                         f'attr {{ key: "dtype" value {{ type: {_enum(dtype)} }} }}{shape} }}')
        attrs = [
            ("Tin", "list { " + " ".join(f"type: {_enum(d)}" for d in in_dtypes) + " }"),
            ("output_dtypes", "list { " + " ".join(f"type: {_enum(d)}" for d in out_dtypes) + " }"),
            ("output_shape_like", "list { " + " ".join(f"i: {i}" for i in like) + " }"),
            ("source", f"s: {_quote(self.source)}"),
            ("kernel_name", f"s: {_quote(self.name)}"),
            ("block", "list { " + " ".join(f"i: {d}" for d in self.block) + " }"),
            ("grid_from_output", f"i: {self.grid_from_output}"),
            ("shared_memory_bytes", f"i: {self.shared_memory_bytes}"),
        ]
        if any(s is not None for s in shapes):
            entries = []
            for s in shapes:
                dims = " ".join(f"dim: {d}" for d in (s or []))
                entries.append(f"shape {{ {dims} }}")
            attrs.append(("output_shapes", "list { " + " ".join(entries) + " }"))
        if self.grid is not None:
            attrs.append(("grid", "list { " + " ".join(f"i: {d}" for d in self.grid) + " }"))
        if self.options:
            attrs.append(("options", "list { " + " ".join(f"s: {_quote(o)}" for o in self.options) + " }"))
        if self.cpu_fallback is not None:
            fallback = (self.cpu_fallback if isinstance(self.cpu_fallback, str)
                        else self.cpu_fallback.to_text())
            attrs.append(("cpu_fallback", f"graph {{\n{fallback}\n}}"))
        inputs = "".join(f' input: "x{i}"' for i in range(len(in_dtypes)))
        body = "".join(f"\n  attr {{ key: \"{k}\" value {{ {v} }} }}" for k, v in attrs)
        lines.append(f'node {{ name: {_quote(self.node_name)} op: "CudaKernel"{inputs}{body}\n}}')
        sig_in = " ".join(f'inputs {{ name: "x{i}" }}' for i in range(len(in_dtypes)))
        sig_out = " ".join(
            f'outputs {{ name: "y{k}" tensor: {_quote(f"{self.node_name}:{k}")} }}'
            for k in range(len(out_dtypes)))
        lines.append(f"signature {{ {sig_in} {sig_out} }}")
        return "\n".join(lines) + "\n"

    def add_to(self, builder: GraphBuilder, *inputs: GraphTensor,
               name: Optional[str] = None) -> Any:
        """Adds the kernel as a CudaKernel node of ``builder`` reading
        ``inputs`` (GraphTensors of that builder) and returns its output, or
        a tuple of them. ``name``: the node's name (default ``node_name``).
        Raises InvalidArgumentError as :meth:`GraphBuilder.add_node` does
        (the message names the node)."""
        for i, t in enumerate(inputs):
            if not isinstance(t, GraphTensor):
                raise InvalidArgumentError(
                    f"cuda_kernel.add_to: input {i} must be a GraphTensor of the "
                    f"builder, got {type(t).__name__}")
        if isinstance(self.cpu_fallback, str):
            raise InvalidArgumentError(
                "cuda_kernel.add_to: give cpu_fallback as a sluice.GraphBuilder "
                "(a text GraphDef goes only into graph_text)")
        in_dtypes = [t.dtype for t in inputs]
        out_dtypes, like, shapes = self._output_attrs(in_dtypes)
        attrs: Dict[str, Any] = {
            "Tin": in_dtypes, "output_dtypes": out_dtypes,
            "output_shape_like": like, "source": self.source,
            "kernel_name": self.name, "block": self.block,
            "grid_from_output": self.grid_from_output,
            "shared_memory_bytes": self.shared_memory_bytes,
            "options": self.options or None, "grid": self.grid,
            "cpu_fallback": self.cpu_fallback,
        }
        if any(s is not None for s in shapes):
            attrs["output_shapes"] = [s or [] for s in shapes]
        return builder.add_node("CudaKernel", list(inputs), attrs,
                                name or self.node_name)

    def session(self, input_dtypes: Sequence[Any]) -> Any:
        """The :class:`sluice.Session` of the one-node graph for these input
        dtypes, made once and kept. Raises InvalidArgumentError naming the
        node where no GPU can run it."""
        key = tuple(_dtype_name(d) for d in input_dtypes)
        sess = self._sessions.get(key)
        if sess is None:
            sess = Session(self.graph_text(key).encode(), self.config, format="pbtxt")
            self._sessions[key] = sess
        return sess

    def __call__(self, *args: Any) -> Any:
        """Runs the kernel on ``args``: NumPy arrays, ``__dlpack__`` objects
        in host or CUDA memory (torch, CuPy), or anything ``np.asarray``
        takes. Returns one array, or a tuple for several outputs: NumPy
        arrays when every argument is in host memory; otherwise the results
        stay on the GPU of the first CUDA argument, as
        :class:`sluice.DeviceArray` objects (``torch.from_dlpack(r)``,
        ``cupy.from_dlpack(r)``), and CUDA arguments are read in place."""
        feeds, dtypes, gpu = {}, [], None
        for i, a in enumerate(args):
            on_gpu = _cuda_argument(a)
            if on_gpu is None:
                a = _host_array(a)
                dtypes.append(a.dtype)
            else:
                dtypes.append(on_gpu[0])
                gpu = on_gpu[1] if gpu is None else gpu
            feeds[f"x{i}"] = a
        sess = self.session(dtypes)
        out = sess.run(None, feeds,
                       output_device=None if gpu is None else f"gpu:{gpu}")
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<sluice.CudaKernel {self.name!r} ({len(self.outputs)} output(s))>"


def cuda_kernel(source: str, name: str, **kwargs: Any) -> CudaKernel:
    """A :class:`CudaKernel`: ``sluice.cuda_kernel(source, "saxpy")(x, y)``
    runs it on arrays, ``.graph_text(dtypes)`` gives its one-node graph.
    Keyword arguments are :class:`CudaKernel`'s (outputs, block, grid,
    grid_from_output, shared_memory_bytes, options, node_name,
    cpu_fallback, config)."""
    return CudaKernel(source, name, **kwargs)


__all__ = ["CudaKernel", "cuda_kernel"]
