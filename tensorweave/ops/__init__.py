"""The op library: one subpackage per op family, each op's shape function, dtypes, numpy kernel
and gradient side by side (registry.py holds the tables).

An op module is imported by the modules that use it, or by the registry the first time anything
asks about one of its op types (a graph adding the op, a server planning a graph it received,
`import_graph_def`, a kernel or gradient lookup: registry.load, from the table _op_table.py), so a
process loads only the op modules its graphs use. Importing `tensorweave.ops` loads the registry
and the few modules whose import changes objects the rest of the package hands out, which must
behave the same before any of their ops is asked for.
"""
import importlib

for _module in (
        "registry",
        "array.core",        # convert_to_tensor of Python and numpy values (constants)
        "array.concat",      # convert_to_tensor of lists holding tensors (a Pack)
        "array.slicing",     # Tensor.__getitem__
        "math.operators",    # Tensor's arithmetic and comparison operators
        "math.segment",      # convert_to_tensor of an IndexedSlices
        "sparse.math",       # SparseTensor * and / a dense tensor
        "graph_export",      # Graph.as_graph_def's writer
):
    importlib.import_module(f"{__name__}.{_module}")
del _module
