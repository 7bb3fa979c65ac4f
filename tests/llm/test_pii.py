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
