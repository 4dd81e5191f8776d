"""tf.compat: `tensorweave.compat.v1` is the same namespace as `tensorweave`; the package sets it
when it has finished loading (a module here importing the package back would be a circle)."""
