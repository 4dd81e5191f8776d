"""Math ops: cast, elementwise binary and unary ops, range and linspace, reductions and segment
sums, linear algebra, clipping, the Tensor operator overloads, and the array functions built from
math ops (array_composites.py)."""
