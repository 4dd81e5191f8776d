"""import_structure.py [REPO] : checks the import structure of the tensorweave package.

Reports, and exits 1 on any of them:
- import circles between modules (module-level imports; strongly connected components of more
  than one module),
- import circles between the folders of ops/ (ops/array -> ops/math when any module of array
  imports any module of math; a module directly in ops/, such as random.py, is a folder of its own),
- upward imports against the layer order framework <- ops <- runtime <- distributed <- client,
  train and the TF namespaces (a lower layer importing a higher one),
- function-local imports of tensorweave modules (each one is an import order held together by
  hand; cli.py is exempt: its lazy imports keep `tensorweave --help` fast),
- whole-package imports inside ops/ (`import tensorweave`, `from tensorweave import x`, or
  `tensorweave.ops` itself, whose __init__ imports every op module).
"""
import ast
import os
import sys

LAYERS = {"framework": 0, "ops": 1, "runtime": 2, "distributed": 3}   # anything else: the top (4)
TOP = 4


def module_name(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def imported_names(module: str, node, is_package: bool) -> list:
    """Absolute names an Import/ImportFrom names: the module, and each `from` name under it."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return [base] + [base + "." + a.name for a in node.names]


def read_imports(root: str):
    """(modules {name: path}, edges {module: set of imported modules}, function-local imports,
    whole-package imports inside ops/)."""
    modules = {}
    for folder, _, files in os.walk(os.path.join(root, "tensorweave")):
        for f in files:
            if f.endswith(".py"):
                modules[module_name(root, os.path.join(folder, f))] = os.path.join(folder, f)
    edges, local, whole = {}, [], []
    for mod, path in modules.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        where = lambda node: "%s:%d" % (os.path.relpath(path, root), node.lineno)  # noqa: E731
        edges[mod] = set()
        in_ops = mod.startswith("tensorweave.ops.")

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    visit(child, True)
                    continue
                if not isinstance(child, (ast.Import, ast.ImportFrom)):
                    visit(child, in_function)
                    continue
                names = [n for n in imported_names(mod, child, path.endswith("__init__.py"))
                         if n == "tensorweave" or n.startswith("tensorweave.")]
                if not names:
                    continue
                if in_function and mod != "tensorweave.cli":
                    local.append(where(child))
                    continue
                edges[mod].update(n for n in names if n in modules and n != mod)
                if in_ops:
                    # the module an Import binds or a From reads from, and each name it takes
                    if isinstance(child, ast.Import):
                        packages = [n for n in names if n in ("tensorweave", "tensorweave.ops")]
                    else:
                        packages = [n for n in names[1:] if n not in modules
                                    and names[0] in ("tensorweave", "tensorweave.ops")]
                    if packages:
                        whole.append(where(child))
        visit(tree, False)
    return modules, edges, local, whole


def circles(edges: dict) -> list:
    """Strongly connected components of more than one node (Tarjan's, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def ops_folder(mod: str, modules: dict) -> str:
    """The folder of ops/ a module belongs to: ops/array for tensorweave.ops.array.core; a module
    directly in ops/ is a folder of its own (ops/random.py)."""
    part = mod.split(".")[2]
    return "ops/" + part if modules.get("tensorweave.ops." + part, "").endswith("__init__.py") else "ops/%s.py" % part


def levels(edges: dict) -> list:
    """The nodes of an acyclic graph by level: a node's level is one more than the highest level
    of the nodes it imports (0: imports none)."""
    level = {}

    def of(v):
        if v not in level:
            level[v] = 1 + max((of(w) for w in edges[v]), default=-1)
        return level[v]
    for v in edges:
        of(v)
    return [sorted(v for v in level if level[v] == n) for n in range(1 + max(level.values(), default=-1))]


def layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else TOP


def main(root: str) -> int:
    modules, edges, local, whole = read_imports(root)
    file_circles = circles(edges)
    folder_edges, examples = {}, {}
    for mod, targets in edges.items():
        if not mod.startswith("tensorweave.ops."):
            continue
        for t in targets:
            if t.startswith("tensorweave.ops."):
                a, b = ops_folder(mod, modules), ops_folder(t, modules)
                if a != b:
                    folder_edges.setdefault(a, set()).add(b)
                    folder_edges.setdefault(b, set())
                    examples.setdefault((a, b), "%s -> %s" % (mod, t))
    folder_circles = circles(folder_edges)
    upward = sorted("%s -> %s" % (m, t) for m, ts in edges.items() for t in ts if layer(t) > layer(m))

    print("modules: %d" % len(modules))
    print("import circles: %d between files, %d between folders of ops/" % (len(file_circles), len(folder_circles)))
    for c in file_circles:
        print("  files: " + ", ".join(c))
    for c in folder_circles:
        print("  folders: " + ", ".join(c))
        for a in c:
            for b in sorted(folder_edges[a] & set(c)):
                print("    %s -> %s (e.g. %s)" % (a, b, examples[(a, b)]))
    if not folder_circles:
        print("folders of ops/ by level (each imports only folders of lower levels):")
        for n, folders in enumerate(levels(folder_edges)):
            print("  %d: %s" % (n, ", ".join(f[4:] for f in folders)))
    print("upward imports (framework <- ops <- runtime <- distributed <- client, train, namespaces): %d" % len(upward))
    for u in upward:
        print("  " + u)
    print("function-local tensorweave imports (outside cli.py): %d" % len(local))
    for loc in local:
        print("  " + loc)
    print("whole-package imports inside ops/: %d" % len(whole))
    for loc in whole:
        print("  " + loc)
    ok = not (file_circles or folder_circles or upward or local or whole)
    print("import structure: %s" % ("holds" if ok else "BROKEN"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
