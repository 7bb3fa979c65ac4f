"""DP-SGD trials side by side (issue 24): R trials trained as one stacked computation equal R trainings alone.

Tolerance: trial r of a stack runs exactly trial r's own computation (its canaries, Poisson batches, clipping
factors, noise and dropout masks, from its own seeds, drawn in the same order), except that its matmuls are
batched over trials (and over the padding of a short Poisson batch), which changes the order of float32
additions: a step differs by float round-off (~1e-7 relative), which training compounds. The tests below
(tiny models, lr 1, a few steps) hold releases to ATOL = 1e-4 on log-probabilities of magnitude ~10 and the
trained parameters to the same; measured differences are 1e-6 to 1e-5. Non-private training at a large
learning rate is chaotic and amplifies round-off (clipping=none, lr 1, body: 1e-7 after one step, 1e-2 after
nine), so the clipping=none case runs at lr 0.1.
"""
from __future__ import annotations

import numpy as np
import pytest

from stages.mechanism.dpsgd import DPSGDFineTuning

ATOL = 1e-4


def _trials(mech, count=3):
    xs = [np.random.default_rng(i).integers(0, mech.domain_size, mech.n_targets) for i in range(count)]
    return xs, [np.random.default_rng(100 + i) for i in range(count)], [np.random.default_rng(100 + i) for i in range(count)]


@pytest.mark.parametrize("trainable", ["rows", "body"])
@pytest.mark.parametrize("clipping,batch_size,learning_rate", [("fast", None, 1.0), ("fast", 7, 1.0), ("none", 7, 0.1)])
def test_side_by_side_equals_one_after_another(tiny_any, trainable, clipping, batch_size, learning_rate):
    """Same seeds, same releases and trained weights (full batch, and Poisson batches of different sizes)."""
    # noise_multiplier given: no calibration (the PLD accountant takes seconds at sample rates below 1)
    mech = DPSGDFineTuning(tiny_any, epsilon=None, noise_multiplier=1.0, epochs=2, n_targets=20, batch_size=batch_size,
                           clipping=clipping, trainable=trainable, learning_rate=learning_rate)
    xs, rngs, rngs_again = _trials(mech)
    alone, rows_alone = [], []
    for x, rng in zip(xs, rngs):
        alone.append(mech.release(x, rng))
        rows_alone.append(mech.last_rows)
    together = mech.release_side_by_side(xs, rngs_again)
    assert len(together) == 3 and all(a.shape == (20, 10) for a in together)
    for a, b in zip(alone, together):
        np.testing.assert_allclose(b, a, rtol=0, atol=ATOL)
        assert np.array_equal(a.argmax(1), b.argmax(1))
    assert set(mech.last_rows) == set(rows_alone[-1])  # the last trial's trained weights, as release() keeps them
    for name, value in rows_alone[-1].items():
        np.testing.assert_allclose(mech.last_rows[name], value, rtol=0, atol=ATOL, err_msg=name)
    assert not np.allclose(together[0], together[1])  # the trials differ: their seeds and canaries are their own


def test_dropout_replay_draws_what_torch_draws_alone():
    """On the CPU a trial's replayed dropout (nn.Dropout and attention dropout) is torch's own, bit for bit, and
    padding rows are left alone."""
    import torch
    import torch.nn.functional as F

    from stages.mechanism.dpsgd import _dropout_replay

    counts, rows = [3, 1], 3
    x = torch.randn(2 * rows, 1, 8)
    q, k, v = (torch.randn(2 * rows, 2, 1, 4) for _ in range(3))
    replay = _dropout_replay([torch.Generator().manual_seed(5), torch.Generator().manual_seed(9)], torch.device("cpu"))
    replay.set_batch(counts, rows)
    with replay:
        dropped = F.dropout(x, 0.1, True)
        attention = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
        kept = F.dropout(x, 0.1, False)
    assert torch.equal(kept, x)
    for r, (count, seed) in enumerate(zip(counts, (5, 9))):
        rows_r = slice(r * rows, r * rows + count)
        torch.manual_seed(seed)
        assert torch.equal(dropped[rows_r], F.dropout(x[rows_r], 0.1, True))
        assert torch.equal(attention[rows_r], F.scaled_dot_product_attention(q[rows_r], k[rows_r], v[rows_r], dropout_p=0.1))
    assert torch.equal(dropped[rows + 1:], x[rows + 1:])  # trial 1's padding


