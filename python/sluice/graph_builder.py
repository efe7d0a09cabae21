"""Building graphs in Python: :class:`GraphBuilder` writes a model node by
node and saves it as a .pb or .pbtxt GraphDef, or hands it straight to
:class:`sluice.Session`.

    import numpy as np, sluice
    b = sluice.GraphBuilder()
    x = b.input("x", "float32", ["batch", 16])
    with b.name_scope("fc1"):
        h = b.relu(x @ w1 + b1)          # w1, b1: NumPy arrays, made Consts
    b.output("probs", b.softmax(b.matmul(h, w2) + b2))
    b.save("mlp.pb")                     # or "mlp.pbtxt"
    probs = sluice.Session(b).run("probs", {"x": np.ones((4, 16), np.float32)})

Every node is checked when it is added, by sluice's own graph builder (the
checks a model file gets when it is loaded: the op, its attributes, the
number and dtypes of its inputs, shape inference): a rejected node raises
:class:`sluice.InvalidArgumentError` with sluice's message, which names the
node ("node 'fc1/MatMul' (MatMul): input 1 'b' ('fc1/w') is int32 but
T=float32"), and the builder stays as it was. ``to_bytes``, ``save`` and
``Session(builder)`` check the whole graph again, with its signature.

The op set is docs/ops.md's. The methods named after ops (``matmul``,
``conv2d``, ...) are shorthands for :meth:`GraphBuilder.add_node`: an
attribute left as None is not written, so the op's own default applies.
Attribute values are converted by the op's schema in C++ (a dtype name
where the op wants a type, an int where it wants a float), so this module
knows op names, not ops.

Not thread-safe: build a graph on one thread (sessions made from it may run
on any).
"""

from __future__ import annotations

import contextlib
import os
from typing import (Any, Dict, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Union)

import numpy as np

from sluice import _sluice
from sluice import device_scope as _device_scope
from sluice.errors import InvalidArgumentError
from sluice.session import _normalize_feed, _numpy_dtype

Dim = Union[int, str, None]
DType = Union[str, np.dtype, type]


def _dtype_name(dtype: Any) -> str:
    """A sluice dtype name for "float32", np.float32, np.dtype("int8") or an
    ml_dtypes type; strings pass as they are (sluice checks them)."""
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


class GraphTensor:
    """One output of a node in a :class:`GraphBuilder`: what the builder's
    methods take as inputs and return.

    ``name`` is the reference a fetch or an input uses ("fc1/MatMul" for
    output 0, "split:1" otherwise); ``dtype`` (a sluice dtype name) and
    ``shape`` (a tuple, None for an unknown dimension; None for an unknown
    rank) are what sluice's shape inference found. Arithmetic operators
    (``+ - * / ** @``, unary ``-``, ``<`` and ``>``) add the matching node;
    a Python number or NumPy array on the other side becomes a Const of
    this tensor's dtype.
    """

    __slots__ = ("builder", "node", "port", "op", "dtype", "shape")

    def __init__(self, builder: "GraphBuilder", node: str, port: int, op: str,
                 dtype: str, shape: Optional[Tuple[Optional[int], ...]]) -> None:
        self.builder = builder
        self.node = node
        self.port = port
        self.op = op
        self.dtype = dtype
        self.shape = shape

    @property
    def name(self) -> str:
        """"node" for output 0, "node:port" otherwise."""
        return self.node if self.port == 0 else f"{self.node}:{self.port}"

    @property
    def ndim(self) -> Optional[int]:
        """The rank, or None when unknown."""
        return None if self.shape is None else len(self.shape)

    def __repr__(self) -> str:
        shape = "<unknown rank>" if self.shape is None else self.shape
        return f"<sluice.GraphTensor '{self.name}' ({self.op}) {self.dtype} {shape}>"

    def __add__(self, other: Any) -> "GraphTensor":
        return self.builder.add(self, other)

    def __radd__(self, other: Any) -> "GraphTensor":
        return self.builder.add(other, self)

    def __sub__(self, other: Any) -> "GraphTensor":
        return self.builder.sub(self, other)

    def __rsub__(self, other: Any) -> "GraphTensor":
        return self.builder.sub(other, self)

    def __mul__(self, other: Any) -> "GraphTensor":
        return self.builder.mul(self, other)

    def __rmul__(self, other: Any) -> "GraphTensor":
        return self.builder.mul(other, self)

    def __truediv__(self, other: Any) -> "GraphTensor":
        return self.builder.div(self, other)

    def __rtruediv__(self, other: Any) -> "GraphTensor":
        return self.builder.div(other, self)

    def __pow__(self, other: Any) -> "GraphTensor":
        return self.builder.pow(self, other)

    def __matmul__(self, other: Any) -> "GraphTensor":
        return self.builder.matmul(self, other)

    def __rmatmul__(self, other: Any) -> "GraphTensor":
        return self.builder.matmul(other, self)

    def __neg__(self) -> "GraphTensor":
        return self.builder.neg(self)

    def __lt__(self, other: Any) -> "GraphTensor":
        return self.builder.less(self, other)

    def __gt__(self, other: Any) -> "GraphTensor":
        return self.builder.greater(self, other)


