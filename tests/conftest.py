"""Shared test configuration: float64 everywhere (GPflow's default), seeded data."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from benchmarks.data import benchmark_dir

# The fast subset that CI also runs against the oldest declared dependency versions (.ci/oldest):
# every test in these modules is marked ``oldest_versions`` (select with ``pytest -m oldest_versions``).
OLDEST_VERSIONS_MODULES = (
    "ep/test_schedules.py",
    "ep/test_sites.py",
    "ep/test_tilted.py",
    "likelihoods/test_hinge.py",
    "likelihoods/test_labels.py",
    "likelihoods/test_noisy_step.py",
    "likelihoods/test_probit.py",
    "models/test_epgpc.py",
    "models/test_sepgpc.py",
    "optimizers/test_ep_optimizer.py",
    "test_cli.py",
    "test_training.py",
    "test_validation.py",
)
# ... except their slowest tests (a two-device subprocess, long training loops)
OLDEST_VERSIONS_EXCLUDED = (
    "models/test_sepgpc.py::test_inner_updates_raise_the_evidence_like_outer_updates",
    "test_training.py::test_mirrored_strategy_on_two_devices_matches_one_device",
    "test_training.py::test_sepgpc_in_a_plain_gpflow_loop",
)


# Tests of 15 s or more each on the 2-core CI machine, left to ``pytest -m slow`` so that the default run
# stays within its time budget: ``module::test`` (every parametrisation) or ``module::test[id]``. Each
# area keeps a faster test of the same property in the default run (named in the comment).
SLOW_IN_THE_DEFAULT_RUN = (
    # two logical devices in a subprocess (131 s); two workers = one process stays
    "test_training.py::test_mirrored_strategy_on_two_devices_matches_one_device",
    "test_training.py::test_readme_monitor_snippet_runs_as_written",  # test_readme.py runs it capped
    "test_training.py::test_readme_multiclass_snippet_runs_as_written",  # test_readme.py runs it capped
    "integration/test_training_multiworker.py::test_a_killed_worker_is_reported_and_training_resumes_from_the_checkpoint",
    # compare's catalogue: the slowest models (the rest of the catalogue stays)
    "compare/test_run.py::test_every_offered_model_runs_through_compare[binary-rep]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[binary-pep]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[regression-epgp-t]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[regression-sepgp-t]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[multiclass-sepmgpc]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[regression-dgpaep]",
    "compare/test_run.py::test_rows_of_an_ep_model_and_a_variational_one",
    "compare/test_run.py::test_plot_labels_counts_and_nlpd_scale",
    "compare/test_models.py::test_every_model_builds_and_its_loss_is_finite[binary-rep]",
    "test_cli.py::test_compare_json_has_a_record_per_model",  # test_run.py's JSON test stays
    # PC-EP's double loop at full length (its unit tests in ep/test_double_loop.py stay)
    "models/test_spike_slab.py::test_orthogonal_design_pc_ep_reaches_the_same_point",
    "models/test_spike_slab.py::test_pc_ep_energy_is_monotone_where_the_woodbury_form_failed",
    # relaxed and power EP through quadrature and long trajectories (their closed-form tests stay)
    "models/test_relaxed_ep.py::test_probit_through_quadrature_and_alternated_training",
    "models/test_relaxed_ep.py::test_large_penalty_follows_ep_trajectory",
    "models/test_relaxed_ep.py::test_scale_equivariance_of_penalty",
    "models/test_relaxed_ep.py::test_hinge_sites_relax_and_a_huge_penalty_is_ep",
    "models/test_power_ep.py::test_probit_power_ep_through_quadrature_and_nested_training",
    "test_readme.py::test_readme_snippet_runs_with_capped_training[sepgpc]",  # the swap snippet stays
    "models/test_sepgpc.py::test_inner_updates_raise_the_evidence_like_outer_updates",
    "models/test_sepgpc.py::test_nested_training_with_scipy",
    # checkpoint resumption and seeded reproducibility: SEPGPC's stay
    "models/test_persistence.py::test_fit_resumes_from_its_checkpoint_where_it_stopped[SEPMGPC]",
    "models/test_persistence.py::test_fit_resumes_from_its_checkpoint_where_it_stopped[EPGPC]",
    "models/test_persistence.py::test_fit_resumes_from_its_checkpoint_where_it_stopped[DGPAEP]",
    "models/test_persistence.py::test_two_seeded_fits_are_identical[SEPMGPC]",
    "models/test_persistence.py::test_two_seeded_fits_are_identical[EPGPC]",
    "models/test_persistence.py::test_two_seeded_fits_are_identical[DGPAEP]",
    "models/test_persistence.py::test_deepcopy_freeze_and_saved_model_export[SEPMGPC]",
    # learning curves (the hinge's closed forms and the DGP's oracles stay)
    "likelihoods/test_hinge.py::test_svgp_with_the_hinge_learns_a_classifier",
    "models/test_dgp_aep.py::test_deep_gp_fits_a_step_better_than_one_layer",
    # robust EP's fallback: learning runs, the fallback's fixed point on 30 points and the FD gradient after
    # a fallback (test_epgp_robust's robust-preset-converges test stays; it does not reach the fallback)
    "ep/test_presets.py::test_learning_with_scipy_converges_where_plain_parallel_ep_does_not",
    "ep/test_presets.py::test_learning_with_adam_converges_where_plain_parallel_ep_does_not",
    "ep/test_fallback.py::test_fallback_reaches_a_power_ep_fixed_point",
    "ep/test_fallback.py::test_fallback_not_used_where_parallel_ep_converges",
    "models/test_epgp_robust.py::test_robust_ep_converges_during_hyperparameter_learning_including_nu",
    "ep/test_fallback.py::test_evidence_gradient_after_fallback_matches_finite_differences",
    # compare's count run end to end (every count model of the catalogue stays in test_run.py)
    "compare/test_run.py::test_a_count_run_writes_a_report_with_finite_numbers",
    # the slowest fuzz and option cases (the other models and options stay)
    "integration/test_fuzz.py::test_classifiers_never_return_nan[RelaxedEP]",
    "test_monitor.py::test_relaxed_ep_writes_its_relaxation_histogram_and_spike_slab_its_evidence",
    # benchmarks' end-to-end --quick runs (every benchmark's unit tests stay, and the quick runs of
    # epgpc_scaling, double_loop_gpc and bsvm_active as smoke tests of the shared report and runner code)
    "benchmarks/test_dgp_binary.py::test_quick_run_reports_every_method",
    "benchmarks/test_sepmgpc_multiclass.py::test_quick_run_reports_every_method",
    "benchmarks/test_logistic_uci.py::test_logistic_uci_quick_writes_finite_results",
    "benchmarks/test_bsvm_hybrid.py::test_quick_run_reports_both_models",
    "benchmarks/test_step_speed.py::test_quick_run_times_every_method_and_reports_every_ratio",
    "benchmarks/test_sepmgpc_flights.py::test_sepmgpc_flights_quick",
    "benchmarks/test_rep_toy.py::test_rep_toy_quick",
    "benchmarks/test_dgp_uci.py::test_quick_run_reports_every_method",
    "benchmarks/test_dgp_timing.py::test_quick_run_times_every_method_and_reports_the_ratios",
    "benchmarks/test_robust_regression.py::test_robust_regression_quick_writes_finite_results",
    "benchmarks/test_counts_ordinal.py::test_counts_ordinal_quick_writes_finite_results",
    "benchmarks/test_sepgpc_table1.py::test_sepgpc_table1_quick",
    "benchmarks/test_rep_uci.py::test_rep_uci_quick_writes_finite_results",
    "benchmarks/test_rep_synthetic.py::test_rep_synthetic_quick",
    "benchmarks/test_spike_slab_pcep.py::test_quick_run_end_to_end",
    "benchmarks/test_compile_cost.py::test_compile_cost_quick",
    "benchmarks/test_bsvm_multiclass.py::test_quick_run_reports_every_method",
    # one case of a parametrised oracle where its siblings stay (laplace/logistic gradients, three points,
    # counts-epgp, the other catalogue models, EPGPC probit and the other fuzzed classifiers, power 0.8,
    # SEPGPC's settling, probit/noisy-step identities)
    "compare/test_models.py::test_every_model_builds_and_its_loss_is_finite[regression-epgp-t]",
    "integration/test_fuzz.py::test_classifiers_never_return_nan[EPGPC damped power]",
    "models/test_sparse_sites.py::test_full_batch_training_settles[SEPMGPC]",
    "models/test_epgpc.py::test_ep_fixed_point_identities[hinge]",
    "models/test_epgp_exact.py::test_evidence_gradient_equals_finite_differences_at_kernel_variance_25[student_t-<lambda>-<lambda>]",
    "models/test_epgp_exact.py::test_two_point_ep_is_exact_in_the_limit_of_independent_points[student_t]",
    "compare/test_run.py::test_every_offered_model_runs_through_compare[counts-sepgp]",
    "integration/test_fuzz.py::test_classifiers_never_return_nan[SEPGPC minibatch hinge]",
    "integration/test_fuzz.py::test_classifiers_never_return_nan[PowerEP]",
    "integration/test_ep_options.py::test_sparse_power_ep_with_inducing_points_at_the_data_is_full_power_ep[probit-0.5]",
    "models/test_sepgpc.py::test_minibatch_gradients_average_to_the_exact_gradient[probit-0.5]",
    # long runs whose closed-form and unit tests stay (PC-EP's double-loop units; relaxed EP's closed forms)
    "ep/test_double_loop.py::test_convergent_schedule_on_a_gp_classifier_reaches_the_ep_fixed_point",
    "models/test_relaxed_ep.py::test_relaxation_targets_flipped_labels",
)


def pytest_itemcollected(item):
    """
    Mark the tests of ``OLDEST_VERSIONS_MODULES`` ``oldest_versions`` and those of
    ``SLOW_IN_THE_DEFAULT_RUN`` ``slow`` (before ``-m`` selects).
    """
    module = item.path.relative_to(Path(__file__).parent).as_posix()
    if module in OLDEST_VERSIONS_MODULES and f"{module}::{item.originalname}" not in OLDEST_VERSIONS_EXCLUDED:
        item.add_marker(pytest.mark.oldest_versions)
    if {f"{module}::{item.originalname}", f"{module}::{item.name}"} & set(SLOW_IN_THE_DEFAULT_RUN):
        item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``benchmark_data`` are skipped when the shared benchmark datasets are not found."""
    marked = [item for item in items if "benchmark_data" in item.keywords]
    if not marked:
        return
    try:
        benchmark_dir()
    except ValueError as error:
        skip = pytest.mark.skip(reason=f"shared benchmark datasets not found: {error}")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tf.random.set_seed(0)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def assert_gradients_match_finite_differences():
    """
    Check ``grads`` (autodiff at a converged state) against central differences of
    ``converged_evidence()`` (which re-converges EP) in every entry of every variable:
    |g - fd| ≤ rtol · max(|fd|, floor). With h = 1e-5 the difference's own error is O(h²) ≈ 1e-10.
    """

    def check(variables, grads, converged_evidence, h=1e-5, rtol=1e-5, floor=1e-3):
        for var, grad in zip(variables, grads):
            base = var.numpy()
            for j in range(base.size):
                step = np.zeros(base.size)
                step[j] = h
                var.assign(base + step.reshape(base.shape))
                up = converged_evidence()
                var.assign(base - step.reshape(base.shape))
                down = converged_evidence()
                var.assign(base)
                fd = (up - down) / (2 * h)
                g = grad.numpy().ravel()[j]
                assert abs(g - fd) <= rtol * max(abs(fd), floor), (var.name, j, g, fd)

    return check
