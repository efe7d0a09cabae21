#!/usr/bin/env python3
"""An independent NumPy evaluator for sluice model files: the reference that
the end-to-end tests compare sluice against.

    python examples/reference.py examples/mlp.pbtxt \
        --input x=examples/mlp_input.npy --name mlp --output-dir examples

It parses the same .pb / .pbtxt file sluice loads (with the Python protobuf
module), resolves ExternalData against the model file's folder, and evaluates
the graph node by node with its own NumPy implementation of each op, written
from the semantics in docs/ops.md (never from sluice's C++). Floating-point
work is done in float64 by default; outputs are written in the dtype the graph
declares. One file per output: <name>_expected.npy when the graph has one
output, <name>_<output>_expected.npy when it has several.

--compute-dtype float32 evaluates in float32 instead: the gap between the two
runs shows how far an honest float32 implementation may drift from the
float64 reference, which is what the tests' tolerances must cover.
"""

import argparse
import math
import os
import sys

import numpy as np

from sluice_pb import graph_pb2, types_pb2
from google.protobuf import text_format

DT = types_pb2.DataType
NP_DTYPES = {
    DT.DT_FLOAT: np.float32,
    DT.DT_FLOAT16: np.float16,
    DT.DT_DOUBLE: np.float64,
    DT.DT_INT8: np.int8,
    DT.DT_INT32: np.int32,
    DT.DT_INT64: np.int64,
    DT.DT_UINT8: np.uint8,
    DT.DT_BOOL: np.bool_,
}
FLOAT_TYPES = (DT.DT_FLOAT, DT.DT_FLOAT16, DT.DT_BFLOAT16, DT.DT_DOUBLE)


class ReferenceError(Exception):
    pass


# --- Reading the model --------------------------------------------------------

def load_graph_def(path):
    graph = graph_pb2.GraphDef()
    if path.endswith(".pbtxt"):
        with open(path, "r", encoding="utf-8") as f:
            text_format.Parse(f.read(), graph)
    else:
        with open(path, "rb") as f:
            graph.ParseFromString(f.read())
    return graph


def _bfloat16_to_float32(raw):
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32)


def tensor_from_proto(t, base_dir):
    """A TensorProto's value as a NumPy array of its own dtype (bfloat16 is
    widened to float32, which holds every bfloat16 exactly)."""
    shape = tuple(t.shape.dim)
    if t.shape.unknown_rank or any(d < 0 for d in shape):
        raise ReferenceError("tensor shape must be fully defined: %s" % (shape,))
    n = int(np.prod(shape, dtype=np.int64))
    if t.dtype not in NP_DTYPES and t.dtype != DT.DT_BFLOAT16:
        raise ReferenceError("unsupported dtype %d" % t.dtype)
    if t.HasField("external") or t.content:
        if t.HasField("external"):
            ext = t.external
            with open(os.path.join(base_dir, ext.path), "rb") as f:
                f.seek(ext.offset)
                raw = f.read(ext.length)
            if len(raw) != ext.length:
                raise ReferenceError("external data %s is short" % ext.path)
        else:
            raw = t.content
        if t.dtype == DT.DT_BFLOAT16:
            values = _bfloat16_to_float32(raw)
        else:
            values = np.frombuffer(raw, dtype=np.dtype(NP_DTYPES[t.dtype]).newbyteorder("<"))
        if values.size != n:
            raise ReferenceError("tensor has %d values, shape %s needs %d"
                                 % (values.size, shape, n))
        return values.astype(values.dtype.newbyteorder("="), copy=True).reshape(shape)
    np_type = np.float32 if t.dtype == DT.DT_BFLOAT16 else NP_DTYPES[t.dtype]
    for vals in (t.float_val, t.double_val, t.int_val):
        if len(vals):
            values = np.array(list(vals)).astype(np_type)
            if values.size == 1:
                return np.full(shape, values[0], dtype=np_type)  # a splat
            if values.size != n:
                raise ReferenceError("tensor has %d values, shape %s needs %d"
                                     % (values.size, shape, n))
            return values.reshape(shape)
    if n != 0:
        raise ReferenceError("tensor with %d elements has no data" % n)
    return np.zeros(shape, dtype=np_type)


# --- Attributes -----------------------------------------------------------------

def attr(node, name, default=None):
    if name not in node.attr:
        if default is None:
            raise ReferenceError("node %s: missing attribute %s" % (node.name, name))
        return default
    a = node.attr[name]
    kind = a.WhichOneof("value")
    if kind == "list":
        lst = a.list
        for field in ("i", "f", "s", "b", "type"):
            if len(getattr(lst, field)):
                return list(getattr(lst, field))
        return []
    return getattr(a, kind)


