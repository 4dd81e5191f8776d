"""Control flow: functional conditionals (If) and loops (While),
and the TensorList-based scan/map_fn/foldl/foldr."""
