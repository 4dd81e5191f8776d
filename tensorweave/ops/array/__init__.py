"""Array ops: constants, shapes, fill, concat/split, pad/tile, slicing, gather/scatter, where/top_k,
partitions, diagonals, space/batch moves. No module here imports math/ (math is built on array
ops): array functions built from math ops are in math/array_composites.py, gradients that need
math ops in gradients/array_grad.py."""
