"""Sphinx configuration of the gpflow_ep documentation (``sphinx-build -W -b html docs docs/_build/html``)."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document (and run the tutorials against) this checkout
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # tutorial kernels
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The tutorials' kernels draw their figures inline; a non-interactive MPLBACKEND (Agg) would hide them.
os.environ.pop("MPLBACKEND", None)

import gpflow_ep  # noqa: E402

project = "gpflow_ep"
author = "the gpflow_ep authors"
copyright = "2026, the gpflow_ep authors"
release = gpflow_ep.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",  # Markdown pages (MyST) and the executed tutorials (jupytext percent-format .py files)
    "sphinxcontrib.bibtex",  # the papers, cited with :cite: (pages and docstrings) from refs.bib
]

bibtex_bibfiles = ["refs.bib"]
bibtex_reference_style = "author_year"
bibtex_default_style = "plain"

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".py": "myst-nb"}
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
exclude_patterns = ["_build", "conf.py", "_details", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# Tutorials run at every build, so a tutorial that no longer runs fails the build (they use small data).
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# TensorFlow's start-up log lines on stderr (CUDA not found, absl) are noise on a page; results are printed
nb_output_stderr = "remove"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]  # pages moved from the README start at "##" below their title

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_mock_imports = []
autosummary_generate = False
napoleon_google_docstring = False
napoleon_numpy_docstring = True

html_theme = "pydata_sphinx_theme"
html_title = f"gpflow_ep {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
