"""The math of the paper: privacy profiles, Poisson-binomial tails, the theorems and prior-work bounds.

Uses numpy, scipy and dp_accounting only (dp_accounting is imported when a DP-SGD profile is first
evaluated), so it can be imported without torch, jax or Hydra. The public names live here, as in
riskcal and dp_accounting:

```python
from stages.bound import count_bound, success_bound, best_bound, GaussianDP, DPSGD
```

Every public function refuses an argument of a shape it does not take with one sentence (an ``ArgumentError``,
a ValueError) naming the argument, the shape received and the shapes taken: the targets' prior successes ``p`` are
one number per target (1-D), each target's whole prior goes to ``distributions=``.

Any accountant's guarantee becomes a profile (``accountants``): ``from_dp_event`` (a dp_accounting
``DpEvent``), ``from_delta`` (a delta(eps) function or a table of (eps, delta) pairs), ``from_opacus``
(an opacus accountant's history).

The submodules (``profiles``, ``accountants``, ``tails``, ``theorems``, ``prior_work``, ``best``, ``floor``) hold the same
objects; ``registry`` holds every theorem as one object (its name, numbers, ``applies`` and operations) and the minimum
over those that apply; the bound boxes of the pipeline (``one_run``, ``pure_dp``, ``expected``, ``comparator``, and
their shared ``box``) are not re-exported, they are imported by path.
"""
from ._validate import ArgumentError
from .accountants import *  # noqa: F403 (any accountant as a profile: accountants.__all__)
from .accountants import __all__ as _accountant_names
from .best import SOURCES, BestBound, best_bound
from .floor import FLOOR_MECHANISM, floor_counts, floor_mechanism, floor_success
from .prior_work import *  # noqa: F403 (the prior-work bounds: prior_work.__all__)
from .prior_work import __all__ as _prior_work_names
from .profiles import (
    DPSGD,
    GAMES,
    ApproxDP,
    ComposedGaussian,
    GaussianDP,
    PrivacyLossProfile,
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
    "ArgumentError",
    # profiles
    "PrivacyProfile",
    "PureDP",
    "ApproxDP",
    "GaussianDP",
    "ComposedGaussian",
    "DPSGD",
    "PrivacyLossProfile",
    "GAMES",
    "for_game",
    "replace_one_from_add_remove",
    # any accountant as a profile
    *_accountant_names,
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
    # the bracket's lower end: a real mechanism's counts (floor)
    "FLOOR_MECHANISM",
    "floor_counts",
    "floor_mechanism",
    "floor_success",
    "SOURCES",
    # prior work
    *_prior_work_names,
]
