"""Debugging ops: Print/PrintV2/Assert, tf.assert_* checks, check_numerics."""
