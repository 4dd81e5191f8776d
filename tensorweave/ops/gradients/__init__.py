"""tf.gradients and its central helpers (SumToShape undoes broadcasting once for every op), and
the gradients that need a later family than their op's: array_grad.py, math_grad.py,
control_flow_grad.py (a family's own folder may import only the families below it)."""
