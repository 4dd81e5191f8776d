"""Math ops: cast, elementwise binary and unary ops, reductions and segment sums, linear algebra,
clipping, and the Tensor operator overloads."""
