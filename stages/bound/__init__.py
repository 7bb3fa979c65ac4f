"""The math of the paper: privacy profiles, Poisson-binomial tails, the theorems and prior-work bounds.

Uses numpy, scipy and dp_accounting only (dp_accounting is imported when a DP-SGD profile is first
evaluated), so it can be imported without torch, jax or Hydra. The public names live here, as in
riskcal and dp_accounting::

    from stages.bound import count_bound, success_bound, best_bound, GaussianDP, DPSGD

The submodules (``profiles``, ``tails``, ``theorems``, ``prior_work``, ``best``) hold the same
objects; the bound boxes of the pipeline (``one_run``, ``pure_dp``, ``expected``, ``comparator``, and
their shared ``box``) are not re-exported, they are imported by path.
"""
from .best import SOURCES, BestBound, best_bound
from .prior_work import *  # noqa: F403 (the prior-work bounds: prior_work.__all__)
from .prior_work import __all__ as _prior_work_names
from .profiles import (
    DPSGD,
    GAMES,
    ApproxDP,
    ComposedGaussian,
    GaussianDP,
    PrivacyProfile,
    PureDP,
    for_game,
    replace_one_from_add_remove,
)
from .tails import PoissonBinomial, poisson_binomial_pmf, poisson_binomial_sf_all, poisson_binomial_tail
from .theorems import (
    Priors,
    advantage_bound,
    beta,
    calibrate_noise,
    count_bound,
    eps_protect,
    expected_count_bound,
    expected_tail,
    pure_dp_count_bound,
    pure_dp_tail,
    success_bound,
    tail_bound,
    tail_bound_at,
)

__all__ = [
    # profiles
    "PrivacyProfile",
    "PureDP",
    "ApproxDP",
    "GaussianDP",
    "ComposedGaussian",
    "DPSGD",
    "GAMES",
    "for_game",
    "replace_one_from_add_remove",
    # tails
    "PoissonBinomial",
    "poisson_binomial_pmf",
    "poisson_binomial_sf_all",
    "poisson_binomial_tail",
    # theorems
    "Priors",
    "beta",
    "pure_dp_tail",
    "pure_dp_count_bound",
    "tail_bound",
    "tail_bound_at",
    "count_bound",
    "expected_tail",
    "expected_count_bound",
    "success_bound",
    "advantage_bound",
    "eps_protect",
    "calibrate_noise",
    # the best of them
    "best_bound",
    "BestBound",
    "SOURCES",
    # prior work
    *_prior_work_names,
]
