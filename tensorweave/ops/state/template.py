"""tf.make_template: a function whose tf.get_variable calls create variables on its first call
and share them on every later one, TF 1's Template: the variables live under one variable scope,
uniquified from the template's name, which later calls re-enter with reuse=True."""
from __future__ import annotations

import functools
import logging

from tensorweave.framework.api import GraphKeys, get_collection
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.state.variable_scope import _get_unique_variable_scope, _pure_variable_scope, variable_scope

_log = logging.getLogger("tensorflow")


class Template:
    """What tf.make_template returns: call it as the function it wraps."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None, custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func, self._name, self._unique_name, self._custom_getter = func, name, unique_name, custom_getter
        self._variable_scope = None
        if create_scope_now:
            with _pure_variable_scope(unique_name or _get_unique_variable_scope(name),
                                      custom_getter=custom_getter) as vs:
                self._variable_scope = vs
        self._variables_created = False

    def _call_func(self, args, kwargs):
        global_at_start = len(get_collection(GraphKeys.GLOBAL_VARIABLES))
        trainable_at_start = len(get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            trainable = get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if len(trainable) != trainable_at_start:
                raise ValueError("Trainable variable created when calling a template after the first time, perhaps "
                                 "you used tf.Variable when you meant tf.get_variable: "
                                 f"{trainable[trainable_at_start:]}")
            created = get_collection(GraphKeys.GLOBAL_VARIABLES)[global_at_start:]
            if created:
                _log.info("New variables created when calling a template after the first time, perhaps you used "
                          "tf.Variable when you meant tf.get_variable: %s", created)
        else:
            self._variables_created = True
        return result

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            # later calls reuse what the first one created
            with variable_scope(self._variable_scope, reuse=self._variables_created):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        return self._variable_scope

    var_scope = variable_scope

    @property
    def variable_scope_name(self) -> str:
        """The scope's name ending in "/" (so that "lin" does not match "lin_1")."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _scoped(self, key) -> list:
        return [] if self._variable_scope is None else get_collection(key, self.variable_scope_name)

    @property
    def variables(self) -> list:
        return self._scoped(GraphKeys.GLOBAL_VARIABLES)

    global_variables = variables

    @property
    def trainable_variables(self) -> list:
        return self._scoped(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list:
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trainable]

    @property
    def local_variables(self) -> list:
        return self._scoped(GraphKeys.LOCAL_VARIABLES)


@tf_export("make_template")
def make_template(name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None, **kwargs):
    """tf.make_template(name_, func_, create_scope_now_=False, unique_name_=None,
    custom_getter_=None, **kwargs): a Template wrapping func_ (with kwargs bound) so that its
    tf.get_variable calls share variables across calls: the first call creates them under the
    variable scope `name_` (made unique, or unique_name_), later calls reuse them; a trainable
    variable created by a later call is a ValueError. The scope is created at the first call
    unless create_scope_now_."""
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)
