"""Writes tensorweave/_api_table.py, the table of the TF namespaces, from the tf_export declarations.

Each public name is declared once, where its object is defined (tensorweave/framework/tf_export.py):
`@tf_export("math.add", "add")` on a def or class, or `tf_export("float32", "dtypes.float32")(float32)`
for a module-level name. This script reads those declarations from the source with `ast` (it imports
nothing of tensorweave, so it is fast and no import order can hide a name) and writes, for every
module that serves a namespace, its public names and where each one is defined; the namespace
modules resolve their names through that table on first access (tensorweave/_api.py).

    python tools/generate_api.py          # rewrite tensorweave/_api_table.py
    python tools/generate_api.py --check  # exit 1 when it is out of date

tests/unit/test_public_api.py fails while the table is stale.
"""
from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "tensorweave")
OUTPUT = os.path.join(PACKAGE, "_api_table.py")

# A namespace is served by the module of its own name (tf.nn: tensorweave/nn.py, tf.io.gfile:
# tensorweave/io/gfile.py) except these; two paths served by one module are one namespace.
NAMESPACE_MODULES = {
    "": "tensorweave",
    "compat.v1": "tensorweave",
    "app.flags": "tensorweave.flags",
    "errors": "tensorweave.framework.errors",
    "nn.rnn_cell": "tensorweave.rnn.rnn_cell",
    "random.experimental": "tensorweave.random_experimental",
    "contrib.slim.losses": "tensorweave.contrib.losses",
    "contrib.slim.metrics": "tensorweave.contrib.metrics",
    "contrib.slim.utils": "tensorweave.contrib.utils",
    "contrib.framework.nest": "tensorweave.nest",
    "contrib.slim.dataset": "tensorweave.contrib.slim.data",
    "contrib.slim.data_decoder": "tensorweave.contrib.slim.data",
    "contrib.slim.tfexample_decoder": "tensorweave.contrib.slim.data",
    "contrib.slim.parallel_reader": "tensorweave.contrib.slim.data",
    "contrib.slim.data_provider": "tensorweave.contrib.slim.data",
    "contrib.slim.dataset_data_provider": "tensorweave.contrib.slim.data",
}


def module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[:-len(".py")].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _export_names(call: ast.expr):
    """The names of a `tf_export("a", "b")` call, or None for any other expression."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "tf_export":
        if call.keywords or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
            raise ValueError(f"tf_export takes names as string literals, line {call.lineno}")
        return [a.value for a in call.args]
    return None


def declarations() -> dict:
    """{public name: (module, attribute)} for every tf_export in the package."""
    found = {}
    for directory, _, files in os.walk(PACKAGE):
        for file in sorted(files):
            path = os.path.join(directory, file)
            if not file.endswith(".py") or path == OUTPUT:
                continue
            with open(path, encoding="utf-8") as f:
                source = f.read()
            if "tf_export(" not in source:
                continue
            module = module_name(path)
            tree = ast.parse(source, path)
            calls = sum(_export_names(node) is not None for node in ast.walk(tree))
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    sites = [(names, node.name) for names in map(_export_names, node.decorator_list) if names]
                elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                      and _export_names(node.value.func) is not None):
                    target = node.value.args
                    if len(target) != 1 or not isinstance(target[0], ast.Name):
                        raise ValueError(f"{path}:{node.lineno}: tf_export(...)(name) takes one module-level name")
                    sites = [(_export_names(node.value.func), target[0].id)]
                else:
                    continue
                for names, attribute in sites:
                    calls -= 1
                    for name in names:
                        if name in found:
                            raise ValueError(f"{name} is declared twice: {found[name]} and {(module, attribute)}")
                        found[name] = (module, attribute)
            if calls:
                raise ValueError(f"{path}: tf_export is read only on module-level defs, classes and names")
    return found


def namespace_module(path: str) -> str:
    return NAMESPACE_MODULES.get(path, "tensorweave." + path)


def namespace_paths(found: dict) -> set:
    """Every namespace: the paths the declared names lie in, the paths named above, and all above them."""
    paths = {""}
    for path in set(NAMESPACE_MODULES) | {name.rpartition(".")[0] for name in found}:
        parts = path.split(".")
        paths.update(".".join(parts[:i + 1]) for i in range(len(parts)))
    return paths


def table(found: dict) -> dict:
    """{module serving a namespace: {public name: (module, attribute or None for a module)}}."""
    paths = namespace_paths(found)
    entries = [(path.rpartition(".")[0], path.rpartition(".")[2], (namespace_module(path), None))
               for path in paths if path]
    entries += [(name.rpartition(".")[0], name.rpartition(".")[2], where) for name, where in found.items()]
    out = {namespace_module(path): {} for path in paths}
    for path, name, where in entries:
        names = out[namespace_module(path)]
        if names.setdefault(name, where) != where:
            raise ValueError(f"tf.{path}.{name} is declared as both {names[name]} and {where}")
    return {module: dict(sorted(names.items())) for module, names in sorted(out.items())}


def render(found: dict) -> str:
    lines = ['"""The TF namespaces: for each module that serves one, its public names and where each is defined',
             "(module, attribute; None for a namespace module itself). `import tensorweave as tf` resolves them",
             "on first access (tensorweave/_api.py).",
             "",
             "Generated by tools/generate_api.py from the tf_export declarations; do not edit.",
             '"""',
             "",
             "# Namespace path -> the module that serves it.",
             "NAMESPACE_PATHS = {"]
    lines += [f"    {p!r}: {namespace_module(p)!r}," for p in sorted(namespace_paths(found))]
    lines += ["}", "", "NAMESPACES = {"]
    for module, names in table(found).items():
        lines.append(f"    {module!r}: {{")
        for name, where in names.items():
            line = f"        {name!r}: {where!r},"
            lines += [line] if len(line) <= 120 else [f"        {name!r}:", f"            {where!r},"]
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def write_or_check(output: str, text: str, argv: list, tool: str) -> int:
    """A generated file's command line: writes `text` to `output`, or with --check says (exit
    status 1) whether the file is out of date."""
    if "--check" in argv:
        with open(output, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{output} is out of date: run python tools/{tool}", file=sys.stderr)
                return 1
        return 0
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote", output)
    return 0


def main(argv: list) -> int:
    return write_or_check(OUTPUT, render(declarations()), argv, "generate_api.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
