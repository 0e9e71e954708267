"""
The Python snippets of the README and of the documentation's Markdown pages run as written, on the
data sets the pages name for them.

A snippet is a fenced ``python`` block preceded by ``<!-- snippet: NAME -->`` in ``README.md`` or in
any ``docs/**/*.md`` page; ``NAME`` picks the names the snippet expects to exist (its data, a kernel,
earlier objects) from :data:`SETUPS`, built the way the page's prose describes. A snippet that
appears on several pages (the README's swap is also on the getting-started page) must be the same
on each. Snippets that do not start from nothing say so on their page. By default the test caps the
amount of training (loop counts, ``epochs=``, ``iterations=``, and ``Scipy().minimize``'s iterations)
so that the whole file runs in about a minute; ``pytest -m slow`` runs every snippet exactly as
written. (The docs' tutorials, ``docs/**/*.py``, are executed by the docs build itself.)
"""

import re
from pathlib import Path

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ep.datasets import breast_cancer_split, sklearn_multiclass_split, spike_slab_problem
from gpflow_ep.likelihoods import Probit

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_SNIPPET = re.compile(r"<!-- snippet: (?P<name>[\w-]+) -->\s*\n```python\n(?P<code>.*?)```", re.S)


def snippet_pages():
    """The README and every Markdown page of the documentation (not the built site)."""
    docs = sorted(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)
    return [README, *docs]


def all_snippets():
    """NAME -> [(page, code), ...] over every page that marks a snippet NAME."""
    found = {}
    for page in snippet_pages():
        for match in _SNIPPET.finditer(page.read_text()):
            found.setdefault(match["name"], []).append((page.relative_to(ROOT), match["code"]))
    return found


def readme_snippets():
    """NAME -> code (the first page's copy; :func:`test_copies_of_a_snippet_agree` checks the others)."""
    return {name: copies[0][1] for name, copies in all_snippets().items()}


def _cap(match, limit):
    return f"{match[1]}{min(int(match[2]), limit)}"


def shrink(code: str) -> str:
    """The snippet with its amount of training capped (loops at 3, epochs at 1, iterations at 5)."""
    code = re.sub(r"(range\()(\d+)", lambda m: _cap(m, 3), code)
    code = re.sub(r"(epochs=)(\d+)", lambda m: _cap(m, 1), code)
    return re.sub(r"(iterations=)(\d+)", lambda m: _cap(m, 5), code)


def _breast_cancer():
    X, Y, X_test, Y_test = breast_cancer_split()[:4]
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[1.0] * X.shape[1])
    return dict(X=X, Y=Y, X_test=X_test, Y_test=Y_test, Z=X[:50].copy(), kernel=kernel, data=(X, Y))


def _sepgpc_on_breast_cancer():
    from gpflow_ep.models import SEPGPC

    names = _breast_cancer()
    model = SEPGPC(names["kernel"], Probit(), names["Z"], num_data=len(names["X"]))
    return dict(names, model=model)


def _binary_full_gp():
    import gpflow_ep
    from gpflow_ep.models import EPGPC

    return dict(_breast_cancer(), gpflow_ep=gpflow_ep, EPGPC=EPGPC, Probit=Probit)


def _noisy_mixture():
    """Qi & Guo's (2012) toy: two Gaussian classes with 10 % of the labels flipped, 2 × 50 points."""
    import gpflow_ep
    from gpflow_ep.datasets import noisy_mixture

    X, Y = noisy_mixture(n_per_class=50, flip_rate=0.1, seed=0)[:2]
    return dict(data=(X, Y), kernel=gpflow.kernels.SquaredExponential(), gpflow_ep=gpflow_ep)


def _iris():
    split = sklearn_multiclass_split("iris")
    X, Y = split.X_train, split.Y_train.astype(np.int64)
    return dict(X=X, Y=Y, X_test=split.X_test, D=X.shape[1], C=3, Z=X[::5].copy())


