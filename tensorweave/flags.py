"""tf.app.flags / tf.flags: the absl-style flag API TF1 programs use, without absl.

Flags are defined with DEFINE_*; `FLAGS` parses sys.argv lazily on first attribute access
(as absl does under tf.app.run) or explicitly with FLAGS(argv), which returns the argv left.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from tensorweave.framework.tf_export import tf_export


@tf_export("flags.Flag")
class Flag:
    def __init__(self, name: str, default, help: str, parser: Callable[[str], Any], kind: str):
        self.name, self.default, self.help, self.parser, self.kind = name, default, help, parser, kind
        self.value = default
        self.present = False


@tf_export("flags.FlagValues")
class FlagValues:
    """The FLAGS object: attribute access to parsed flag values."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, flag: Flag) -> None:
        if flag.name in self._flags:
            raise DuplicateFlagError(f"The flag '{flag.name}' is defined twice.")
        self._flags[flag.name] = flag

    def __getattr__(self, name: str):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name: str, value) -> None:
        if name not in self._flags:
            raise AttributeError(f"Unknown flag {name}")
        self._flags[name].value = value

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def flag_values_dict(self) -> dict:
        return {k: f.value for k, f in self._flags.items()}

    def __call__(self, argv, known_only: bool = False) -> list:
        """Parses --name=value / --name value / --bool / --nobool; returns the unparsed argv."""
        argv = list(argv)
        rest = argv[:1]
        i = 1
        while i < len(argv):
            arg = argv[i]
            if arg == "--":
                rest.extend(argv[i + 1:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                i += 1
                continue
            body = arg.lstrip("-")
            name, eq, value = body.partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and self._flags.get(name[2:]) is not None \
                    and self._flags[name[2:]].kind == "bool" and not eq:
                flag, value, eq = self._flags[name[2:]], "false", "="
            if flag is None:
                if not known_only:
                    raise UnrecognizedFlagError(f"Unknown command line flag '{name}'")
                rest.append(arg)
                i += 1
                continue
            if not eq:
                if flag.kind == "bool":
                    value = "true"
                else:
                    if i + 1 >= len(argv):
                        raise IllegalFlagValueError(f"Flag --{name} must have a value")
                    i += 1
                    value = argv[i]
            try:
                flag.value = flag.parser(value)
            except (ValueError, TypeError) as e:
                raise IllegalFlagValueError(f"flag --{name}={value}: {e}") from None
            flag.present = True
            i += 1
        self.mark_as_parsed()
        return rest


@tf_export("flags.Error")
class Error(Exception):
    pass


@tf_export("flags.DuplicateFlagError")
class DuplicateFlagError(Error):
    pass


@tf_export("flags.UnrecognizedFlagError")
class UnrecognizedFlagError(Error):
    pass


@tf_export("flags.IllegalFlagValueError")
class IllegalFlagValueError(Error):
    pass


FLAGS = FlagValues()
tf_export("flags.FLAGS")(FLAGS)


def _parse_bool(v) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).lower()
    if s in ("true", "t", "1", "yes", "y"):
        return True
    if s in ("false", "f", "0", "no", "n"):
        return False
    raise ValueError(f"Non-boolean argument to boolean flag: {v}")


def _list(v) -> list:
    return v if isinstance(v, list) else [s for s in str(v).split(",") if s]


@tf_export("flags.DEFINE_string")
def DEFINE_string(name: str, default: Optional[str], help: str, flag_values=FLAGS, **_) -> None:
    flag_values._define(Flag(name, default, help, str, "string"))


@tf_export("flags.DEFINE_integer")
def DEFINE_integer(name: str, default: Optional[int], help: str, lower_bound=None, upper_bound=None,
                   flag_values=FLAGS, **_) -> None:
    def parse(v):
        n = int(v)
        if (lower_bound is not None and n < lower_bound) or (upper_bound is not None and n > upper_bound):
            raise ValueError(f"{n} is out of range [{lower_bound}, {upper_bound}]")
        return n
    flag_values._define(Flag(name, default, help, parse, "integer"))


@tf_export("flags.DEFINE_float")
def DEFINE_float(name: str, default: Optional[float], help: str, flag_values=FLAGS, **_) -> None:
    flag_values._define(Flag(name, default, help, float, "float"))


@tf_export("flags.DEFINE_bool", "flags.DEFINE_boolean")
def DEFINE_boolean(name: str, default: Optional[bool], help: str, flag_values=FLAGS, **_) -> None:
    flag_values._define(Flag(name, default, help, _parse_bool, "bool"))


DEFINE_bool = DEFINE_boolean


@tf_export("flags.DEFINE_list")
def DEFINE_list(name: str, default, help: str, flag_values=FLAGS, **_) -> None:
    flag_values._define(Flag(name, _list(default) if default is not None else None, help, _list, "list"))


@tf_export("flags.DEFINE_enum")
def DEFINE_enum(name: str, default, enum_values, help: str, flag_values=FLAGS, **_) -> None:
    def parse(v):
        if v not in enum_values:
            raise ValueError(f"value should be one of <{'|'.join(enum_values)}>")
        return v
    flag_values._define(Flag(name, default, help, parse, "enum"))


@tf_export("flags.mark_flag_as_required")
def mark_flag_as_required(name: str, flag_values=FLAGS) -> None:
    flag_values._flags[name].required = True
