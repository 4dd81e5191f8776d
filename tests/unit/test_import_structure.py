"""The import structure holds (tools/import_structure.py: no circles between modules or between
the folders of ops/, no upward imports, no function-local or whole-package imports), and the
check itself sees each kind of break."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "import_structure.py")


def run_tool(root):
    return subprocess.run([sys.executable, TOOL, str(root)], capture_output=True, text=True, timeout=120)


def test_the_repository_holds():
    result = run_tool(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "import circles: 0 between files, 0 between folders of ops/" in result.stdout


def write_package(root, files: dict):
    for rel, text in files.items():
        path = root / "tensorweave" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in {p.parent for p in (root / "tensorweave").rglob("*.py")} | {root / "tensorweave"}:
        (folder / "__init__.py").touch()


@pytest.mark.parametrize("files,finding", [
    ({"ops/a/x.py": "from tensorweave.ops.a import y\n", "ops/a/y.py": "from tensorweave.ops.a import x\n"},
     "import circles: 1 between files, 0 between folders of ops/"),
    ({"ops/a/x.py": "from tensorweave.ops.b.y import f\n", "ops/b/y.py": "from tensorweave.ops.a.z import g\n",
      "ops/a/z.py": ""},
     "import circles: 0 between files, 1 between folders of ops/"),
    ({"ops/x.py": "from tensorweave.runtime.plan import Plan\n", "runtime/plan.py": ""},
     "upward imports (framework <- ops <- runtime <- distributed <- client, train, namespaces): 1"),
    ({"train/x.py": "def f():\n    from tensorweave.ops import y\n", "ops/y.py": ""},
     "function-local tensorweave imports (outside cli.py): 1"),
    ({"ops/x.py": "from tensorweave import constant\n"}, "whole-package imports inside ops/: 1"),
    ({"ops/x.py": "import tensorweave.ops\n"}, "whole-package imports inside ops/: 1"),
])
def test_each_break_fails(tmp_path, files, finding):
    write_package(tmp_path, files)
    result = run_tool(tmp_path)
    assert result.returncode == 1, result.stdout
    assert finding in result.stdout, result.stdout