Input = Union[GraphTensor, str, np.ndarray, int, float, bool, Sequence[Any]]
Attr = Any


class GraphBuilder:
    """A graph under construction; see the module docstring.

    ``input`` adds the graph's inputs, ``const`` its constants (from NumPy
    arrays), ``add_node`` any op of docs/ops.md, and the methods named after
    ops the common ones; ``output`` names the graph outputs (without any,
    every output that nothing reads is one, as in a model file).
    ``to_bytes``/``save`` write the GraphDef; ``sluice.Session(builder)``
    loads it directly.

    Node names: ``name=`` when given, else the op's name ("MatMul",
    "MatMul_1", ...), both under the enclosing :meth:`name_scope`. Input
    names and output names are used as they are.
    """

    def __init__(self) -> None:
        self._g = _sluice._GraphDef()
        self._names: set = set()
        self._order: List[str] = []  # node names, as added
        self._scopes: List[str] = []
        self._devices: List[Tuple[int, str]] = []  # (entry order, device)
        self._outputs: List[str] = []

    # --- naming and context ---------------------------------------------------
    @contextlib.contextmanager
    def name_scope(self, scope: str) -> Iterator[str]:
        """Prefixes the names of nodes added inside the ``with`` block with
        ``scope/`` (scopes nest); yields the prefix."""
        self._scopes.append(scope.strip("/"))
        try:
            yield "/".join(self._scopes) + "/"
        finally:
            self._scopes.pop()

    @contextlib.contextmanager
    def device(self, device: Optional[str]) -> Iterator[None]:
        """Requests ``device`` ("/gpu:0", "/cpu:0", "/gpu:*") for the nodes
        added inside the ``with`` block (the placer's requested device);
        None lifts an enclosing request. A ``sluice.device`` block entered
        inside this one wins over it, and the other way round."""
        self._devices.append((_device_scope.next_order(),
                              _device_scope.canonical(device)))
        try:
            yield
        finally:
            self._devices.pop()

    def _node_name(self, name: Optional[str], op: str) -> str:
        prefix = "".join(s + "/" for s in self._scopes)
        if name is not None:
            return prefix + name
        base = prefix + op
        candidate, i = base, 0
        while candidate in self._names:
            i += 1
            candidate = f"{base}_{i}"
        return candidate

    # --- the generic node -----------------------------------------------------
    def add_node(self, op: str, inputs: Sequence[Input] = (),
                 attrs: Optional[Mapping[str, Attr]] = None,
                 name: Optional[str] = None, *,
                 device: Optional[str] = None,
                 control_inputs: Sequence[Union[GraphTensor, str]] = ()
                 ) -> Union[GraphTensor, Tuple[GraphTensor, ...]]:
        """Adds a node of ``op`` and returns its output (a tuple when the op
        has other than one output: Split, TopK, Unique).

        Args:
          op: an op of docs/ops.md ("MatMul", "Conv2D", ...).
          inputs: GraphTensors of this builder, references ("x", "split:1"),
            or values (NumPy arrays, numbers, lists), which become Consts of
            the first GraphTensor input's dtype (NumPy's dtype when none).
          attrs: attribute name -> value: int, float, bool, str, a dtype
            (name, NumPy or ml_dtypes type), a shape (a list of ints, with
            None or a name for unknown dims), a NumPy array (a tensor), a
            GraphBuilder (a subgraph: If's branches, Loop's body) or a list
            of these. None values are left out (the op's default applies).
          name: the node's name (under the name scope); default: the op's.
          device: a requested device ("/gpu:0"); default: the enclosing
            :meth:`device` block's.
          control_inputs: nodes that must run first.

        Raises:
          InvalidArgumentError: sluice rejects the node (unknown op or
            attribute, wrong input count or dtype, a duplicate name, a shape
            that does not infer); the message names the node.
        """
        if device is None:
            scopes = [s for s in (self._devices[-1] if self._devices else None,
                                  _device_scope.current()) if s is not None]
            device = max(scopes)[1] if scopes else ""
        before = self._g.num_nodes()
        try:
            like = next((i.dtype for i in inputs if isinstance(i, GraphTensor)), None)
            refs = [self._ref(i, like) for i in inputs]
            refs += ["^" + self._ref(c, None).split(":")[0] for c in control_inputs]
            node = self._node_name(name, op)  # after the Consts made for it
            converted = {str(k): _attr(k, v) for k, v in (attrs or {}).items()
                         if v is not None}
            specs = self._g.add_node(node, op, refs, converted, device or "")
        except BaseException:
            # Rejected: drop the Consts made for it too.
            self._g.truncate(before)
            self._names.difference_update(self._order[before:])
            del self._order[before:]
            raise
        self._names.add(node)
        self._order.append(node)
        outs = tuple(
            GraphTensor(self, node, port, op, dtype,
                        None if rank < 0 else
                        tuple(None if d < 0 else d for d in dims))
            for port, (dtype, dims, rank) in enumerate(specs))
        return outs[0] if len(outs) == 1 else outs

    def _ref(self, value: Any, like: Optional[str]) -> str:
        if isinstance(value, GraphTensor):
            if value.builder is not self:
                raise InvalidArgumentError(
                    f"{value!r} belongs to another GraphBuilder")
            return value.name
        if isinstance(value, str):
            return value
        return self.const(value, dtype=like).name

    # --- sources --------------------------------------------------------------
    def input(self, name: str, dtype: DType,
              shape: Optional[Sequence[Dim]] = None) -> GraphTensor:
        """A graph input (an Input node) called ``name`` (not scoped).

        Args:
          dtype: "float32", np.float32, "bfloat16", ...
          shape: a list whose entries are ints, None for an unknown
            dimension or a name for a symbolic one ("batch"), kept in the
            signature (``Session.inputs`` reports it); None: unknown rank.
        """
        attrs: Dict[str, Any] = {"dtype": _dtype_name(dtype)}
        if shape is not None:
            attrs["shape"] = [d if isinstance(d, str) else
                              (None if d is None else int(d)) for d in shape]
        scopes, self._scopes = self._scopes, []
        try:
            tensor = self._node("Input", [], attrs, name)
        finally:
            self._scopes = scopes
        if shape is not None and any(isinstance(d, str) for d in shape):
            self._g.set_dim_names(name, [d if isinstance(d, str) else ""
                                         for d in shape])
        return tensor

    def const(self, value: Any, dtype: Optional[DType] = None,
              name: Optional[str] = None) -> GraphTensor:
        """A Const node holding a copy of ``value`` (a NumPy array, an
        ml_dtypes array, a number or a nested list; ``dtype`` converts it,
        else NumPy's dtype for it applies: a Python float is float64)."""
        wanted = None if dtype is None else _numpy_dtype(_dtype_name(dtype))
        if dtype is not None and wanted is None:
            raise InvalidArgumentError(
                f"const: dtype '{_dtype_name(dtype)}' has no NumPy type here "
                "(bfloat16, float8 and int4 need ml_dtypes)")
        array = np.asarray(value, dtype=wanted)
        return self._node("Const", [], {"value": _tensor_value(array)}, name)

    # --- outputs and results --------------------------------------------------
    def output(self, name: str, tensor: Union[GraphTensor, str]) -> GraphTensor:
        """Names ``tensor`` a graph output (what ``Session.run(name)``
        fetches and ``Session.outputs`` lists, in the order given); returns
        the tensor. Checked with the whole graph (``validate``)."""
        ref = self._ref(tensor, None) if not isinstance(tensor, str) else tensor
        self._g.add_output(name, ref)
        self._outputs.append(name)
        return tensor

    @property
    def num_nodes(self) -> int:
        """How many nodes the graph has."""
        return self._g.num_nodes()

    def validate(self) -> None:
        """Checks the whole graph as loading it from a file would, signature
        included; raises InvalidArgumentError listing every error."""
        self._g.validate()

    def to_bytes(self, format: str = "pb") -> bytes:
        """The GraphDef, validated: binary ("pb") or text ("pbtxt", with
        float32, float64, integer and bool Const values written as lists)."""
        if format not in ("pb", "pbtxt"):
            raise InvalidArgumentError(f"format '{format}': expected 'pb' or 'pbtxt'")
        return self._g.serialize(format == "pbtxt")

    def to_text(self) -> str:
        """``to_bytes("pbtxt")`` as a str."""
        return self.to_bytes("pbtxt").decode()

    def save(self, path: Union[str, "os.PathLike[str]"],
             format: Optional[str] = None) -> None:
        """Writes the validated GraphDef to ``path``: text for a .pbtxt (or
        .txt) name or ``format="pbtxt"``, binary otherwise."""
        path = os.fspath(path)
        if format is None:
            format = "pbtxt" if path.endswith((".pbtxt", ".txt")) else "pb"
        data = self.to_bytes(format)
        with open(path, "wb") as f:
            f.write(data)

    def __repr__(self) -> str:
        return f"<sluice.GraphBuilder with {self.num_nodes} nodes, outputs {self._outputs}>"

    # --- ops (docs/ops.md); None leaves an attribute to its default -----------
    def cast(self, x: Input, dtype: DType, *, saturate: Optional[bool] = None,
             name: Optional[str] = None) -> GraphTensor:
        """Cast: ``x`` converted to ``dtype``."""
        return self._node("Cast", [x], {"DstT": _dtype_name(dtype),
                                           "saturate": saturate}, name)

    def gelu(self, x: Input, approximate: Optional[str] = None, *,
             name: Optional[str] = None) -> GraphTensor:
        """Gelu; ``approximate``: "none" (erf, the default) or "tanh"."""
        return self._node("Gelu", [x], {"approximate": approximate}, name)

    def where(self, condition: Input, x: Input, y: Input, *,
              name: Optional[str] = None) -> GraphTensor:
        """Where: ``x`` where ``condition`` (bool) holds, else ``y``; values
        become Consts of the other branch's dtype (the condition: bool)."""
        like = next((v.dtype for v in (x, y) if isinstance(v, GraphTensor)), None)
        x, y = (v if isinstance(v, (GraphTensor, str)) else self.const(v, like)
                for v in (x, y))
        if not isinstance(condition, (GraphTensor, str)):
            condition = self.const(condition, "bool")
        return self._node("Where", [condition, x, y], {}, name)

    def matmul(self, a: Input, b: Input, *, transpose_a: Optional[bool] = None,
               transpose_b: Optional[bool] = None,
               name: Optional[str] = None) -> GraphTensor:
        """MatMul: the last two dimensions multiply, leading ones broadcast."""
        return self._node("MatMul", [a, b], {"transpose_a": transpose_a,
                                                  "transpose_b": transpose_b}, name)

    def softmax(self, logits: Input, axis: Optional[int] = None, *,
                name: Optional[str] = None) -> GraphTensor:
        """Softmax over ``axis`` (default -1)."""
        return self._node("Softmax", [logits], {"axis": axis}, name)

    def layer_norm(self, x: Input, scale: Input, bias: Input,
                   axis: Optional[int] = None, epsilon: Optional[float] = None,
                   *, name: Optional[str] = None) -> GraphTensor:
        """LayerNorm over dimensions [axis, rank) (default axis -1)."""
        return self._node("LayerNorm", [x, scale, bias],
                               {"axis": axis, "epsilon": epsilon}, name)

    def einsum(self, equation: str, *inputs: Input,
               name: Optional[str] = None) -> GraphTensor:
        """Einsum with NumPy's equation syntax."""
        return self._node("Einsum", list(inputs), {"equation": equation}, name)

    def _reduce(self, op: str, x: Input, axes: Optional[Sequence[int]],
                keepdims: Optional[bool], name: Optional[str]) -> GraphTensor:
        return self._node(op, [x], {"axes": None if axes is None else list(axes),
                                       "keepdims": keepdims}, name)

    def reduce_sum(self, x: Input, axes: Optional[Sequence[int]] = None,
                   keepdims: Optional[bool] = None, *,
                   name: Optional[str] = None) -> GraphTensor:
        """ReduceSum over ``axes`` (default: all)."""
        return self._reduce("ReduceSum", x, axes, keepdims, name)

    def reduce_mean(self, x: Input, axes: Optional[Sequence[int]] = None,
                    keepdims: Optional[bool] = None, *,
                    name: Optional[str] = None) -> GraphTensor:
        """ReduceMean over ``axes`` (default: all)."""
        return self._reduce("ReduceMean", x, axes, keepdims, name)

    def reduce_max(self, x: Input, axes: Optional[Sequence[int]] = None,
                   keepdims: Optional[bool] = None, *,
                   name: Optional[str] = None) -> GraphTensor:
        """ReduceMax over ``axes`` (default: all)."""
        return self._reduce("ReduceMax", x, axes, keepdims, name)

    def reduce_min(self, x: Input, axes: Optional[Sequence[int]] = None,
                   keepdims: Optional[bool] = None, *,
                   name: Optional[str] = None) -> GraphTensor:
        """ReduceMin over ``axes`` (default: all)."""
        return self._reduce("ReduceMin", x, axes, keepdims, name)

    def reduce_prod(self, x: Input, axes: Optional[Sequence[int]] = None,
                    keepdims: Optional[bool] = None, *,
                    name: Optional[str] = None) -> GraphTensor:
        """ReduceProd over ``axes`` (default: all)."""
        return self._reduce("ReduceProd", x, axes, keepdims, name)

    def argmin(self, x: Input, axis: Optional[int] = None,
               keepdims: Optional[bool] = None, *,
               name: Optional[str] = None) -> GraphTensor:
        """ArgMin along ``axis`` (default 0, keepdims default true): int64."""
        return self._node("ArgMin", [x], {"axis": axis, "keepdims": keepdims}, name)

    def argmax(self, x: Input, axis: Optional[int] = None,
               keepdims: Optional[bool] = None, *,
               name: Optional[str] = None) -> GraphTensor:
        """ArgMax along ``axis`` (default 0, keepdims default true): int64."""
        return self._node("ArgMax", [x], {"axis": axis, "keepdims": keepdims}, name)

    def reshape(self, x: Input, shape: Sequence[int], *,
                name: Optional[str] = None) -> GraphTensor:
        """Reshape to ``shape`` (at most one -1; 0 is a literal zero)."""
        return self._node("Reshape", [x], {"shape": list(shape)}, name)

    def transpose(self, x: Input, perm: Optional[Sequence[int]] = None, *,
                  name: Optional[str] = None) -> GraphTensor:
        """Transpose by ``perm`` (default: reversed dimensions)."""
        return self._node("Transpose", [x], {"perm": None if perm is None else list(perm)},
                             name)

    def concat(self, values: Sequence[Input], axis: int, *,
               name: Optional[str] = None) -> GraphTensor:
        """Concat along ``axis``."""
        return self._node("Concat", list(values), {"axis": axis}, name)

    def split(self, x: Input, num_split: int, axis: Optional[int] = None,
              sizes: Optional[Sequence[int]] = None, *,
              name: Optional[str] = None) -> Tuple[GraphTensor, ...]:
        """Split into ``num_split`` parts along ``axis`` (equal parts unless
        ``sizes``); always returns a tuple."""
        out = self.add_node("Split", [x], {"num_split": num_split, "axis": axis,
                                           "sizes": None if sizes is None else list(sizes)},
                            name)
        return out if isinstance(out, tuple) else (out,)

    def slice(self, x: Input, begin: Sequence[int], end: Sequence[int],
              axes: Optional[Sequence[int]] = None,
              steps: Optional[Sequence[int]] = None, *,
              name: Optional[str] = None) -> GraphTensor:
        """Slice, NumPy/ONNX style: negative bounds count from the end."""
        return self._node("Slice", [x], {
            "begin": list(begin), "end": list(end),
            "axes": None if axes is None else list(axes),
            "steps": None if steps is None else list(steps)}, name)

    def gather(self, params: Input, indices: Input, axis: Optional[int] = None,
               *, name: Optional[str] = None) -> GraphTensor:
        """Gather ``indices`` (int32/int64) along ``axis`` (default 0)."""
        if not isinstance(indices, (GraphTensor, str)):
            indices = self.const(np.asarray(indices, np.int64))
        return self._node("Gather", [params, indices], {"axis": axis}, name)

    def expand(self, x: Input, shape: Sequence[int], *,
               name: Optional[str] = None) -> GraphTensor:
        """Expand: broadcast against ``shape`` (ONNX Expand)."""
        return self._node("Expand", [x], {"shape": list(shape)}, name)

    def squeeze(self, x: Input, axes: Optional[Sequence[int]] = None, *,
                name: Optional[str] = None) -> GraphTensor:
        """Squeeze ``axes`` (default: every size-1 dimension)."""
        return self._node("Squeeze", [x], {"axes": None if axes is None else list(axes)},
                             name)

    def unsqueeze(self, x: Input, axes: Sequence[int], *,
                  name: Optional[str] = None) -> GraphTensor:
        """Unsqueeze: new size-1 dimensions at ``axes`` of the output."""
        return self._node("Unsqueeze", [x], {"axes": list(axes)}, name)

    def top_k(self, x: Input, k: Union[int, Input], axis: Optional[int] = None,
              largest: Optional[bool] = None, sorted: Optional[bool] = None, *,
              name: Optional[str] = None) -> Tuple[GraphTensor, GraphTensor]:
        """TopK: (values, int64 indices) of the ``k`` largest (or smallest)
        along ``axis`` (default -1)."""
        if not isinstance(k, (GraphTensor, str)):
            k = self.const(np.asarray([k], np.int64))
        return self.add_node("TopK", [x, k], {"axis": axis, "largest": largest,
                                              "sorted": sorted}, name)

    def conv2d(self, input: Input, filter: Input,
               strides: Optional[Sequence[int]] = None,
               pads: Optional[Sequence[int]] = None,
               dilations: Optional[Sequence[int]] = None,
               group: Optional[int] = None, *,
               name: Optional[str] = None) -> GraphTensor:
        """Conv2D, NCHW; filter [O, C/group, KH, KW]; ``pads`` = [top, left,
        bottom, right]."""
        return self._node("Conv2D", [input, filter], {
            "strides": _list(strides), "pads": _list(pads),
            "dilations": _list(dilations), "group": group}, name)

    def max_pool(self, x: Input, kernel_shape: Sequence[int],
                 strides: Optional[Sequence[int]] = None,
                 pads: Optional[Sequence[int]] = None, *,
                 name: Optional[str] = None) -> GraphTensor:
        """MaxPool, NCHW."""
        return self._node("MaxPool", [x], {
            "kernel_shape": list(kernel_shape), "strides": _list(strides),
            "pads": _list(pads)}, name)

    def avg_pool(self, x: Input, kernel_shape: Sequence[int],
                 strides: Optional[Sequence[int]] = None,
                 pads: Optional[Sequence[int]] = None,
                 count_include_pad: Optional[bool] = None, *,
                 name: Optional[str] = None) -> GraphTensor:
        """AvgPool, NCHW."""
        return self._node("AvgPool", [x], {
            "kernel_shape": list(kernel_shape), "strides": _list(strides),
            "pads": _list(pads), "count_include_pad": count_include_pad}, name)

    def global_avg_pool(self, x: Input, *, name: Optional[str] = None) -> GraphTensor:
        """GlobalAvgPool: [N, C, H, W] -> [N, C, 1, 1]."""
        return self._node("GlobalAvgPool", [x], {}, name)

    def _node(self, op: str, inputs: Sequence[Input], attrs: Dict[str, Any],
              name: Optional[str]) -> GraphTensor:
        """add_node for an op of one output."""
        out = self.add_node(op, inputs, attrs, name)
        assert isinstance(out, GraphTensor), op
        return out


