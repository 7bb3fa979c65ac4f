"""DP-SGD on new-token canaries: calibration, token layout, exact per-example clipping, the release."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stages.attack.model_attack import ModelAttack
from stages.bound.profiles import DPSGD
from stages.mechanism.dpsgd import DPSGDFineTuning, calibrate_noise_multiplier
from stages.metric import Exact
from stages.prior.uniform import UniformPrior
from stages.prior.zipf import ZipfPrior


@pytest.mark.parametrize("epsilon,sample_rate,steps", [(1.0, 1.0, 10), (10.0, 1.0, 3), (2.0, 0.5, 1)])
def test_calibrated_noise_meets_the_epsilon_target_and_is_the_smallest(epsilon, sample_rate, steps):
    sigma = calibrate_noise_multiplier(epsilon, 1e-5, sample_rate, steps)
    assert DPSGD(sigma, sample_rate, steps, "replace_one").epsilon(1e-5) <= epsilon
    assert DPSGD(sigma * 0.99, sample_rate, steps, "replace_one").epsilon(1e-5) > epsilon
    if sample_rate == 1.0:  # full batch: replace-one needs exactly twice the add/remove noise
        add_remove = calibrate_noise_multiplier(epsilon, 1e-5, sample_rate, steps, neighboring="add_remove")
        assert sigma == pytest.approx(2 * add_remove, rel=1e-6)


def test_mechanism_profile_is_the_calibrated_one_and_records_both_epsilons(tiny):
    mech = DPSGDFineTuning(tiny, epsilon=3.0, epochs=4, n_targets=100)
    assert mech.sample_rate == 1.0 and mech.steps == 4 and mech.batch_size == 100
    assert DPSGDFineTuning(tiny, epsilon=None, noise_multiplier=1.0, epochs=3, batch_size=30).steps == 3 * 4
    assert mech.profile.epsilon(1e-5) <= 3.0
    privacy = mech.privacy()
    assert privacy["epsilon_replace_one"] <= 3.0
    assert privacy["epsilon_add_remove"] < privacy["epsilon_replace_one"]
    assert privacy["epsilon_opacus_add_remove"] is not None and privacy["epsilon_opacus_add_remove"] < 3.0


@pytest.mark.parametrize("kwargs,message", [
    ({"epsilon": 0.0}, r"^epsilon must be"), ({"epsilon": -1.0}, r"^epsilon must be"),
    ({"clip_norm": 0.0}, r"^clip_norm must be"), ({"learning_rate": -0.1}, r"^learning_rate must be"),
    ({"epochs": 0}, r"^epochs must be"), ({"clipping": "magic"}, r"^clipping must be one of"),
    ({"batch_size": 101}, r"^batch_size must be at most n_targets"),
    ({"epsilon": 1.0, "noise_multiplier": 1.0}, r"^give either epsilon or noise_multiplier"),
])
def test_bad_settings_fail_with_one_sentence(tiny, kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        DPSGDFineTuning(tiny, **kwargs)
    assert "\n" not in str(err.value)


def test_canary_tokens_are_fresh_and_only_their_rows_change(tiny):
    import torch

    mech = DPSGDFineTuning(tiny, epsilon=10.0, epochs=2, n_targets=20)
    model, _ = tiny.load()
    vocab = model.get_output_embeddings().weight.shape[0]
    ids = mech.token_ids()
    every = np.concatenate([ids["prefix"], ids["secrets"].reshape(-1)])
    assert every.min() >= vocab and len(np.unique(every)) == 20 * 11 == mech.n_new_tokens
    before = {k: v.clone() for k, v in model.state_dict().items()}
    module = mech.build(seed=3)
    init = module.new_in.weight.detach().clone()
    assert torch.equal(init, mech.build(seed=3).new_in.weight) and not torch.equal(init, mech.build(seed=4).new_in.weight)
    trainable = {name for name, p in module.named_parameters() if p.requires_grad}
    assert trainable == {"new_in.weight", "new_out.weight"}
    mech.train(module, np.zeros(20, dtype=int), seed=3)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "the pretrained weights never change"
    assert not torch.equal(init, module.new_in.weight)


def test_fast_clipping_equals_per_example_autograd(tiny):
    """The closed-form per-example gradients and their clipped sum match one autograd pass per example."""
    import torch

    mech = DPSGDFineTuning(tiny, epsilon=10.0, clip_norm=0.05, n_targets=12)
    module = mech.build(seed=0)
    module.eval()  # no dropout, so the per-example passes see the same function
    prefix = torch.arange(12)
    secret = torch.as_tensor(mech.secret_rows()[np.arange(12), np.arange(12) % 10])
    old_vocab = module.old_head.weight.shape[0]
    expected = [torch.zeros_like(module.new_in.weight), torch.zeros_like(module.new_out.weight)]
    for i in range(12):
        loss = torch.nn.functional.cross_entropy(module(prefix[i:i + 1]), secret[i:i + 1] + old_vocab)
        grads = torch.autograd.grad(loss, [module.new_in.weight, module.new_out.weight])
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        factor = min(1.0, 0.05 / (float(norm) + 1e-6))
        for total, g in zip(expected, grads):
            total += factor * g
    got = mech._clipped_sum(module, prefix, secret, old_vocab)
    for g, e in zip(got, expected):
        assert torch.allclose(g, e, atol=1e-6, rtol=1e-4)


def test_without_noise_the_model_attack_recovers_every_canary(tiny):
    prior = ZipfPrior(n_targets=30, domain_size=10, exponent=1.0, permutation_seed=0)
    mech = DPSGDFineTuning(tiny, epsilon=None, noise_multiplier=1e-6, clip_norm=10.0, learning_rate=10.0, epochs=30,
                           n_targets=30, batch_size=30)
    rng = np.random.default_rng(0)
    X = prior.sample(rng)
    a = mech.release(X, rng)
    assert a.shape == (30, 10) and np.all(a <= 0)
    attack = ModelAttack()
    assert Exact().score(X, attack.guess(a, prior, mech, Exact())).sum() == 30
    assert Exact().score(X, attack.model_only_guess(a, prior, Exact())).sum() == 30


def test_with_huge_noise_the_attack_is_no_better_than_the_prior(tiny):
    prior = UniformPrior(n_targets=100, domain_size=10)
    mech = DPSGDFineTuning(tiny, epsilon=None, noise_multiplier=1e4, clip_norm=1.0, learning_rate=1.0, epochs=2)
    successes = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = prior.sample(rng)
        successes.append(int(Exact().score(X, ModelAttack().guess(mech.release(X, rng), prior, mech, Exact())).sum()))
    # 300 guesses at chance 1/10: more than the 99.99% binomial quantile would mean the release leaks
    assert sum(successes) <= stats.binom.ppf(0.9999, 300, 0.1)


@pytest.mark.parametrize("clipping", ["ghost", "hooks"])
def test_opacus_engines_train_the_same_rows(tiny, clipping):
    import torch

    mech = DPSGDFineTuning(tiny, epsilon=None, noise_multiplier=1e-6, clip_norm=10.0, learning_rate=10.0, epochs=30,
                           n_targets=10, batch_size=10, clipping=clipping)
    X = np.arange(10) % 10
    a = mech.release(X, np.random.default_rng(0))
    assert np.array_equal(np.argmax(a, axis=1), X), "noiseless opacus DP-SGD memorises every canary too"
    model, _ = tiny.load()
    assert not any(p.requires_grad for p in model.parameters())
    assert torch.is_tensor(model.get_input_embeddings().weight)
