"""``python -m tensorweave.distributed.server``: serves one task (see the package docstring).

A separate module so that runpy never executes the package module a second time (runpy
imports the package before it runs this file), which would make a second Server class.
"""
from __future__ import annotations

import sys

from tensorweave.distributed.server import main

if __name__ == "__main__":
    sys.exit(main())
