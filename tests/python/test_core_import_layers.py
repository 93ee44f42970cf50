"""contrib/check_python_imports.py: python/ passes, and a cycle (also one
through a function-level import) or an upward import between the layers
fails with the modules and lines named."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "contrib" / "check_python_imports.py"


def run(root):
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                          text=True, timeout=60)


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_tree_has_no_cycle_and_no_upward_import():
    result = run(ROOT / "python")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no cycle, no upward import" in result.stdout


def test_a_cycle_through_a_function_level_import_fails(tmp_path):
    write(tmp_path, {
        "tandem/__init__.py": "",
        "tandem/_a.py": "from tandem import _b\n",
        "tandem/_b.py": "def later():\n    from tandem import _a\n    return _a\n",
    })
    result = run(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "import cycle among tandem._a, tandem._b" in result.stdout
    assert "tandem/_b.py:2" in result.stdout


def test_an_upward_import_fails(tmp_path):
    write(tmp_path, {
        "tandem/__init__.py": "",
        "tandem/_core.py": "",
        "tandem/tensorflow/__init__.py": "from tandem import _core\n",
        "tandem/keras/__init__.py": "import tandem.tensorflow\n",
        "tandem/torch/__init__.py": "def f():\n    import horovod.keras\n",
        "horovod/__init__.py": "",
        "horovod/keras/__init__.py": "import tandem.keras\n",
    })
    result = run(tmp_path)
    assert result.returncode == 1, result.stdout
    problems = [line for line in result.stdout.splitlines() if line.startswith("upward")]
    assert problems == ["upward import: tandem.torch (layer torch) imports horovod.keras "
                        "(layer shim) at tandem/torch/__init__.py:2"], result.stdout


def test_the_elastic_layer_sits_between_core_and_frontends(tmp_path):
    # tandem.elastic is framework-neutral: it may not reach a frontend, and
    # the core (init's exit hook included) may not reach it.
    write(tmp_path, {
        "tandem/__init__.py": "",
        "tandem/_basics.py": "def init():\n    from tandem.elastic import run\n",
        "tandem/elastic/__init__.py": "",
        "tandem/elastic/run.py": "from tandem import _basics\n",
        "tandem/elastic/state.py": "def sync():\n    from tandem.torch import functions\n",
        "tandem/torch/__init__.py": "",
        "tandem/torch/functions.py": "from tandem.elastic import state\n",
    })
    result = run(tmp_path)
    assert result.returncode == 1, result.stdout
    problems = [line for line in result.stdout.splitlines() if line.startswith("upward")]
    assert problems == [
        "upward import: tandem._basics (layer core) imports tandem.elastic.run (layer elastic) "
        "at tandem/_basics.py:2",
        "upward import: tandem.elastic.state (layer elastic) imports tandem.torch.functions "
        "(layer torch) at tandem/elastic/state.py:2",
    ], result.stdout


def test_keras_common_sits_below_both_keras_modules(tmp_path):
    # tandem.keras_common is what Keras 3 and Keras 2 share: both may import
    # it; it may reach neither of them nor a framework frontend.
    write(tmp_path, {
        "tandem/__init__.py": "",
        "tandem/elastic/__init__.py": "",
        "tandem/keras_common/__init__.py": "",
        "tandem/keras_common/elastic.py": "from tandem.elastic import State\n",
        "tandem/keras_common/callbacks.py": "def f():\n    from tandem.keras2 import callbacks\n",
        "tandem/keras_common/optimizer.py": "import tandem.tensorflow\n",
        "tandem/tensorflow/__init__.py": "",
        "tandem/keras/__init__.py": "from tandem.keras_common import elastic\n",
        "tandem/keras2/__init__.py": "",
        "tandem/keras2/callbacks.py": "from tandem.keras_common import callbacks\n",
    })
    result = run(tmp_path)
    assert result.returncode == 1, result.stdout
    problems = [line for line in result.stdout.splitlines() if line.startswith("upward")]
    assert problems == [
        "upward import: tandem.keras_common.callbacks (layer keras_common) imports "
        "tandem.keras2.callbacks (layer keras) at tandem/keras_common/callbacks.py:2",
        "upward import: tandem.keras_common.optimizer (layer keras_common) imports "
        "tandem.tensorflow (layer tensorflow) at tandem/keras_common/optimizer.py:1",
    ], result.stdout
