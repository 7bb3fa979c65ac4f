"""The PII prior: Enron names and contexts, LM scores equal a direct log-likelihood, laws, the cached stage."""
from __future__ import annotations

import numpy as np
import pytest

from stages.prior.pii import PIIPrior, header_names, law_from_scores


def test_header_names():
    assert header_names("Arora, Harry </O=ENRON/OU=NA/CN=RECIPIENTS/CN=HARORA>") == ["Harry Arora"]
    assert header_names("Phillip K Allen") == ["Phillip Allen"]
    assert header_names("Tim Belden <Tim Belden/Enron@EnronXGate>, ROBERT BADEER") == ["Tim Belden", "Robert Badeer"]
    assert header_names("pallen@enron.com") == [] and header_names("All Enron Worldwide") == [] and header_names(None) == []


@pytest.fixture(scope="module")
def prior(tiny, data_dir):
    return PIIPrior(tiny, n_targets=7, domain_size=4, data_dir=str(data_dir), n_contexts=3, max_candidates=9,
                    batch_size=4, progress=False)  # several trie passes per context


def test_contexts_and_candidates_come_from_the_enron_sample(prior):
    assert len(prior.contexts) == 3 and len(prior.candidates) == 9
    for c in prior.contexts:
        assert c.name in prior.candidates and len(c.left.split()) >= 3 and c.source.startswith(("allen-p", "badeer-r"))


def test_scores_equal_a_direct_log_likelihood(prior, tiny):
    """Cached-context, batched, padded scoring == one full forward pass over context + candidate tokens."""
    import torch

    model, tokenizer = tiny.load()
    scores, n_tokens = prior.scores()
    assert scores.shape == (3, 9) and np.all(scores < 0)
    for c, k in [(0, 0), (1, 4), (2, 8), (2, 3)]:
        ctx = [tokenizer.bos_token_id] + tokenizer(prior.contexts[c].left, add_special_tokens=False)["input_ids"]
        cand = tokenizer(" " + prior.candidates[k], add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.as_tensor([ctx + cand])).logits[0].double()
        log_probs = torch.log_softmax(logits, dim=-1)
        direct = sum(float(log_probs[len(ctx) - 1 + t, tok]) for t, tok in enumerate(cand))
        assert scores[c, k] == pytest.approx(direct, abs=1e-4)
        assert n_tokens[k] == len(cand)


def test_laws_and_the_ten_secret_prior(prior):
    scores, n_tokens = prior.scores()
    inv_ppl = law_from_scores(scores, n_tokens, "inverse_perplexity")
    expected = np.exp(scores / n_tokens) / np.exp(scores / n_tokens).sum(axis=1, keepdims=True)
    assert np.allclose(inv_ppl, expected)
    softmax = law_from_scores(scores, n_tokens, "log_likelihood")
    assert np.allclose(softmax, np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True))
    summary = prior.law_summary()
    assert summary["p10"] <= summary["median"] <= summary["max"] == pytest.approx(inv_ppl.max())
    p = prior.probabilities
    assert p.shape == (7, 4) and np.allclose(p.sum(axis=1), 1) and np.all(np.diff(p, axis=1) <= 0)
    top = np.sort(inv_ppl[1])[::-1][:4]
    assert np.allclose(p[1], top / top.sum()) and np.allclose(p[4], p[1]), "canary i takes context i mod 3"
    names = prior.secret_names()
    assert len(names) == 7 and all(len(row) == 4 and set(row) <= set(prior.candidates) for row in names)
    X = prior.sample(np.random.default_rng(0))
    assert X.shape == (7,) and X.max() < 4


def test_scores_are_a_cached_stage(tiny, data_dir, tmp_path):
    from pipeline.cache import StageCache

    cache = StageCache(tmp_path / "cache")
    kwargs = dict(n_targets=5, domain_size=3, data_dir=str(data_dir), n_contexts=2, max_candidates=5, progress=False)
    first = PIIPrior(tiny, **kwargs).use_cache(cache.get_or_compute)
    law = first.law()
    again = PIIPrior(tiny, score="log_likelihood", **kwargs).use_cache(cache.get_or_compute)
    assert np.allclose(again.scores()[0], first.scores()[0])
    assert len(cache.computed) == 1 and len(cache.reused) == 1, "the law's choice does not rescore"
    other = PIIPrior(tiny, seed=1, **kwargs).use_cache(cache.get_or_compute)
    other.scores()
    assert len(cache.computed) == 2 and law.shape == (2, 5)


