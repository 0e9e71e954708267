"""
Optimisers for EP state (batch EP, the minibatch site refresh), the SEP paper's batch learning-rate
rule and the Bayesian SVM's coordinate ascent.
"""

from .ep import EP, EPConvergenceWarning, EPResult
from .hinge_cavi import HingeCAVI
from .minibatch_ep import MinibatchEP
from .sign_adaptive import SignAdaptive

__all__ = ["EP", "EPResult", "EPConvergenceWarning", "HingeCAVI", "MinibatchEP", "SignAdaptive"]