# --- The ops (semantics: docs/ops.md) -----------------------------------------

def _axis(axis, rank):
    if not -rank <= axis < max(rank, 1):
        raise ReferenceError("axis %d out of range for rank %d" % (axis, rank))
    return axis % rank if rank else 0


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _gelu(node, x):
    approximate = attr(node, "approximate", "none")
    if approximate == "none":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
    raise ReferenceError("Gelu: unknown approximate %r" % approximate)


def _div(x, y):
    if np.issubdtype(x.dtype, np.integer):
        if np.any(y == 0):
            raise ReferenceError("integer division by zero")
        q = np.abs(x) // np.abs(y)
        return (np.sign(x) * np.sign(y) * q).astype(x.dtype)
    return x / y


UNARY = {
    "Identity": lambda n, x: x,
    "Neg": lambda n, x: -x,
    "Abs": lambda n, x: np.abs(x),
    "Relu": lambda n, x: np.maximum(x, 0).astype(x.dtype),
    "Exp": lambda n, x: np.exp(x),
    "Log": lambda n, x: np.log(x),
    "Sqrt": lambda n, x: np.sqrt(x),
    "Rsqrt": lambda n, x: 1.0 / np.sqrt(x),
    "Tanh": lambda n, x: np.tanh(x),
    "Sigmoid": lambda n, x: 1.0 / (1.0 + np.exp(-x)),
    "Erf": lambda n, x: _erf(x),
    "Gelu": _gelu,
}

BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _div,
    "Pow": np.power, "Maximum": np.maximum, "Minimum": np.minimum,
    "Equal": np.equal, "Less": np.less, "Greater": np.greater,
}


def _matmul(node, a, b):
    if a.ndim < 2 or b.ndim < 2:
        raise ReferenceError("MatMul needs rank >= 2")
    if attr(node, "transpose_a", False):
        a = np.swapaxes(a, -1, -2)
    if attr(node, "transpose_b", False):
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _softmax(node, x):
    axis = _axis(attr(node, "axis", -1), x.ndim)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _layer_norm(node, x, scale, bias):
    axis = _axis(attr(node, "axis", -1), x.ndim)
    eps = attr(node, "epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    if scale.shape != x.shape[axis:] or bias.shape != x.shape[axis:]:
        raise ReferenceError("LayerNorm: scale/bias must have shape %s" % (x.shape[axis:],))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def _reduce(fn):
    def op(node, x):
        axes = attr(node, "axes", [])
        axes = tuple(_axis(a, x.ndim) for a in axes) if axes else None
        return fn(x, axis=axes, keepdims=attr(node, "keepdims", False))
    return op


def _reshape(node, x):
    return x.reshape(attr(node, "shape"))


def _transpose(node, x):
    perm = attr(node, "perm", [])
    return np.transpose(x, perm if perm else None)


def _cast(node, x):
    dst = attr(node, "DstT")
    if dst == DT.DT_BOOL:
        return x != 0
    return x.astype(NP_DTYPES.get(dst, np.float32))


def _split(node, x):
    axis = _axis(attr(node, "axis", 0), x.ndim)
    num = attr(node, "num_split")
    sizes = attr(node, "sizes", [])
    if not sizes:
        if x.shape[axis] % num:
            raise ReferenceError("Split: %d not divisible by %d" % (x.shape[axis], num))
        sizes = [x.shape[axis] // num] * num
    if len(sizes) != num or sum(sizes) != x.shape[axis]:
        raise ReferenceError("Split: bad sizes %s" % (sizes,))
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def _slice(node, x):
    begin, end = attr(node, "begin"), attr(node, "end")
    axes = attr(node, "axes", []) or list(range(len(begin)))
    steps = attr(node, "steps", []) or [1] * len(begin)
    index = [slice(None)] * x.ndim
    for b, e, a, s in zip(begin, end, axes, steps):
        if s == 0:
            raise ReferenceError("Slice: step 0")
        index[_axis(a, x.ndim)] = slice(b, e, s)
    return x[tuple(index)]


def _gather(node, params, indices):
    axis = _axis(attr(node, "axis", 0), params.ndim)
    n = params.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise ReferenceError("Gather: index out of range [-%d, %d)" % (n, n))
    return np.take(params, indices, axis=axis)


def _expand(node, x):
    shape = attr(node, "shape")
    return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape))).copy()


def _squeeze(node, x):
    axes = attr(node, "axes", [])
    if not axes:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(_axis(a, x.ndim) for a in axes))


