"""Exceptions sluice raises: one class per status code, each with the
message sluice wrote and ``code`` (the canonical code's name, as in
absl::StatusCode and TensorFlow's errors: ``"INVALID_ARGUMENT"``).

    try:
        sess.run("probs", {"x": x})
    except sluice.InvalidArgumentError as e:
        print(e.code, e.message)

Every class derives from :class:`sluice.Error`; ``InvalidArgumentError`` is
also a ``ValueError``.
"""

from __future__ import annotations


class Error(Exception):
    """A failed sluice call: ``code`` names the status code, ``message`` is
    sluice's message (the feed, node, op, file or config field it is about).
    """

    code: str = "UNKNOWN"
    code_value: int = 2

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def _make(name: str, code: str, value: int, doc: str, *bases: type) -> type:
    cls = type(name, (Error, *bases), {"code": code, "code_value": value,
                                       "__doc__": doc,
                                       "__module__": __name__})
    return cls


CancelledError = _make("CancelledError", "CANCELLED", 1,
                       "The operation was cancelled.")
UnknownError = _make("UnknownError", "UNKNOWN", 2, "An unknown error.")
InvalidArgumentError = _make(
    "InvalidArgumentError", "INVALID_ARGUMENT", 3,
    "A bad argument: an invalid model or config, a feed of the wrong dtype "
    "or shape, an unknown fetch.", ValueError)
DeadlineExceededError = _make("DeadlineExceededError", "DEADLINE_EXCEEDED", 4,
                              "A deadline passed.")
NotFoundError = _make("NotFoundError", "NOT_FOUND", 5,
                      "Something named does not exist (a model file).")
AlreadyExistsError = _make("AlreadyExistsError", "ALREADY_EXISTS", 6,
                           "Something to create exists already.")
PermissionDeniedError = _make("PermissionDeniedError", "PERMISSION_DENIED", 7,
                              "A file cannot be read or written.")
ResourceExhaustedError = _make(
    "ResourceExhaustedError", "RESOURCE_EXHAUSTED", 8,
    "Out of memory under a device's limit, or past a resource limit.")
FailedPreconditionError = _make(
    "FailedPreconditionError", "FAILED_PRECONDITION", 9,
    "The system is not in a state to do it (no ONNX importer in this build).")
AbortedError = _make("AbortedError", "ABORTED", 10, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", "OUT_OF_RANGE", 11,
                        "A value past its valid range.")
UnimplementedError = _make("UnimplementedError", "UNIMPLEMENTED", 12,
                           "Not supported (yet): a feed in GPU memory.")
InternalError = _make("InternalError", "INTERNAL", 13,
                      "A bug in sluice; please report it.")
UnavailableError = _make("UnavailableError", "UNAVAILABLE", 14,
                         "A device or service is unavailable.")
DataLossError = _make("DataLossError", "DATA_LOSS", 15,
                      "Data was lost or corrupted.")
UnauthenticatedError = _make("UnauthenticatedError", "UNAUTHENTICATED", 16,
                             "Not authenticated.")

_BY_VALUE = {cls.code_value: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
    NotFoundError, AlreadyExistsError, PermissionDeniedError,
    ResourceExhaustedError, FailedPreconditionError, AbortedError,
    OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def error_for_code(code: int, message: str) -> Error:
    """The exception for a status code (an absl::StatusCode value)."""
    return _BY_VALUE.get(code, UnknownError)(message)


__all__ = ["Error", "error_for_code"] + [c.__name__ for c in _BY_VALUE.values()]
