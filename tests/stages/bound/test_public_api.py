"""The package's public names: ``from stages.bound import count_bound, GaussianDP, ...`` works, without
torch, jax, Hydra or dp_accounting being imported (dp_accounting loads when a DP-SGD profile is used)."""
from __future__ import annotations

import subprocess
import sys

import stages.bound as bound
from stages.bound import accountants, best, floor, prior_work, profiles, tails, theorems

CONTRACT = {
    profiles: ["PrivacyProfile", "PureDP", "ApproxDP", "GaussianDP", "ComposedGaussian", "DPSGD", "PrivacyLossProfile",
               "GAMES", "for_game", "replace_one_from_add_remove"],
    accountants: ["from_dp_event", "from_delta", "from_opacus", "DpEventProfile", "DeltaTable", "DeltaCurve",
                  "ReplaceOneByGroupPrivacy"],
    tails: ["PoissonBinomial", "poisson_binomial_pmf", "poisson_binomial_sf_all", "poisson_binomial_tail"],
    theorems: ["Priors", "beta", "pure_dp_tail", "pure_dp_count_bound", "tail_bound", "tail_bound_at", "count_bound",
               "expected_tail", "expected_count_bound", "success_bound", "advantage_bound", "eps_protect",
               "calibrate_noise"],
    prior_work: list(prior_work.__all__),
    best: ["best_bound", "BestBound", "SOURCES"],
    floor: ["FLOOR_MECHANISM", "floor_counts", "floor_mechanism", "floor_success"],
}


def test_every_contract_name_is_re_exported_as_the_same_object():
    for module, names in CONTRACT.items():
        for name in names:
            assert getattr(bound, name) is getattr(module, name), name
            assert name in bound.__all__, name
    assert sorted(set(bound.__all__)) == sorted(bound.__all__)  # no duplicates
    assert all(hasattr(bound, name) for name in bound.__all__)


def test_import_is_light_and_has_no_cycles():
    """A fresh interpreter imports the package, a bound box and the names, and loads nothing heavy."""
    code = (
        "import sys\n"
        "import stages.bound.one_run, stages.bound.comparator, stages.bound.expected, stages.bound.pure_dp\n"
        "from stages.bound import count_bound, GaussianDP, DPSGD, best_bound, success_bound\n"
        "assert success_bound(GaussianDP(1.0), 0.5) > 0.69\n"
        "heavy = [m for m in ('torch', 'jax', 'hydra', 'omegaconf', 'transformers', 'opacus', 'pgmpy', 'dp_accounting')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