def _unsqueeze(node, x):
    axes = attr(node, "axes")
    out_rank = x.ndim + len(axes)
    return np.expand_dims(x, tuple(sorted(_axis(a, out_rank) for a in axes)))


def _out_size(size, k, stride, pad_begin, pad_end, dilation):
    return (size + pad_begin + pad_end - dilation * (k - 1) - 1) // stride + 1


def _conv2d(node, x, w):
    strides = attr(node, "strides", [1, 1])
    pads = attr(node, "pads", [0, 0, 0, 0])  # top, left, bottom, right
    dil = attr(node, "dilations", [1, 1])
    group = attr(node, "group", 1)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c != cg * group or o % group:
        raise ReferenceError("Conv2D: channels %d, filter %s, group %d" % (c, w.shape, group))
    oh = _out_size(h, kh, strides[0], pads[0], pads[2], dil[0])
    ow = _out_size(wd, kw, strides[1], pads[1], pads[3], dil[1])
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    og = o // group
    for g in range(group):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dil[0], j * dil[1]
                patch = xg[:, :, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                           c0:c0 + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    return out


def _pool(kind):
    def op(node, x):
        k = attr(node, "kernel_shape")
        strides = attr(node, "strides", [1, 1])
        pads = attr(node, "pads", [0, 0, 0, 0])
        n, c, h, w = x.shape
        oh = _out_size(h, k[0], strides[0], pads[0], pads[2], 1)
        ow = _out_size(w, k[1], strides[1], pads[1], pads[3], 1)
        widths = ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3]))
        fill = -np.inf if kind == "max" else 0
        xp = np.pad(x, widths, constant_values=fill)
        real = np.pad(np.ones((h, w)), widths[2:])  # 1 where not padding
        out = np.full((n, c, oh, ow), fill, dtype=x.dtype)
        count = np.zeros((oh, ow))
        for i in range(k[0]):
            for j in range(k[1]):
                rows = slice(i, i + strides[0] * (oh - 1) + 1, strides[0])
                cols = slice(j, j + strides[1] * (ow - 1) + 1, strides[1])
                if kind == "max":
                    out = np.maximum(out, xp[:, :, rows, cols])
                else:
                    out = out + xp[:, :, rows, cols]
                    count += real[rows, cols]
        if kind == "avg":
            if attr(node, "count_include_pad", False):
                count = np.full((oh, ow), k[0] * k[1])
            out = out / count
        return out
    return op


def _global_avg_pool(node, x):
    return np.mean(x, axis=(2, 3), keepdims=True)


OPS = {
    "MatMul": _matmul, "Softmax": _softmax, "LayerNorm": _layer_norm,
    "ReduceSum": _reduce(np.sum), "ReduceMean": _reduce(np.mean),
    "ReduceMax": _reduce(np.max),
    "Reshape": _reshape, "Transpose": _transpose, "Cast": _cast,
    "Concat": lambda n, *xs: np.concatenate(xs, axis=_axis(attr(n, "axis"), xs[0].ndim)),
    "Split": _split, "Slice": _slice, "Gather": _gather, "Expand": _expand,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze,
    "Where": lambda n, c, x, y: np.where(c, x, y),
    "Conv2D": _conv2d, "MaxPool": _pool("max"), "AvgPool": _pool("avg"),
    "GlobalAvgPool": _global_avg_pool,
}
OPS.update({name: fn for name, fn in UNARY.items()})
OPS.update({name: (lambda fn: lambda n, x, y: fn(x, y))(fn) for name, fn in BINARY.items()})


# --- Evaluation -----------------------------------------------------------------

def _parse_input(s):
    if s.startswith("^"):
        return None
    name, _, port = s.partition(":")
    return name, int(port) if port else 0


