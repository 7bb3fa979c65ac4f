"""DP-SGD on new-token canaries: calibration, token layout, exact per-example clipping (rows; rows + body), the release."""
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
    ({"trainable": "all"}, r"^trainable must be one of \['rows', 'body'\]"),
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


# -- trainable: body (the new rows plus the transformer body) -----------------------------------------

def _per_example_grads(module, prefix, secret):
    """One autograd backward per example over every trained parameter (the reference for clipping=fast)."""
    import torch

    old_vocab = module.old_head.weight.shape[0]
    params = module.trained_parameters()
    out = []
    for i in range(len(prefix)):
        loss = torch.nn.functional.cross_entropy(module(prefix[i:i + 1]), secret[i:i + 1] + old_vocab)
        out.append([g.detach() for g in torch.autograd.grad(loss, params)])
    return out


def test_body_trains_every_body_parameter_but_the_embedding_tables(tiny_any):
    from torch import nn

    mech = DPSGDFineTuning(tiny_any, epsilon=10.0, n_targets=12, trainable="body")
    module = mech.build(seed=0)
    model, _ = tiny_any.load()
    embedding_params = {id(p) for m in model.base_model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    trained = {id(p) for p in module.trained_parameters()}
    assert trained == {id(p) for p in module.parameters() if p.requires_grad}
    body = [p for p in module.body.parameters()]
    assert all(id(p) in trained for p in body if id(p) not in embedding_params)
    assert all(id(p) in embedding_params for p in body if id(p) not in trained), "the body is a copy but its tables"
    assert module.old_head.weight.data_ptr() == model.get_output_embeddings().weight.data_ptr()
    assert len(module.trained_parameters()) > 2 + 8


def test_body_fast_clipping_equals_per_example_autograd(tiny_any):
    """Closed-form clipped sum over the rows and the whole body = one backward per example, clip, sum."""
    import torch

    n = 12
    mech = DPSGDFineTuning(tiny_any, epsilon=10.0, n_targets=n, trainable="body")
    module = mech.build(seed=0)
    module.eval()  # no dropout, so the per-example passes see the same function
    prefix = torch.arange(n)
    secret = torch.as_tensor(mech.secret_rows()[np.arange(n), np.arange(n) % 10])
    grads = _per_example_grads(module, prefix, secret)
    norms = np.array([float(torch.sqrt(sum((g.double() ** 2).sum() for g in gs))) for gs in grads])
    clip = float(np.median(norms))  # half of the examples are clipped, half are not
    assert (norms < clip).sum() >= 4 and (norms > clip).sum() >= 4
    expected = [sum(min(1.0, clip / (norms[i] + 1e-6)) * grads[i][k].double() for i in range(n))
                for k in range(len(grads[0]))]
    clipped = DPSGDFineTuning(tiny_any, epsilon=10.0, n_targets=n, trainable="body", clip_norm=clip)
    got = clipped._clipped_sum(module, prefix, secret, module.old_head.weight.shape[0])
    assert len(got) == len(expected) == len(module.trained_parameters())
    total = float(torch.sqrt(sum((e ** 2).sum() for e in expected)))
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        error, size = float(torch.linalg.norm(g.double() - e)), float(torch.linalg.norm(e))
        # one-token attention gives q and k a zero gradient (autograd: rounding noise), hence the total's share
        assert error <= 1e-5 * (size if size > 1e-3 * total else total)
    assert float(torch.sqrt(sum((g.double() ** 2).sum() for g in got))) == pytest.approx(total, rel=1e-5)


@pytest.mark.parametrize("clipping", ["fast", "none"])
def test_body_training_moves_the_body_and_never_the_embeddings_or_the_loaded_model(tiny_any, clipping):
    import torch
    from torch import nn

    model, _ = tiny_any.load()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    mech = DPSGDFineTuning(tiny_any, epsilon=10.0, epochs=2, n_targets=20, trainable="body", clipping=clipping)
    module = mech.build(seed=1)
    start = {name: p.detach().clone() for name, p in module.body_parameters()}
    tables = {name: p.detach().clone() for name, p in module.body.named_parameters()
              if isinstance(module.body.get_submodule(name.rsplit(".", 1)[0]), nn.Embedding)}
    assert tables, "the old vocabulary's table (and GPT-2's positions) are in the body"
    mech.train(module, np.arange(20) % 10, seed=1)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "the loaded model never changes"
    for name, p in module.body.named_parameters():
        if name in tables:
            assert torch.equal(p, tables[name]), f"{name} is frozen"
    moved = [name for name, p in module.body_parameters() if not torch.equal(p, start[name])]
    if clipping == "fast":  # the noise reaches every trained parameter
        assert len(moved) == len(start)
    else:  # plain SGD moves everything that has a gradient (one-token attention gives q and k none)
        assert any("mlp" in name for name in moved) and any("norm" in name or "ln_" in name for name in moved)


@pytest.mark.parametrize("engine", ["hooks", "ghost"])
def test_body_fast_matches_opacus_after_one_step(tiny_any, engine):
    """Noiseless, one full-batch step: our closed-form update of every body weight equals opacus's (hooks, ghost)."""
    import torch
    from transformers.pytorch_utils import Conv1D

    updates, conv1d = {}, set()
    for clipping in ("fast", engine):
        mech = DPSGDFineTuning(tiny_any, epsilon=None, noise_multiplier=1e-9, clip_norm=0.05, learning_rate=1.0,
                               epochs=1, n_targets=10, batch_size=10, clipping=clipping, trainable="body")
        module = mech.build(seed=2)
        for name, m in module.body.named_modules():
            if isinstance(m, torch.nn.Dropout):  # GPT-2's dropout off; opacus needs train mode for its hooks
                m.p = 0.0
            if isinstance(m, Conv1D):
                conv1d.add(f"body.{name}.weight")
        start = {name: p.detach().clone() for name, p in module.body_parameters()}
        mech.train(module, np.arange(10) % 10, seed=2, steps=1)
        updates[clipping] = {name: p.detach() - start[name] for name, p in module.body_parameters()}
    assert list(updates["fast"]) == list(updates[engine])
    assert bool(conv1d) == (tiny_any.architecture == "gpt2")
    total = float(torch.sqrt(sum((d ** 2).sum() for d in updates[engine].values())))
    for name, d in updates["fast"].items():
        e = updates[engine][name]
        e = e.T if name in conv1d else e  # opacus saw GPT-2's Conv1D as nn.Linear (weight transposed)
        error, size = float(torch.linalg.norm(d - e)), float(torch.linalg.norm(e))
        assert error <= 1e-4 * (size if size > 1e-3 * total else total), name


def test_body_without_noise_recovers_every_canary(tiny):
    prior = ZipfPrior(n_targets=30, domain_size=10, exponent=1.0, permutation_seed=0)
    mech = DPSGDFineTuning(tiny, epsilon=None, noise_multiplier=1e-6, clip_norm=10.0, learning_rate=3.0, epochs=30,
                           n_targets=30, batch_size=30, trainable="body")
    rng = np.random.default_rng(0)
    X = prior.sample(rng)
    a = mech.release(X, rng)
    assert Exact().score(X, ModelAttack().model_only_guess(a, prior, Exact())).sum() == 30
    assert any(k.startswith("body.") for k in mech.last_rows)
    assert mech.params()["trainable"] == "body"


def test_fast_body_refuses_a_layer_it_has_no_closed_form_for():
    import torch

    from stages.model.tiny import TinyModel

    class ScaledNorm(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * self.scale

    class OddTiny(TinyModel):
        def _build(self):
            model, tokenizer = super()._build()
            model.model.norm = ScaledNorm(self.hidden)
            return model, tokenizer

    odd = OddTiny(device="cpu")
    with pytest.raises(ValueError, match=r"^trainable=body with clipping=fast supports .* body\.norm is a ScaledNorm") as err:
        DPSGDFineTuning(odd, epsilon=10.0, n_targets=10, trainable="body").build(seed=0)
    assert "\n" not in str(err.value)
    DPSGDFineTuning(odd, epsilon=10.0, n_targets=10, trainable="rows").build(seed=0)  # frozen body: fine


def test_config_models_have_the_stated_shapes_without_building_them():
    """The benchmark's random full-size models (stages.model.from_config): the configs only, nothing is built."""
    from stages.model.from_config import ConfigModel

    smol = ConfigModel("smollm2-config").config()
    assert (smol.hidden_size, smol.intermediate_size, smol.num_hidden_layers, smol.num_attention_heads,
            smol.num_key_value_heads, smol.head_dim, smol.vocab_size, smol.max_position_embeddings) == \
        (576, 1536, 30, 9, 3, 64, 49152, 8192)
    assert smol.rms_norm_eps == 1e-5 and smol.tie_word_embeddings and smol.rope_parameters["rope_theta"] == 100000.0
    gpt2 = ConfigModel("gpt2-config").config()
    assert (gpt2.n_embd, gpt2.n_layer, gpt2.vocab_size) == (768, 12, 50257)
    with pytest.raises(ValueError, match=r"^shape must be one of \['gpt2-config', 'smollm2-config'\], got 'gpt3'\.$"):
        ConfigModel("gpt3")
