"""tf.app: run(main, argv) and the flags module, as TF1 programs use them."""
from __future__ import annotations

import sys

import tensorweave.flags as flags

from tensorweave.framework.tf_export import tf_export


@tf_export("app.run")
def run(main=None, argv=None) -> None:
    """Parses flags from argv (default sys.argv), calls main(remaining_argv), exits with its result."""
    args = sys.argv if argv is None else argv
    remaining = flags.FLAGS(args, known_only=True)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(remaining))