class Reference:
    """Evaluates one GraphDef. compute_dtype is the NumPy type floating-point
    values are computed in (float64 by default)."""

    def __init__(self, model_path, compute_dtype=np.float64):
        self.model_path = model_path
        self.base_dir = os.path.dirname(os.path.abspath(model_path))
        self.graph = load_graph_def(model_path)
        self.compute_dtype = compute_dtype
        self.nodes = {n.name: n for n in self.graph.node}
        if len(self.nodes) != len(self.graph.node):
            raise ReferenceError("duplicate node names")

    def _to_compute(self, a):
        return a.astype(self.compute_dtype) if np.issubdtype(a.dtype, np.floating) else a

    def run(self, feeds):
        """feeds: input name -> array. Returns {output name: array} in the
        graph's declared output dtypes."""
        values = {}  # node name -> list of outputs

        def evaluate(name):
            # Depth-first, iteratively: grey nodes are on the current path.
            grey = set()
            stack = [(name, False)]
            while stack:
                current, expanded = stack.pop()
                if current in values:
                    continue
                node = self.nodes.get(current)
                if node is None:
                    raise ReferenceError("no node named %r" % current)
                if expanded:
                    grey.discard(current)
                    values[current] = self._run_node(node, values, feeds)
                    continue
                if current in grey:
                    raise ReferenceError("cycle through %s" % current)
                grey.add(current)
                stack.append((current, True))
                for dep in node.input:
                    dep_name = dep.lstrip("^").partition(":")[0]
                    if dep_name not in values:
                        stack.append((dep_name, False))

        outputs = {}
        for out in self.graph.signature.outputs:
            node_name, port = _parse_input(out.tensor or out.name)
            evaluate(node_name)
            value = values[node_name][port]
            declared = self._declared_dtype(out, node_name)
            if declared is None and np.issubdtype(value.dtype, np.floating):
                declared = np.float32  # undeclared: assume the common case
            outputs[out.name] = value.astype(declared) if declared else value
        return outputs

    def _declared_dtype(self, out, node_name):
        dtype = out.dtype
        if not dtype:
            node = self.nodes[node_name]
            dtype = node.attr["T"].type if "T" in node.attr else 0
        return NP_DTYPES.get(dtype, np.float32 if dtype == DT.DT_BFLOAT16 else None)

    def _run_node(self, node, values, feeds):
        if node.op == "Input":
            if node.name not in feeds:
                raise ReferenceError("input %r is not fed" % node.name)
            x = np.asarray(feeds[node.name])
            shape = node.attr["shape"].shape if "shape" in node.attr else None
            if shape is not None and not shape.unknown_rank:
                ok = len(shape.dim) == x.ndim and all(
                    d in (-1, s) for d, s in zip(shape.dim, x.shape))
                if not ok:
                    raise ReferenceError("input %r: shape %s does not fit %s"
                                         % (node.name, x.shape, list(shape.dim)))
            return [self._to_compute(x)]
        if node.op == "Const":
            return [self._to_compute(tensor_from_proto(attr(node, "value"), self.base_dir))]
        fn = OPS.get(node.op)
        if fn is None:
            raise ReferenceError("node %s: op %s is not implemented" % (node.name, node.op))
        args = [values[n][p] for n, p in filter(None, map(_parse_input, node.input))]
        try:
            result = fn(node, *args)
        except ReferenceError as e:
            raise ReferenceError("node %s (%s): %s" % (node.name, node.op, e)) from None
        results = result if isinstance(result, list) else [result]
        return [self._to_compute(np.asarray(r)) for r in results]


def expected_paths(output_dir, name, output_names):
    if len(output_names) == 1:
        return {output_names[0]: os.path.join(output_dir, "%s_expected.npy" % name)}
    return {o: os.path.join(output_dir, "%s_%s_expected.npy" % (name, o)) for o in output_names}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--name", help="file name prefix (default: the model's)")
    parser.add_argument("--output-dir", help="where to write (default: the model's folder)")
    parser.add_argument("--compute-dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--compare-float32", action="store_true",
                        help="also evaluate in float32 and print the largest gap")
    args = parser.parse_args(argv)

    feeds = {}
    for item in args.input:
        name, _, path = item.partition("=")
        feeds[name] = np.load(path)
    ref = Reference(args.model, np.dtype(args.compute_dtype).type)
    outputs = ref.run(feeds)
    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    out_dir = args.output_dir or os.path.dirname(os.path.abspath(args.model))
    paths = expected_paths(out_dir, name, list(outputs))
    gaps = {}
    if args.compare_float32:
        gaps = Reference(args.model, np.float32).run(feeds)
    for out_name, value in outputs.items():
        np.save(paths[out_name], np.ascontiguousarray(value))
        line = "%s: %s %s -> %s" % (out_name, value.dtype, list(value.shape),
                                    os.path.relpath(paths[out_name]))
        if out_name in gaps:
            diff = np.abs(gaps[out_name].astype(np.float64) - value.astype(np.float64))
            rel = diff / np.maximum(np.abs(value.astype(np.float64)), 1.0)
            line += "  (float32 evaluation: max abs diff %.3g, max diff/max(1,|ref|) %.3g)" % (
                diff.max(), rel.max())
        print(line)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ReferenceError as e:
        print("reference.py: error: %s" % e, file=sys.stderr)
        sys.exit(1)
