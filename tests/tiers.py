"""The fast tier's samples of the long parametrized tests (tests/conftest.py applies them; docs/pages/testing.md)."""

#: Parametrized tests sampled in the fast tier: function node id -> how many of its cases the fast tier runs (a sample
#: seeded by the node id, the same every run); the slow tier runs the others. Sizes from a timed run of the whole
#: suite (`pytest -m "slow or not slow" --durations=0`, 2026-11-28): about 4 s of each function in the fast tier.
#: tests/test_tiers.py checks that every entry names a collected parametrized test. A case its test marks
#: `@pytest.mark.slow` (one of more than a few seconds alone) is never in the sample: it is drawn among the others.
SAMPLED = {
    "tests/pipeline/experiments/test_experiments.py::test_experiment_runs_shrunk": 1,
    "tests/pipeline/experiments/test_llm_experiment.py::test_llm_canaries_sweep_plays_both_games_and_reuses_its_trainings": 1,
    "tests/pipeline/test_compose_all_options.py::test_option_plays_a_game": 7,
    "tests/stages/bound/test_designated_run.py::test_never_below_the_exact_worst_case": 1,
    "tests/stages/bound/test_designated_run.py::test_states_below_j_from_are_one_sum_and_the_bound_stays_above_the_exact_worst_case": 1,
    "tests/stages/bound/test_envelope.py::test_closed_form_equals_the_lp_over_every_line_and_is_never_below_it": 1,
    "tests/stages/bound/test_expected_whole_prior.py::test_a_prior_per_trial_never_below_a_certified_mechanisms_mixture": 1,
    "tests/stages/bound/test_floor.py::test_no_count_bound_below_the_floor": 1,
    "tests/stages/bound/test_floor.py::test_randomized_response_meets_any_profile_and_is_nearly_the_largest": 1,
    "tests/stages/bound/test_marginal_run.py::test_never_below_the_exact_worst_case": 3,
    "tests/stages/bound/test_marginal_run.py::test_never_below_the_exact_worst_case_on_fresh_priors": 3,
    "tests/stages/bound/test_mmc_vs_oracle.py::test_mmc_holds_for_priors_with_max_at_most_one_over_k": 27,
    "tests/stages/bound/test_mmc_vs_oracle.py::test_mmc_never_below_the_exact_worst_case": 42,
    "tests/stages/bound/test_mmc_vs_oracle.py::test_mmc_with_abstentions_never_below_the_adaptive_worst_case": 25,
    "tests/stages/bound/test_prior_run.py::test_never_above_mmc_on_uniform_priors": 4,
    "tests/stages/bound/test_priors.py::test_grouped_and_expanded_priors_give_the_same_bounds": 14,
    "tests/stages/bound/test_profiles.py::test_dpsgd_delta_upper_valid_and_close": 1,
    "tests/stages/bound/test_profiles.py::test_dpsgd_matches_dp_accounting": 1,
    "tests/stages/bound/test_theorems.py::test_count_bound_consistent": 2,
    "tests/stages/bound/test_theorems.py::test_count_bound_consistent_large_n": 1,
    "tests/stages/bound/test_theorems.py::test_tail_bound_not_above_dense_grid": 1,
    "tests/stages/bound/test_whole_prior.py::test_the_default_is_never_above_the_p_only_bound": 4,
    "tests/stages/bound/test_whole_prior_vs_oracle.py::test_one_target_equals_the_exact_lp": 12,
    "tests/stages/bound/test_whole_prior_vs_oracle.py::test_two_targets_never_below_the_exact_lp": 19,
    "tests/stages/prior/test_datasets.py::test_every_tabular_experiment_runs_on_the_paper_table": 1,
}