def test_bad_enron_folders_fail_with_one_sentence(tiny, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^enron .*nowhere does not exist"):
        PIIPrior(tiny, enron=str(tmp_path / "nowhere"))
    folder = tmp_path / "maildir" / "inbox"
    folder.mkdir(parents=True)
    (folder / "1.").write_text("From: a@b.com\nX-From: ops@enron.com\nX-To: All Enron Worldwide\n\nNo names in here at all.\n")
    with pytest.raises(ValueError, match=r"^enron .*maildir has no usable names") as err:
        PIIPrior(tiny, enron=str(tmp_path / "maildir"))
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"^score must be one of"):
        PIIPrior(tiny, enron=str(tmp_path / "maildir"), score="perplexity")


def _direct_log_likelihood(model, tokenizer, context: str, name: str) -> float:
    """log p(" " + name | BOS + context) from one plain forward pass over all the tokens (float64 softmax)."""
    import torch

    ctx = [tokenizer.bos_token_id] + tokenizer(context, add_special_tokens=False)["input_ids"]
    cand = tokenizer(" " + name, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        log_probs = torch.log_softmax(model(input_ids=torch.as_tensor([ctx + cand])).logits[0].double(), dim=-1)
    return sum(float(log_probs[len(ctx) - 1 + t, tok]) for t, tok in enumerate(cand))


@pytest.mark.parametrize("architecture", ["llama", "gpt2"])
def test_trie_scoring_of_names_sharing_prefixes(tiny, architecture):
    """Names that share prefixes (one a prefix of another, a repeated name) score as if each ran alone, for any
    number of trie positions per forward pass (chunks that cut through a subtree repeat its ancestors)."""
    import torch

    from stages.model.tiny import TinyModel
    from stages.prior.pii import _candidate_trie, score_candidates

    lm = tiny if architecture == "llama" else TinyModel(architecture="gpt2", device="cpu")
    model, tokenizer = lm.load()
    contexts = ["Please forward the gas report to", "Thanks, and call me tomorrow. Regards,"]
    names = ["John Smith", "John Smithers", "Johnny Cash", "Jo", "Jane Doe", "J", "Mary Ann Lee", "John Smith"]
    direct = np.array([[_direct_log_likelihood(model, tokenizer, c, n) for n in names] for c in contexts])
    cand_ids = [tokenizer(" " + n, add_special_tokens=False)["input_ids"] for n in names]
    n_nodes = len({tuple(ids[:d]) for ids in cand_ids for d in range(1, len(ids))})
    assert n_nodes < sum(len(ids) - 1 for ids in cand_ids) - 20, "the names share many prefixes"
    for batch_size in (1, 5, 1000):
        chunks, pairs = _candidate_trie(cand_ids, batch_size)
        assert sum(owned for *_, owned in chunks) == n_nodes and len(pairs) == sum(len(ids) - 1 for ids in cand_ids)
        scores, n_tokens = score_candidates(model, tokenizer, contexts, names, batch_size=batch_size)
        assert np.allclose(scores, direct, rtol=0, atol=1e-4), batch_size
        assert list(n_tokens) == [len(ids) for ids in cand_ids]
    assert scores[0, 0] == pytest.approx(scores[0, 7], abs=1e-6) and scores[0, 1] < scores[0, 0] < scores[0, 3]
    before = torch.get_num_threads()
    again, _ = score_candidates(model, tokenizer, contexts, names, threads=before + 1)
    assert torch.get_num_threads() == before and np.allclose(again, direct, rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1, got 0"):
        score_candidates(model, tokenizer, contexts, names, batch_size=0)


def _maildir(root, bodies: list[str]):
    """A maildir of messages from John Smith to Mary Jones (the two candidate names) with the given bodies."""
    folder = root / "inbox"
    folder.mkdir(parents=True)
    for i, body in enumerate(bodies):
        (folder / f"{i}.").write_text(f"From: a@b.com\nX-From: John Smith\nX-To: Mary Jones\n\n{body}\n")
    return root


COPY_BODIES = [
    "We need the gas report by noon from Mary Jones",
    "Forwarded by John Smith on Monday to the whole desk, and again Mary Jones",
    "The trading desk meeting moved, please tell John Smith",
]


def test_context_copies_drop_leaves_out_the_contexts_that_name_a_candidate(tiny, tmp_path):
    """context_copies=drop: the law keeps the contexts whose left text names no candidate, each with the
    LM's law unchanged, from the same cached scores as keep (no rescoring); keep (the default) is every context."""
    from pipeline.cache import StageCache
    from stages.prior.pii import names_in_text

    cache = StageCache(tmp_path / "cache")
    kwargs = dict(n_targets=5, domain_size=2, enron=str(_maildir(tmp_path / "maildir", COPY_BODIES)), n_contexts=50,
                  min_context_words=2, progress=False)
    keep = PIIPrior(tiny, **kwargs).use_cache(cache.get_or_compute)
    assert keep.context_copies == "keep" and sorted(keep.candidates) == ["John Smith", "Mary Jones"]
    lefts = [c.left for c in keep.contexts]
    assert len(lefts) == 4 and sum("John Smith" in left for left in lefts) == 1  # "... Forwarded by John Smith ... Mary Jones"
    named = names_in_text(keep.candidates, lefts).any(axis=1)
    assert np.allclose(keep.law(), law_from_scores(*keep.scores())), "keep: today's law, every context"
    drop = PIIPrior(tiny, context_copies="drop", **kwargs).use_cache(cache.get_or_compute)
    assert drop.stage_config() == keep.stage_config()
    assert np.allclose(drop.law(), keep.law()[~named]) and drop.law().shape == (3, 2)
    assert len(cache.computed) == 1 and len(cache.reused) == 1, "drop reuses keep's scores"
    assert not any(n in c.left for c in drop.kept_contexts for n in drop.candidates)
    k, d = keep.law_summary(), drop.law_summary()
    assert (k["n_contexts"], k["n_contexts_sampled"], d["n_contexts"], d["n_contexts_sampled"]) == (4, 4, 3, 4)
    assert k["named_fraction"] == d["named_fraction"] == 0.25 and k["favourite_named_fraction"] == d["favourite_named_fraction"]
    assert d["max"] == pytest.approx(keep.law()[~named].max()) and d["context_copies"] == "drop"
    top = np.sort(drop.law()[1])[::-1]
    assert np.allclose(drop.probabilities[4], top / top.sum()), "canary i takes the law's context i mod 3"
    assert drop.params()["context_copies"] == "drop" and drop.params()["n_contexts"] == 3

    with pytest.raises(ValueError) as err:
        PIIPrior(tiny, context_copies="filter", **kwargs)
    assert str(err.value) == ("prior.context_copies must be keep (every sampled context) or drop (leave out the contexts "
                              "whose left text already names a candidate), got 'filter'; "
                              "set prior.context_copies=keep or prior.context_copies=drop.")
    only_copies = _maildir(tmp_path / "copies", ["Dear all, John Smith here and there, not Mary Jones. Call John Smith"])
    with pytest.raises(ValueError, match=r"^prior.context_copies=drop leaves no context: all 2 sampled contexts .*"
                                         r"set prior.context_copies=keep\.$"):
        PIIPrior(tiny, **{**kwargs, "enron": str(only_copies), "min_context_words": 3}, context_copies="drop")


@pytest.mark.slow
def test_context_copies_keep_leaves_the_stage_keys_as_they_were(compose_config, tmp_path):
    """The default (keep) is left out of the trials stage key (the key from before the setting existed);
    drop is in it. The pii_law rows of a drop law say so in their name."""
    from omegaconf import open_dict

    from pipeline import experiments
    from pipeline.game import build_boxes, trials_stage_config

    enron = str(_maildir(tmp_path / "maildir", COPY_BODIES))
    settings = ("prior=pii", "model=tiny", f"prior.enron={enron}", "prior.min_context_words=2", "prior.progress=false",
                "prior.domain_size=2", "prior.n_targets=5")
    cfg = compose_config(*settings)
    key = trials_stage_config(cfg, 0, 2, build_boxes(cfg))
    assert cfg.prior.context_copies == "keep" and "context_copies" not in key["prior"]
    before = cfg.copy()
    with open_dict(before):
        del before.prior["context_copies"]  # the config before the setting existed
    assert trials_stage_config(before, 0, 2, build_boxes(before)) == key
    dropped = compose_config(*settings, "prior.context_copies=drop")
    assert trials_stage_config(dropped, 0, 2, build_boxes(dropped))["prior"]["context_copies"] == "drop"

    metrics = experiments.run_task(compose_config("experiment=pii_law", *settings[1:], "prior.context_copies=drop",
                                                  "task.eps_points=3"), tmp_path / "law")
    assert {r["prior_name"] for r in metrics["table"]} == {"pii_inverse_perplexity_copies_dropped"}
    law = metrics["headline"]["law"]
    assert (law["n_contexts"], law["n_contexts_sampled"], law["named_fraction"]) == (3, 4, 0.25)
    law = f"{{law: pii, context_copies: drop, enron: '{enron}', min_context_words: 2, progress: false}}"
    metrics = experiments.run_task(compose_config("experiment=advantage_by_prior", "model=tiny", "task.eps_points=3",
                                                  f"+task.priors.pii={law}"), tmp_path / "advantage")
    assert metrics["laws"]["pii"]["source"].endswith("(context copies dropped: 3 of 4 sampled)")
    assert metrics["stages"]["reused"] and not metrics["stages"]["computed"], "the pii_law job's scores are reused"
