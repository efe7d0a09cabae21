"""``with sluice.device("/gpu:1"):`` as TensorFlow's ``tf.device``: the
nodes a :class:`sluice.GraphBuilder` adds inside the block request that
device (the placer's requested device; soft placement relaxes a request
that cannot be met and says why).

    b = sluice.GraphBuilder()
    x = b.input("x", "float32", [None, 16])
    with sluice.device("/GPU:1"):          # TensorFlow's spellings work too
        y = b.relu(x)                      # requests /gpu:1

Blocks nest; the innermost wins, whether it is this one or a builder's own
``b.device(...)``. Sessions place by their config, not by this block: it
reaches only nodes added inside it. Thread-safe (a context variable per
thread and task).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from typing import Iterator, Optional, Tuple

from sluice.errors import InvalidArgumentError

# (entry order, device) of the enclosing blocks, innermost last.
_stack: contextvars.ContextVar[Tuple[Tuple[int, str], ...]] = \
    contextvars.ContextVar("sluice_device", default=())
_order = itertools.count()


def canonical(name: Optional[str]) -> str:
    """sluice's short name for a device: "/gpu:1" for "gpu:1", "/GPU:1",
    "/device:GPU:1" or "/job:localhost/replica:0/task:0/device:GPU:1";
    "/gpu:*" for "/gpu"; "" for None or "" (no request)."""
    if not name:
        return ""
    text = str(getattr(name, "name", name)).strip()
    lower = text.lower()
    if "device:" in lower:
        lower = lower[lower.rindex("device:") + len("device:"):]
    lower = lower.lstrip("/")
    kind, _, index = lower.partition(":")
    if kind not in ("cpu", "gpu") or not (index.isdigit() or index in ("", "*")):
        raise InvalidArgumentError(
            f"device '{text}': expected a device such as '/gpu:1', '/cpu:0', "
            "'/gpu:*' or TensorFlow's '/device:GPU:1'")
    return f"/{kind}:{index or '*'}"


def next_order() -> int:
    return next(_order)


def current() -> Optional[Tuple[int, str]]:
    """(order, device) of the innermost ``sluice.device`` block, or None."""
    stack = _stack.get()
    return stack[-1] if stack else None


@contextlib.contextmanager
def device(name: Optional[str]) -> Iterator[str]:
    """Requests ``name`` for the GraphBuilder nodes added inside the block
    (None lifts an enclosing request); yields sluice's name for it."""
    short = canonical(name)
    token = _stack.set(_stack.get() + ((next_order(), short),))
    try:
        yield short
    finally:
        _stack.reset(token)


__all__ = ["device"]
