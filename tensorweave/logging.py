"""tf.logging: TF1's logging module over Python's `logging` (logger "tensorflow")."""
from __future__ import annotations

import logging as _logging
import sys as _sys

from tensorweave.framework.tf_export import tf_export

DEBUG = _logging.DEBUG
tf_export("logging.DEBUG")(DEBUG)
INFO = _logging.INFO
tf_export("logging.INFO")(INFO)
WARN = _logging.WARN
tf_export("logging.WARN")(WARN)
ERROR = _logging.ERROR
tf_export("logging.ERROR")(ERROR)
FATAL = _logging.FATAL
tf_export("logging.FATAL")(FATAL)

_logger = _logging.getLogger("tensorflow")
if not _logger.handlers:
    _handler = _logging.StreamHandler(_sys.stderr)
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_handler)
    _logger.propagate = False
_counts: dict = {}


@tf_export("logging.get_logger", "get_logger")
def get_logger() -> _logging.Logger:
    return _logger


@tf_export("logging.set_verbosity")
def set_verbosity(v: int) -> None:
    _logger.setLevel(v)


@tf_export("logging.get_verbosity")
def get_verbosity() -> int:
    return _logger.getEffectiveLevel()


@tf_export("logging.log")
def log(level: int, msg, *args, **kwargs) -> None:
    _logger.log(level, msg, *args, **kwargs)


@tf_export("logging.debug")
def debug(msg, *args, **kwargs) -> None:
    _logger.debug(msg, *args, **kwargs)


@tf_export("logging.info")
def info(msg, *args, **kwargs) -> None:
    _logger.info(msg, *args, **kwargs)


@tf_export("logging.warn", "logging.warning")
def warning(msg, *args, **kwargs) -> None:
    _logger.warning(msg, *args, **kwargs)


warn = warning


@tf_export("logging.error")
def error(msg, *args, **kwargs) -> None:
    _logger.error(msg, *args, **kwargs)


@tf_export("logging.TaskLevelStatusMessage")
def TaskLevelStatusMessage(msg) -> None:
    """tf.logging.TaskLevelStatusMessage(msg): logs `msg` at ERROR level, as TF1 does."""
    error(msg)


@tf_export("logging.flush")
def flush() -> None:
    """tf.logging.flush(): flushes the handlers of TensorFlow's logger (TF1 itself left this
    unimplemented)."""
    for handler in _logger.handlers:
        handler.flush()


@tf_export("logging.fatal")
def fatal(msg, *args, **kwargs) -> None:
    _logger.fatal(msg, *args, **kwargs)


@tf_export("logging.vlog")
def vlog(level: int, msg, *args, **kwargs) -> None:
    _logger.log(level, msg, *args, **kwargs)


def _caller_key() -> tuple:
    frame = _sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


@tf_export("logging.log_every_n")
def log_every_n(level: int, msg, n: int, *args) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th ... call from the same line."""
    key = _caller_key()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % n == 0:
        _logger.log(level, msg, *args)


@tf_export("logging.log_first_n")
def log_first_n(level: int, msg, n: int, *args) -> None:
    key = _caller_key()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        _logger.log(level, msg, *args)


@tf_export("logging.log_if")
def log_if(level: int, msg, condition, *args) -> None:
    if condition:
        _logger.log(level, msg, *args)
