"""Synthetic data generators (seeded): classification sets and the spike-and-slab regression problem."""

import numpy as np


def two_dimensional(n: int, seed: int = 0, noise: float = 0.3):
    """
    A non-linear 2-D binary problem: y = 1[sin(2 x₁) + x₂/2 + noise·ε > 0], x ~ N(0, I).

    :return: X [n, 2], Y [n, 1] in {0, 1}.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    latent = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] + noise * rng.normal(size=n)
    return X, (latent > 0).astype(np.float64)[:, None]


def noisy_mixture(n_per_class: int = 200, flip_rate: float = 0.1, seed: int = 0, separation: float = 3.0):
    """
    The relaxed-EP paper's synthetic data (:cite:t:`QiGuo2012`, §6.2: one class a Gaussian, the other a
    two-component Gaussian mixture; the paper gives neither means nor covariances, these are ours):
    class 1 ~ N(0, I), class 0 ~ ½N((-s, 0), I) + ½N((s, 0), I); a fraction ``flip_rate`` of the labels is flipped.

    :return: X [2 n_per_class, 2], Y [2 n_per_class, 1] in {0, 1} (flipped), and the clean labels.
    """
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n_per_class, 2))
    centres = np.where(rng.random(n_per_class) < 0.5, -separation, separation)
    neg = rng.normal(size=(n_per_class, 2)) + np.stack([centres, np.zeros(n_per_class)], axis=1)
    X = np.concatenate([pos, neg])
    clean = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])[:, None]
    flip = rng.permutation(2 * n_per_class)[: int(round(flip_rate * 2 * n_per_class))]
    noisy = clean.copy()
    noisy[flip] = 1.0 - noisy[flip]
    return X, noisy, clean


def spike_slab_problem(
    seed: int,
    n_train: int = 10,
    n_test: int = 1000,
    d: int = 25,
    noise_std: float = 0.005,
    prior_inclusion: float = 0.2,
    slab_variance: float = 1.0,
    x_dist: str = "surface",
):
    """
    One data set of the spike-and-slab paper's experiment (:cite:t:`HernandezLobato2011`, §4): w drawn
    from the prior of their Eq. (1) (each w_i ~ N(0, v_s) with probability p_s, else 0), inputs
    "uniformly sampled from the unit hyper-sphere", read as its surface (``x_dist="surface"``, our
    default) or the ball (``"ball"``), y = Xw + N(0, σ²) noise.

    :return: (X_train [n, d], y_train [n, 1], X_test, y_test, w [d]).
    """
    if x_dist not in ("surface", "ball"):
        raise ValueError(f"x_dist must be 'surface' or 'ball'; got {x_dist!r}")
    rng = np.random.default_rng(seed)
    w = np.where(rng.random(d) < prior_inclusion, rng.normal(0.0, np.sqrt(slab_variance), d), 0.0)

    def inputs(n):
        g = rng.normal(size=(n, d))
        x = g / np.linalg.norm(g, axis=1, keepdims=True)
        return x * rng.random((n, 1)) ** (1.0 / d) if x_dist == "ball" else x

    X, Xt = inputs(n_train), inputs(n_test)
    y = X @ w + noise_std * rng.normal(size=n_train)
    yt = Xt @ w + noise_std * rng.normal(size=n_test)
    return X, y[:, None], Xt, yt[:, None], w
