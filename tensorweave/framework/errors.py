"""TF1 error classes (`tf.errors`): OpError and one subclass per canonical code."""
from __future__ import annotations

import errno

from tensorweave.framework.tf_export import tf_export

OK = 0
tf_export("errors.OK")(OK)
CANCELLED = 1
tf_export("errors.CANCELLED")(CANCELLED)
UNKNOWN = 2
tf_export("errors.UNKNOWN")(UNKNOWN)
INVALID_ARGUMENT = 3
tf_export("errors.INVALID_ARGUMENT")(INVALID_ARGUMENT)
DEADLINE_EXCEEDED = 4
tf_export("errors.DEADLINE_EXCEEDED")(DEADLINE_EXCEEDED)
NOT_FOUND = 5
tf_export("errors.NOT_FOUND")(NOT_FOUND)
ALREADY_EXISTS = 6
tf_export("errors.ALREADY_EXISTS")(ALREADY_EXISTS)
PERMISSION_DENIED = 7
tf_export("errors.PERMISSION_DENIED")(PERMISSION_DENIED)
RESOURCE_EXHAUSTED = 8
tf_export("errors.RESOURCE_EXHAUSTED")(RESOURCE_EXHAUSTED)
FAILED_PRECONDITION = 9
tf_export("errors.FAILED_PRECONDITION")(FAILED_PRECONDITION)
ABORTED = 10
tf_export("errors.ABORTED")(ABORTED)
OUT_OF_RANGE = 11
tf_export("errors.OUT_OF_RANGE")(OUT_OF_RANGE)
UNIMPLEMENTED = 12
tf_export("errors.UNIMPLEMENTED")(UNIMPLEMENTED)
INTERNAL = 13
tf_export("errors.INTERNAL")(INTERNAL)
UNAVAILABLE = 14
tf_export("errors.UNAVAILABLE")(UNAVAILABLE)
DATA_LOSS = 15
tf_export("errors.DATA_LOSS")(DATA_LOSS)
UNAUTHENTICATED = 16
tf_export("errors.UNAUTHENTICATED")(UNAUTHENTICATED)


@tf_export("errors.OpError", "OpError")
class OpError(Exception):
    """A failure while running an op: carries the op, its NodeDef, a message and a code."""

    def __init__(self, node_def, op, message, error_code):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self) -> int:
        return self._error_code

    def __str__(self) -> str:
        return self._message

    def __reduce__(self):
        return type(self), (self._node_def, self._op, self._message)


def _subclass(name: str, code: int):
    def __init__(self, node_def, op, message, *args, **kwargs):
        OpError.__init__(self, node_def, op, message, code)

    cls = type(name, (OpError,), {"__init__": __init__, "__doc__": f"TF's {name} (code {code})."})
    cls.__reduce__ = lambda self: (type(self), (self._node_def, self._op, self._message))
    return cls


CancelledError = _subclass("CancelledError", CANCELLED)
tf_export("errors.CancelledError")(CancelledError)
UnknownError = _subclass("UnknownError", UNKNOWN)
tf_export("errors.UnknownError")(UnknownError)
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT)
tf_export("errors.InvalidArgumentError")(InvalidArgumentError)
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED)
tf_export("errors.DeadlineExceededError")(DeadlineExceededError)
NotFoundError = _subclass("NotFoundError", NOT_FOUND)
tf_export("errors.NotFoundError")(NotFoundError)
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS)
tf_export("errors.AlreadyExistsError")(AlreadyExistsError)
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED)
tf_export("errors.PermissionDeniedError")(PermissionDeniedError)
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED)
tf_export("errors.ResourceExhaustedError")(ResourceExhaustedError)
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION)
tf_export("errors.FailedPreconditionError")(FailedPreconditionError)
AbortedError = _subclass("AbortedError", ABORTED)
tf_export("errors.AbortedError")(AbortedError)
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE)
tf_export("errors.OutOfRangeError")(OutOfRangeError)
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED)
tf_export("errors.UnimplementedError")(UnimplementedError)
InternalError = _subclass("InternalError", INTERNAL)
tf_export("errors.InternalError")(InternalError)
UnavailableError = _subclass("UnavailableError", UNAVAILABLE)
tf_export("errors.UnavailableError")(UnavailableError)
DataLossError = _subclass("DataLossError", DATA_LOSS)
tf_export("errors.DataLossError")(DataLossError)
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED)
tf_export("errors.UnauthenticatedError")(UnauthenticatedError)

_CODE_TO_CLASS = {
    CANCELLED: CancelledError, UNKNOWN: UnknownError, INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError, PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError, FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError, OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError, UNAVAILABLE: UnavailableError, DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


@tf_export("errors.exception_type_from_error_code")
def exception_type_from_error_code(error_code: int):
    return _CODE_TO_CLASS.get(error_code, UnknownError)


@tf_export("errors.error_code_from_exception_type")
def error_code_from_exception_type(cls) -> int:
    for code, c in _CODE_TO_CLASS.items():
        if c is cls:
            return code
    return UNKNOWN


@tf_export("errors.make_error")
def make_error(code: int, message: str, op_name=None, node_def=None) -> OpError:
    return exception_type_from_error_code(code)(node_def, op_name, message)


@tf_export("errors.raise_exception_on_not_ok_status")
class raise_exception_on_not_ok_status:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# A full disk or an exceeded quota is TF's ResourceExhaustedError, whatever was being written.
_OS_ERROR_CLASSES = {errno.ENOENT: NotFoundError, errno.EEXIST: AlreadyExistsError, errno.EACCES: PermissionDeniedError,
                     errno.EPERM: PermissionDeniedError, errno.EISDIR: FailedPreconditionError,
                     errno.ENOTDIR: FailedPreconditionError, errno.ENOSPC: ResourceExhaustedError,
                     errno.EDQUOT: ResourceExhaustedError}


def os_error(e: OSError, path: str, node=None, op=None) -> OpError:
    """An OSError as TF's error class (by its errno), naming the file `path`."""
    return _OS_ERROR_CLASSES.get(e.errno, UnknownError)(node, op, f"{path}; {e.strerror or e}")
