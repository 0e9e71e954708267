"""
The engine's import graph has no cycle: statically (every ``from .x import`` of a module of
gpflow_ep.ep, ``TYPE_CHECKING`` blocks included) and dynamically (each module imported alone, without
the package's ``__init__`` importing everything first, in one fresh interpreter); and the engine is a
layer below the models: a module of gpflow_ep.ep, imported alone, loads no model-level module
(models, likelihoods, kernels, validation, training, ...).
"""

import ast
import subprocess
import sys
from pathlib import Path

import gpflow_ep.ep

PACKAGE = Path(gpflow_ep.ep.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
#: the subpackages and modules above the engine (the engine may use progress and summaries, which import nothing)
MODEL_LEVEL = sorted(
    {p.stem for p in PACKAGE.parent.iterdir() if p.name != "ep" and (p.is_dir() or p.suffix == ".py")}
    - {"__init__", "__pycache__", "progress", "summaries"}
)


def _relative_imports(module: str):
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            yield node.module.split(".")[0]


def test_the_static_import_graph_has_no_cycle():
    graph = {m: set(_relative_imports(m)) & set(MODULES) for m in MODULES}
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", f"import cycle: {' -> '.join(path + [m])}"
        state[m] = "open"
        for n in sorted(graph[m]):
            visit(n, path + [m])
        state[m] = "done"

    for m in MODULES:
        visit(m, [])


_SCRIPT = """
import importlib, sys, types
root = {root!r}
failures = []
for name in {modules!r}:
    for key in [k for k in sys.modules if k == "gpflow_ep" or k.startswith("gpflow_ep.")]:
        del sys.modules[key]
    # the packages as empty namespaces: only what the module itself imports is executed
    for pkg, path in (("gpflow_ep", root), ("gpflow_ep.ep", root + "/ep")):
        module = types.ModuleType(pkg)
        module.__path__ = [path]
        sys.modules[pkg] = module
    try:
        importlib.import_module("gpflow_ep.ep." + name)
    except ImportError as error:
        failures.append(f"{{name}}: {{error}}")
    above = sorted(k for k in sys.modules if k.startswith("gpflow_ep.") and k.split(".")[1] in {model_level!r})
    if above:
        failures.append(f"{{name}} loads the model layer: {{above}}")
print("FAILURES", failures)
sys.exit(1 if failures else 0)
"""


def test_every_module_imports_alone():
    script = _SCRIPT.format(root=str(PACKAGE.parent), modules=MODULES, model_level=MODEL_LEVEL)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