def _diabetes():
    """scikit-learn's diabetes (442 × 10), inputs and target standardised as the DGP-AEP paper does."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    Y = ((y - y.mean()) / y.std())[:, None]
    return dict(
        X=X[:350],
        Y=Y[:350],
        X_test=X[350:],
        Y_test=Y[350:],
        D=X.shape[1],
        Y01=(Y[:350] > 0).astype(float),
        Probit=Probit,
    )


def _bsvm():
    from gpflow_ep.models import EPGPC, SEPGPC

    names = _breast_cancer()
    names["X"], names["Y"] = names["X"][:200], names["Y"][:200]  # EPGPC holds an n × n kernel matrix
    return dict(names, EPGPC=EPGPC, SEPGPC=SEPGPC)


def _hinge_cavi():
    from gpflow.keras import tf_keras

    from gpflow_ep.likelihoods import BinaryHinge

    names = _breast_cancer()
    X, Y = names["X"], names["Y"]
    svgp = gpflow.models.SVGP(names["kernel"], BinaryHinge(), names["Z"], num_data=len(X))
    batches = [(X[i : i + 100], Y[i : i + 100]) for i in range(0, 300, 100)]
    return dict(svgp=svgp, batches=batches, tf_keras=tf_keras)


def _deep_kernel():
    from gpflow.keras import tf_keras

    from gpflow_ep.likelihoods import MultiClassHinge

    cnn = tf_keras.Sequential([tf_keras.layers.Input((8, 8, 1)), tf_keras.layers.Flatten(), tf_keras.layers.Dense(32)])
    return dict(cnn=cnn, Z_features=np.random.default_rng(0).normal(size=(20, 32)), MultiClassHinge=MultiClassHinge)


def _spike_slab():
    """The spike-and-slab paper's synthetic problem: d = 25 weights, 20 % non-zero, n = 10 observations."""
    X, y, X_test, y_test, _ = spike_slab_problem(seed=0)
    return dict(X=X, y=y, X_test=X_test, y_test=y_test)


SETUPS = {
    "swap": dict,  # self-contained
    "monitor": _sepgpc_on_breast_cancer,
    "epgpc-alternated": _binary_full_gp,
    "power-relaxed": _noisy_mixture,
    "sepgpc": lambda: dict(_breast_cancer(), Probit=Probit),
    "sepmgpc": _iris,
    "dgpaep": _diabetes,
    "bsvm": _bsvm,
    "hinge-cavi": _hinge_cavi,
    "deep-kernel": _deep_kernel,
    "spike-slab": _spike_slab,
}


def _run(name, shrunk: bool):
    snippets = readme_snippets()
    assert name in snippets, f"no page (README.md, docs/**/*.md) has a snippet marked {name!r}"
    code = shrink(snippets[name]) if shrunk else snippets[name]
    namespace = {"gpflow": gpflow, "np": np, "tf": tf, **SETUPS[name]()}
    exec(compile(code, f"snippet:{name}", "exec"), namespace)


@pytest.mark.parametrize(
    "name",  # the sepgpc snippet is slow (the swap snippet stays in the default run)
    [pytest.param(n, marks=pytest.mark.slow) if n == "sepgpc" else n for n in sorted(SETUPS)],
)
def test_readme_snippet_runs_with_capped_training(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write (TensorBoard runs) write here
    minimize = gpflow.optimizers.Scipy.minimize
    monkeypatch.setattr(
        gpflow.optimizers.Scipy,
        "minimize",
        lambda self, *a, **k: minimize(self, *a, **{"options": {"maxiter": 5}, **k}),
    )
    _run(name, shrunk=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SETUPS))
def test_readme_snippet_runs_as_written(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(name, shrunk=False)


#: marked snippets run by another test, with the page's surrounding code blocks
TESTED_ELSEWHERE = {
    "sparse-training": "tests/optimizers/test_minibatch_ep.py::test_the_guide_snippets_run",
}


def test_every_marked_snippet_is_tested():
    assert set(readme_snippets()) == set(SETUPS) | set(TESTED_ELSEWHERE)


def test_copies_of_a_snippet_agree():
    for name, copies in all_snippets().items():
        first_page, first = copies[0]
        for page, code in copies[1:]:
            assert code == first, f"snippet {name!r} differs between {first_page} and {page}"


def test_the_readme_keeps_the_swap_snippet():
    assert "swap" in {match["name"] for match in _SNIPPET.finditer(README.read_text())}