def test_how_many_trials_go_together(tiny, monkeypatch):
    """All of them by default, at most side_by_side, as many as the memory estimate lets, one for opacus or off."""
    import stages.mechanism.dpsgd as dpsgd

    mech = DPSGDFineTuning(tiny, epsilon=10.0, epochs=1, n_targets=20, trainable="body")
    assert mech.side_by_side == "auto" and mech.trials_side_by_side(10) == 10 and mech.trials_side_by_side(1) == 1
    assert DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20, side_by_side=4).trials_side_by_side(10) == 4
    for off in (False, 1, 0, "off"):
        assert DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20, side_by_side=off).trials_side_by_side(10) == 1
    assert DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20, clipping="hooks").trials_side_by_side(10) == 1
    each = mech.side_by_side_bytes()
    rows = DPSGDFineTuning(tiny, epsilon=10.0, epochs=1, n_targets=20, trainable="rows").side_by_side_bytes()
    assert 0 < rows < each  # a body copy per trial costs more than its new rows
    budget = each * 3.5 / dpsgd.SIDE_BY_SIDE_MEMORY_FRACTION  # room for 3 trials
    monkeypatch.setattr(dpsgd, "_free_memory", lambda device: int(budget))
    assert mech.trials_side_by_side(10) == 3
    monkeypatch.setattr(dpsgd, "_free_memory", lambda device: 0)
    assert mech.trials_side_by_side(10) == 1


@pytest.mark.parametrize("value,message", [
    ("sometimes", r"^side_by_side must be auto, false or a number of trials"),
    (-2, r"^side_by_side must be auto, false or a number of trials"),
])
def test_bad_side_by_side_is_one_sentence(tiny, value, message):
    with pytest.raises(ValueError, match=message) as err:
        DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20, side_by_side=value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"^side_by_side=3 needs clipping fast or none"):
        DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20, clipping="ghost", side_by_side=3)


def test_release_key_does_not_depend_on_side_by_side(tiny):
    """A training cached side by side is the trial's training: the release stage's key leaves the setting out."""
    mech = DPSGDFineTuning(tiny, epsilon=10.0, n_targets=20)
    config = {"epsilon": 10.0, "n_targets": 20, "model": {"name": "tiny"}}
    x = np.zeros(20, dtype=int)
    keys = {str(mech.release_stage({**config, "side_by_side": value}, x, 0, 1)) for value in ("auto", False, 4)}
    assert len(keys) == 1 and keys == {str(mech.release_stage(config, x, 0, 1))}


def test_game_trains_side_by_side_caches_each_trial_and_equals_the_sequential_game(compose_config, tmp_path, monkeypatch):
    """The LLM game (PII prior, Model Attack, tiny model, trainable body) side by side and one trial after another:
    the same metrics; the release stage holds one entry per trial, which a later game reuses without training."""
    from pipeline.cache import StageCache
    from pipeline.game import compute_metrics, trials_stage_config

    common = ("prior=pii", "mechanism=dpsgd", "attack=model_attack", "model=tiny", "trials=3", "prior.n_contexts=3",
              "prior.max_candidates=12", "prior.progress=false", "prior.n_targets=20", "mechanism.trainable=body",
              "mechanism.epochs=2")
    calls = []
    original = DPSGDFineTuning.release_side_by_side

    def spy(self, Xs, rngs):
        calls.append(len(Xs))
        return original(self, Xs, rngs)

    monkeypatch.setattr(DPSGDFineTuning, "release_side_by_side", spy)
    together_cfg = compose_config(*common)
    together_cache = StageCache(tmp_path / "together")
    together, _, boxes = compute_metrics(together_cfg, together_cache)
    assert calls == [3]
    releases = sorted(p for p in (tmp_path / "together" / "dpsgd_release").iterdir() if p.is_dir())
    assert len(releases) == 3  # one entry per trial
    assert "side_by_side" not in trials_stage_config(together_cfg, 0, 3, boxes)["mechanism"]  # default: old keys hold

    alone, _, _ = compute_metrics(compose_config(*common, "mechanism.side_by_side=false"), StageCache(tmp_path / "alone"))
    assert calls == [3]  # no side-by-side call
    for label, attack in together["attacks"].items():
        assert attack["successes"] == alone["attacks"][label]["successes"], label
    assert together["prior_successes"] == alone["prior_successes"] and together["bound"] == alone["bound"]

    # a later game (e.g. another bound) reuses the three cached trainings and trains nothing
    def refuse(*args, **kwargs):
        raise AssertionError("a cached training was trained again")

    monkeypatch.setattr(DPSGDFineTuning, "release", refuse)
    monkeypatch.setattr(DPSGDFineTuning, "release_side_by_side", refuse)
    again_cache = StageCache(tmp_path / "together")
    again, _, _ = compute_metrics(compose_config(*common, "confidences=[0.5]"), again_cache)
    assert not any(stage == "dpsgd_release" for stage, _ in again_cache.computed)
    assert again["attacks"]["model_attack"]["successes"] == together["attacks"]["model_attack"]["successes"]
