"""The installed package stands alone (it never imports the benchmarks); its top level holds its modules."""

import re
import subprocess
import sys
from pathlib import Path

import gpflow_ep

PACKAGE = Path(gpflow_ep.__file__).parent
ROOT = PACKAGE.parent


def test_importing_every_module_of_the_package_leaves_benchmarks_unimported(request):
    """Run from the repository root, where ``benchmarks`` would be importable."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import gpflow_ep\n"
        "names = [m.name for m in pkgutil.walk_packages(gpflow_ep.__path__, 'gpflow_ep.')]\n"
        "names = [n for n in names if not n.endswith('__main__')]  # the command line, run on import\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(len(names), sorted(m for m in sys.modules if m.split('.')[0] == 'benchmarks'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=request.config.rootpath, capture_output=True, text=True, check=True
    )
    count, imported = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) > 50 and imported == "[]"


def test_no_module_of_the_package_names_benchmarks_in_an_import():
    pattern = re.compile(r"^\s*(from\s+benchmarks\b|import\s+benchmarks\b)|import_module\(\s*[\"']benchmarks", re.M)
    offending = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text())]
    assert offending == []


def test_the_top_level_holds_the_public_modules_and_nothing_else():
    """
    As GPflow's: ``gpflow_ep.<module>`` for every module with a page in the API reference (each
    reachable after a plain ``import gpflow_ep``), the version, and no models or functions.
    """
    import gpflow_ep

    documented = sorted(p.stem for p in (ROOT / "docs" / "api").glob("*.rst") if p.stem != "index")
    assert sorted(set(gpflow_ep.__all__) - {"__version__"}) == documented
    for name in documented:
        assert getattr(gpflow_ep, name).__name__ == f"gpflow_ep.{name}"
    for name in ("EPGP", "SEPGP", "EPGPC", "fit"):
        assert not hasattr(gpflow_ep, name)