def _list(value: Optional[Sequence[int]]) -> Optional[List[int]]:
    return None if value is None else list(value)


def _tensor_value(array: np.ndarray) -> Any:
    raw, name = _normalize_feed(array, None)
    return _sluice._TensorValue(name or raw.dtype.name, list(raw.shape), raw.tobytes())


def _attr(key: Any, value: Any) -> Any:
    """A Python attribute value as the extension takes it."""
    if isinstance(value, GraphTensor):
        raise InvalidArgumentError(
            f"attribute '{key}': {value!r} is a graph value; pass it as an input")
    if isinstance(value, GraphBuilder):
        return value._g
    if isinstance(value, np.ndarray):
        return _tensor_value(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.dtype, type)):
        return _dtype_name(value)
    if isinstance(value, (list, tuple)):
        return [_attr(key, v) for v in value]
    return value


# Elementwise ops whose wrappers differ only in the op name.
_UNARY = {
    "identity": "Identity", "neg": "Neg", "abs": "Abs", "relu": "Relu",
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
    "tanh": "Tanh", "sigmoid": "Sigmoid", "erf": "Erf", "sin": "Sin",
    "cos": "Cos", "floor": "Floor", "ceil": "Ceil", "round": "Round",
    "sign": "Sign", "softplus": "Softplus", "hard_swish": "HardSwish",
}
_BINARY = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
    "mod": "Mod", "maximum": "Maximum", "minimum": "Minimum",
    "equal": "Equal", "less": "Less", "greater": "Greater",
}


def _make_unary(method: str, op: str) -> Any:
    def unary(self: GraphBuilder, x: Input, *, name: Optional[str] = None) -> GraphTensor:
        return self._node(op, [x], {}, name)
    unary.__name__ = unary.__qualname__ = method
    unary.__doc__ = f"{op}(x), elementwise (docs/ops.md)."
    return unary


def _make_binary(method: str, op: str) -> Any:
    def binary(self: GraphBuilder, x: Input, y: Input, *,
               name: Optional[str] = None) -> GraphTensor:
        return self._node(op, [x, y], {}, name)
    binary.__name__ = binary.__qualname__ = method
    binary.__doc__ = (f"{op}(x, y), elementwise with NumPy broadcasting "
                      "(docs/ops.md); a number or array on either side "
                      "becomes a Const of the other's dtype.")
    return binary


for _method, _op in _UNARY.items():
    setattr(GraphBuilder, _method, _make_unary(_method, _op))
for _method, _op in _BINARY.items():
    setattr(GraphBuilder, _method, _make_binary(_method, _op))
del _method, _op

__all__ = ["GraphBuilder", "GraphTensor"]
