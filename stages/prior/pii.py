"""The PII prior (Section 4.1): names in Enron emails scored by a pretrained language model.

Recipe (the paper's, with the choices it leaves open made explicit):

* Contexts: every occurrence of a candidate name in an email body gives a context, the text to its
  left (at most `context_chars` characters, cut at a word boundary, whitespace collapsed, at least
  `min_context_words` words). Duplicate (context, name) pairs are dropped and `n_contexts` of them are
  drawn with numpy's default_rng(seed) (the paper samples 500 sequences).
* Candidates: people's names from the `X-From`, `X-To` and `X-cc` headers of the whole folder
  ("Last, First" turned into "First Last", middle initials dropped, addresses and obvious
  non-persons such as "All Enron Worldwide" dropped), kept if they occur in some body. No NER model
  is needed. `max_candidates` keeps only the most frequent ones.
* Scores: log p_LM(name tokens | context) with the causal LM (the right context is not used). The
  context is run once; its key/value cache is shared by all candidates, which run as a token trie
  (a prefix shared by several names is computed once), with the LM head only where it is read.
* The law over the candidates of a context, `score`:
  - `inverse_perplexity` (default, the paper's "normalise the perplexities"): Pr[name] proportional
    to 1 / perplexity = exp(mean log-probability per token). Default because it is what the paper
    did, so the PII rows and eps_protect can be compared with its numbers; it gives a flat law
    (a long name is not penalised for its length).
  - `log_likelihood`: Pr[name] proportional to p_LM(name | context), the softmax of the total
    log-likelihoods: the LM's own conditional distribution restricted to the candidates, which is the
    Bayesian prior of an adversary holding that LM. It is much more peaked.
* Context copies, `context_copies`: a context's left text often already names a candidate (forwarded
  headers, "To:" lists, a signature before a reply), and the LM then copies that name: its favourite
  candidate is the one it has just read, with a probability far above the rest of the law.
  - `keep` (default): every sampled context, the law as the LM gives it.
  - `drop`: leave out every sampled context whose left text contains a candidate name (the whole
    "First Last", matched as find_contexts matches names in bodies: case-sensitive, at word
    boundaries), so the law covers first mentions only. The other contexts' laws are the LM's,
    unchanged. Not the other way (striking the copied names from a context's candidates and
    renormalising): that would edit the law the LM gives, and would give the true name probability 0
    where it is the copied one (a person named twice), which no adversary reading the context does.
    The selection uses the text only, not the LM, so the same contexts stay for any model and
    `score`, and it applies to the scores of all sampled contexts: `drop` reuses `keep`'s cached
    scores and never rescores (the law has fewer contexts than `n_contexts`; law_summary() says how
    many). The paper (Sec. 4.1) samples 500 sequences and says nothing on names that occur twice.

Outputs: `law()` (contexts x candidates), `law_summary()` (max, median and 10th percentile of all
those probabilities: the paper's min is ~0, so its footnote uses the 10th percentile; and how often a
context names a candidate and the LM's favourite is such a copy, whatever `context_copies`), and the
Prior itself: canary i takes the law's context i mod (its number of contexts) and its `domain_size` most probable
candidates, renormalised, most probable first (the paper scales each prior down to 10 secrets
without saying how; this is our choice).

Scoring is the expensive stage. `use_cache(get_or_compute)` lets the pipeline store the scores in its
stage cache (keyed by the model, the sha256 of the contexts and candidates, and the settings);
without it they are computed in memory on first use.
"""
from __future__ import annotations

import email
import hashlib
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import special

from stages.bound import _validate
from stages.prior.base import Prior, data_path, validate_probabilities

__all__ = ["PIIPrior", "Context", "header_names", "read_messages", "find_contexts", "score_candidates",
           "law_from_scores", "names_in_text", "SCORES", "CONTEXT_COPIES"]

SCORES = ("inverse_perplexity", "log_likelihood")
CONTEXT_COPIES = ("keep", "drop")
SCORES_STAGE_VERSION = 1
log = logging.getLogger(__name__)
_NAME_TOKEN = re.compile(r"^[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?$")
_NOT_PEOPLE = {
    "enron", "all", "office", "the", "of", "announcements", "worldwide", "system", "arsystem", "team", "group",
    "mail", "on", "and", "inc", "news", "corp", "chairman", "department", "services", "desk", "list", "center",
    "support", "no", "reply", "admin", "public", "relations", "investor", "commerce", "network", "multex",
}


@dataclass(frozen=True)
class Context:
    """One occurrence of a name: the text to its left, the name, and the message it came from."""

    left: str
    name: str
    source: str


def header_names(value: str | None) -> list[str]:
    """People's names ("First Last") in one X-From / X-To / X-cc header value."""
    if not value:
        return []
    out = []
    for chunk in re.sub(r"<[^>]*>", ";", value).split(";"):
        chunk = chunk.strip().strip(",").strip()
        if not chunk:
            continue
        parts = [p.strip() for p in chunk.split(",")]
        if len(parts) == 2 and len(parts[0].split()) == 1 and parts[1] and "@" not in chunk:
            parts = [f"{parts[1]} {parts[0]}"]  # "Arora, Harry" -> "Harry Arora"
        for part in parts:
            part = part.strip().strip("\"'").strip()
            if not part or "@" in part or any(ch.isdigit() for ch in part):
                continue
            tokens = [t.rstrip(".") for t in part.split()]
            tokens = [t.capitalize() if t.isupper() else t for t in tokens if len(t) > 1]  # drops middle initials
            if not 2 <= len(tokens) <= 3:
                continue
            tokens = [tokens[0], tokens[-1]]
            if all(_NAME_TOKEN.match(t) for t in tokens) and not any(t.lower() in _NOT_PEOPLE for t in tokens):
                out.append(" ".join(tokens))
    return out


def _body(message) -> str:
    payload = message.get_payload()
    if isinstance(payload, list):
        return "\n".join(_body(part) for part in payload)
    return payload if isinstance(payload, str) else ""


def read_messages(folder: Path) -> list[tuple[str, email.message.Message]]:
    """(relative path, message) for every file under a maildir folder, or every row of a CSV `file,message`."""
    if folder.is_file() and folder.suffix == ".csv":
        import csv

        with open(folder, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.DictReader(f)
            if not {"file", "message"} <= set(reader.fieldnames or []):
                raise ValueError(f"enron {folder} must have columns file and message, got {reader.fieldnames}.")
            return [(row["file"], email.message_from_string(row["message"])) for row in reader]
    out = []
    for directory, _, files in sorted(os.walk(folder)):
        for name in sorted(files):
            path = Path(directory) / name
            with open(path, encoding="utf-8", errors="replace") as f:
                out.append((str(path.relative_to(folder)), email.message_from_file(f)))
    return out


def find_contexts(messages, context_chars: int = 200, min_context_words: int = 3) -> tuple[list[Context], Counter]:
    """All (left context, name) occurrences of header names in the bodies, and how often each name occurs."""
    names = {n for _, m in messages for key in ("X-From", "X-To", "X-cc") for n in header_names(m.get(key))}
    bodies = [(source, re.sub(r"\s+", " ", _body(m))) for source, m in messages]
    contexts, seen, counts = [], set(), Counter()
    if not names:
        return contexts, counts
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    for source, body in bodies:
        for match in pattern.finditer(body):
            counts[match.group(1)] += 1
            start = max(0, match.start() - context_chars)
            left = body[start:match.start()]
            if start > 0:  # cut at a word boundary
                left = left.split(" ", 1)[1] if " " in left else ""
            left = left.strip()
            if len(left.split()) < min_context_words or (left, match.group(1)) in seen:
                continue
            seen.add((left, match.group(1)))
            contexts.append(Context(left, match.group(1), source))
    return contexts, counts


def names_in_text(names: list[str], texts: list[str]) -> np.ndarray:
    """(len(texts), len(names)) bool: name k occurs in text c, case-sensitive at word boundaries (as in find_contexts)."""
    patterns = [re.compile(r"\b" + re.escape(name) + r"\b") for name in names]
    return np.array([[p.search(text) is not None for p in patterns] for text in texts], dtype=bool).reshape(
        len(texts), len(names))


def _candidate_trie(cand_ids, chunk_size):
    """The token trie of the candidates, its inner nodes (every proper prefix) cut into chunks of chunk_size.

    The nodes are in depth-first order, so the ancestors of a chunk's nodes that an earlier chunk owns
    are ancestors of its first node: the chunk starts with them (at most depth - 1 positions) so that
    every node sees its whole path. Returns (chunks, pairs): per chunk (tokens, depths, ancestor, owned),
    with ancestor[i, j] True when node j of the chunk is node i or one of its ancestors and `owned` the
    number of its last nodes that it scores; pairs lists, for every candidate token after the first,
    (candidate, chunk, index among the chunk's owned nodes, token).
    """
    prefixes = sorted({tuple(ids[:d]) for ids in cand_ids for d in range(1, len(ids))})  # depth-first order
    where, chunks = {}, []
    for start in range(0, len(prefixes), chunk_size):
        owned = prefixes[start:start + chunk_size]
        nodes = [owned[0][:d] for d in range(1, len(owned[0]))] + owned  # + the ancestors owned by earlier chunks
        index = {p: i for i, p in enumerate(nodes)}
        ancestor = np.zeros((len(nodes), len(nodes)), dtype=bool)
        for i, p in enumerate(nodes):
            ancestor[i, [index[p[:d]] for d in range(1, len(p) + 1)]] = True
        where.update((p, (len(chunks), index[p] - (len(nodes) - len(owned)))) for p in owned)
        chunks.append((np.asarray([p[-1] for p in nodes]), np.asarray([len(p) for p in nodes]), ancestor, len(owned)))
    pairs = [(k, *where[tuple(ids[:d])], ids[d]) for k, ids in enumerate(cand_ids) for d in range(1, len(ids))]
    return chunks, pairs


def _cache_tensors(past):
    """The context's key/value tensors of a transformers cache, per layer, to restore after a forward pass grew it."""
    if isinstance(past, tuple):  # legacy format ((k, v), ...): the model returns a new tuple, this one is kept
        return None
    layers = getattr(past, "layers", None)
    if layers is None or not all(hasattr(layer, "keys") and hasattr(layer, "values") for layer in layers):
        import transformers

        raise TypeError(f"cannot reuse a {type(past).__name__} key/value cache; "
                        f"transformers {transformers.__version__}")
    return [(layer.keys, layer.values) for layer in layers]


def score_candidates(model, tokenizer, contexts: list[str], candidates: list[str], batch_size: int = 1024,
                     max_context_tokens: int = 256, progress: bool = False,
                     threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """log p(candidate | context) for every pair: (C, K) float array, and each candidate's token count (K,).

    The context (BOS, if the tokenizer has one, then the context tokens, at most max_context_tokens)
    runs once and its key/value cache is shared (batch 1, never copied) by the candidates (" " + name),
    which run as a token trie: every distinct proper prefix of a candidate is one position (position id
    = context length + depth - 1) that attends to the context and to its own ancestors only (a 4D
    additive mask), so a prefix shared by several names (" John", " J") is computed once. The trie
    runs in forward passes of `batch_size` positions (plus the few ancestors an earlier pass computed),
    and the LM head is applied only at those positions and at the context's last one. Exact: the same
    log-probabilities as one forward pass over context + name, up to float round-off; batch_size only
    trades memory (batch_size x vocabulary logits) for fewer, larger passes. threads: torch's CPU
    threads while scoring (restored after); null keeps torch's. On a CPU that other jobs share, 1 is
    often several times faster than more (threads that wait for each other at every operation).
    """
    import inspect

    import torch

    batch_size = _validate.integer("batch_size", batch_size, minimum=1)
    if threads is not None:
        threads = _validate.integer("threads", threads, minimum=1)
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return score_candidates(model, tokenizer, contexts, candidates, batch_size, max_context_tokens, progress)
        finally:
            torch.set_num_threads(before)
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    attention = getattr(model.config, "_attn_implementation", None) or "eager"
    if attention not in ("eager", "sdpa"):
        raise ValueError(f"the model's attention implementation must be eager or sdpa (the trie needs a 4D mask), "
                         f"got {attention!r}; load it with attn_implementation='sdpa'.")
    # transformers 5 renames past_key_values to cache (the old name is deprecated)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    cand_ids = [tokenizer(" " + c, add_special_tokens=False)["input_ids"] for c in candidates]
    lengths = np.asarray([len(ids) for ids in cand_ids])
    if np.any(lengths == 0):
        raise ValueError(f"candidate {candidates[int(np.argmin(lengths))]!r} has no tokens.")
    chunks, pairs = _candidate_trie(cand_ids, batch_size)
    first_tokens = torch.as_tensor([ids[0] for ids in cand_ids], device=device)
    blocked = torch.finfo(dtype).min
    chunk_inputs = []
    for g, (tokens, depths, ancestor, owned) in enumerate(chunks):
        chosen = [(k, i, t) for k, gg, i, t in pairs if gg == g]
        chunk_inputs.append((
            torch.as_tensor(tokens, device=device)[None], torch.as_tensor(depths, device=device)[None],
            torch.where(torch.as_tensor(ancestor, device=device), 0.0, blocked).to(dtype),
            torch.as_tensor([k for k, _, _ in chosen], device=device, dtype=torch.long),
            torch.as_tensor([i for _, i, _ in chosen], device=device, dtype=torch.long),
            torch.as_tensor([t for _, _, t in chosen], device=device, dtype=torch.long), owned))
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    out = np.zeros((len(contexts), len(candidates)))
    iterator = contexts
    if progress:  # a bar on a terminal, log lines in a job's log file
        from stages._progress import progress as show_progress

        iterator = show_progress(contexts, "PII prior: scoring contexts", "context")
    with torch.inference_mode():
        for c, text in enumerate(iterator):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"][-max_context_tokens:]
            ids = torch.as_tensor([bos + ids], device=device)
            n_past = ids.shape[1]
            if n_past == 0:
                raise ValueError(f"contexts[{c}] has no tokens and the tokenizer has no BOS token; "
                                 f"give non-empty contexts.")
            ctx = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            past = ctx.cache if getattr(ctx, "cache", None) is not None else ctx.past_key_values
            kept = _cache_tensors(past)
            score = torch.log_softmax(ctx.logits[0, -1].double(), dim=-1)[first_tokens]
            for tokens, depths, ancestor, cand, node, following, owned in chunk_inputs:
                n = tokens.shape[1]
                mask = torch.cat([torch.zeros(n, n_past, dtype=dtype, device=device), ancestor], dim=1)[None, None]
                step = model(input_ids=tokens, attention_mask=mask, position_ids=n_past - 1 + depths,
                             use_cache=True, logits_to_keep=owned, **{cache_arg: past})
                if kept is not None:  # drop the trie's keys: the cache holds the context alone again
                    for layer, (k, v) in zip(past.layers, kept):
                        layer.keys, layer.values = k, v
                logits = step.logits[0].float()
                log_probs = logits[node, following] - torch.logsumexp(logits, dim=-1)[node]
                score = score.index_add(0, cand, log_probs.double())
            out[c] = score.cpu().numpy()
    return out, lengths


def law_from_scores(log_likelihood, n_tokens, score: str = "inverse_perplexity") -> np.ndarray:
    """Per-context law over the candidates from log p(candidate | context): rows summing to 1."""
    ll = np.asarray(log_likelihood, dtype=float)
    if score == "inverse_perplexity":
        logits = ll / np.asarray(n_tokens, dtype=float)[None, :]  # log(1 / perplexity)
    elif score == "log_likelihood":
        logits = ll
    else:
        raise ValueError(f"score must be one of {list(SCORES)}, got {score!r}.")
    return np.exp(logits - special.logsumexp(logits, axis=1, keepdims=True))


def _resolve_enron(enron: str, data_dir) -> Path:
    """The Enron folder (maildir) or CSV (file,message), relative to data_dir or absolute (base.data_path's check)."""
    return data_path(enron, data_dir, what="enron", kind="any")


class PIIPrior(Prior):
    """n canaries whose m candidate secrets are the names an LM finds most likely in an Enron context."""

    name = "pii"
    #: Settings that came after cached artifacts: at these values the trials stage key leaves them out
    #: (pipeline.game.trials_stage_config), so it is the key from before they existed.
    STAGE_KEY_DEFAULTS = {"context_copies": "keep"}

    def __init__(
        self,
        model,
        n_targets: int = 100,
        domain_size: int = 10,
        enron: str = "enron/mini-enron",
        data_dir: str | None = None,
        n_contexts: int = 500,
        max_candidates: int | None = None,
        context_chars: int = 200,
        min_context_words: int = 3,
        score: str = "inverse_perplexity",
        context_copies: str = "keep",
        batch_size: int = 1024,
        threads: int | None = None,
        seed: int = 0,
        progress: bool = True,
    ) -> None:
        self.model = model
        self.n = _validate.integer("n_targets", n_targets, minimum=1)
        self.m = _validate.integer("domain_size", domain_size, minimum=1)
        self.n_contexts = _validate.integer("n_contexts", n_contexts, minimum=1)
        self.context_chars = _validate.integer("context_chars", context_chars, minimum=10)
        self.min_context_words = _validate.integer("min_context_words", min_context_words, minimum=1)
        self.batch_size = _validate.integer("batch_size", batch_size, minimum=1)
        self.threads = None if threads is None else _validate.integer("threads", threads, minimum=1)
        self.seed = _validate.integer("seed", seed, minimum=0)
        if score not in SCORES:
            raise ValueError(f"score must be one of {list(SCORES)}, got {score!r}.")
        self.scoring = score  # the config key `score` (not the protocol method score)
        if context_copies not in CONTEXT_COPIES:
            raise ValueError(f"prior.context_copies must be keep (every sampled context) or drop (leave out the contexts "
                             f"whose left text already names a candidate), got {context_copies!r}; "
                             f"set prior.context_copies=keep or prior.context_copies=drop.")
        self.context_copies = context_copies
        self.progress = bool(progress)
        self.enron = enron
        folder = _resolve_enron(enron, data_dir)
        contexts, counts = find_contexts(read_messages(folder), self.context_chars, self.min_context_words)
        if not contexts:
            raise ValueError(f"enron {folder} has no usable names: no X-From/X-To/X-cc person name occurs in a body "
                             f"after at least {self.min_context_words} words; point enron at a folder of raw Enron emails.")
        candidates = [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        if max_candidates is not None:
            candidates = candidates[:_validate.integer("max_candidates", max_candidates, minimum=1)]
        if len(candidates) < self.m:
            raise ValueError(f"domain_size must be at most the number of candidate names ({len(candidates)}), got {self.m}.")
        self.candidates = candidates
        keep = set(candidates)
        usable = [c for c in contexts if c.name in keep]
        rng = np.random.default_rng(self.seed)
        chosen = np.sort(rng.choice(len(usable), size=min(self.n_contexts, len(usable)), replace=False))
        self.contexts = [usable[i] for i in chosen]
        # context c's left text names candidate k (the LM may copy it); `drop` keeps the rows naming none
        self.named = names_in_text(self.candidates, [c.left for c in self.contexts])
        self.kept = np.flatnonzero(~self.named.any(axis=1)) if context_copies == "drop" else np.arange(len(self.contexts))
        if len(self.kept) == 0:
            raise ValueError(f"prior.context_copies=drop leaves no context: all {len(self.contexts)} sampled contexts name "
                             f"a candidate in their left text; raise prior.n_contexts or set prior.context_copies=keep.")
        self._cache: Callable | None = None
        self._scores: tuple[np.ndarray, np.ndarray] | None = None
        self._top: tuple[np.ndarray, np.ndarray] | None = None

    # -- the scoring stage ---------------------------------------------------------------------------
    def stage_config(self) -> dict:
        """What determines the scores: the model, the exact contexts and candidates (hashed), the settings."""
        digest = lambda items: hashlib.sha256(json.dumps(items, ensure_ascii=True).encode()).hexdigest()  # noqa: E731
        return {
            "stage": "pii_scores", "version": SCORES_STAGE_VERSION, "model": self.model.identity(),
            "contexts_sha256": digest([c.left for c in self.contexts]), "candidates_sha256": digest(self.candidates),
            "n_contexts": len(self.contexts), "n_candidates": len(self.candidates),
        }

    def use_cache(self, get_or_compute: Callable) -> "PIIPrior":
        """Store the scores through get_or_compute(stage, config, compute(directory)) -> directory (a stage cache)."""
        self._cache = get_or_compute
        return self

    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        # the slow step of a PII game, said before it starts (the progress lines follow once the model is loaded)
        log.info("PII prior: scoring %d contexts x %d candidate names with model=%s before the first trial: minutes "
                 "on a CPU (about 270 s for 500 contexts with model=tiny on 2 cores); the scores are cached, so the "
                 "next run with the same contexts and model skips this (fewer contexts: prior.n_contexts=<n>)",
                 len(self.contexts), len(self.candidates), self.model.name)
        model, tokenizer = self.model.load()
        return score_candidates(model, tokenizer, [c.left for c in self.contexts], self.candidates,
                                batch_size=self.batch_size, progress=self.progress, threads=self.threads)

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """(log p(candidate | context) of shape (C, K), token counts (K,)): cached stage or computed once."""
        if self._scores is None:
            if self._cache is None:
                self._scores = self._compute()
            else:
                def compute(directory: Path) -> None:
                    ll, lengths = self._compute()
                    np.save(Path(directory) / "log_likelihood.npy", ll)
                    np.save(Path(directory) / "n_tokens.npy", lengths)
                    (Path(directory) / "candidates.json").write_text(json.dumps(self.candidates))
                    (Path(directory) / "contexts.json").write_text(
                        json.dumps([{"left": c.left, "name": c.name, "source": c.source} for c in self.contexts]))

                directory = Path(self._cache("pii_scores", self.stage_config(), compute))
                self._scores = (np.load(directory / "log_likelihood.npy"), np.load(directory / "n_tokens.npy"))
        return self._scores

    # -- the two outputs ------------------------------------------------------------------------------
    def law(self) -> np.ndarray:
        """Pr[candidate k | context c] under `score`: array (contexts kept, n_candidates), rows sum to 1.

        Row r is the context self.kept_contexts[r]: all sampled contexts under context_copies=keep, those
        whose left text names no candidate under drop."""
        return law_from_scores(*self.scores(), score=self.scoring)[self.kept]

    @property
    def kept_contexts(self) -> list[Context]:
        """The contexts of the law's rows, in order."""
        return [self.contexts[i] for i in self.kept]

    def law_summary(self) -> dict:
        """max, median and 10th percentile of the candidate probabilities over the law's contexts (Figure
        novel_bounds), and the context-copy effect over all sampled contexts: the fraction whose left text
        names a candidate (`named_fraction`) and the fraction whose most probable candidate is one of
        those (`favourite_named_fraction`, the LM copying a name it has read), whatever context_copies is."""
        full = law_from_scores(*self.scores(), score=self.scoring)
        favourite = np.argmax(full, axis=1)
        p = full[self.kept].reshape(-1)
        return {"max": float(p.max()), "median": float(np.median(p)), "p10": float(np.percentile(p, 10)),
                "min": float(p.min()), "n_contexts": len(self.kept), "n_candidates": len(self.candidates),
                "score": self.scoring, "context_copies": self.context_copies, "n_contexts_sampled": len(self.contexts),
                "named_fraction": float(self.named.any(axis=1).mean()),
                "favourite_named_fraction": float(self.named[np.arange(len(full)), favourite].mean())}

    def _top_candidates(self) -> tuple[np.ndarray, np.ndarray]:
        if self._top is None:
            law = self.law()
            rows = np.arange(self.n) % law.shape[0]
            order = np.argsort(-law[rows], axis=1, kind="stable")[:, : self.m]
            top = np.take_along_axis(law[rows], order, axis=1)
            self._top = (validate_probabilities(top / top.sum(axis=1, keepdims=True), "PII prior"), order)
        return self._top

    @property
    def probabilities(self) -> np.ndarray:
        """Canary i: the m most probable candidates of the law's context i mod C, renormalised, most probable first."""
        return self._top_candidates()[0]

    @property
    def _cdf(self) -> np.ndarray:
        return np.cumsum(self.probabilities, axis=1)

    @property
    def n_targets(self) -> int:
        return self.n

    @property
    def domain_size(self) -> int:
        return self.m

    def secret_names(self) -> list[list[str]]:
        """The candidate names behind each canary's m secrets (secret j of canary i is names[i][j])."""
        order = self._top_candidates()[1]
        return [[self.candidates[k] for k in row] for row in order]

    def params(self) -> dict:
        return {"prior": self.name, "n_targets": self.n, "domain_size": self.m, "enron": self.enron,
                "n_contexts": len(self.kept), "n_candidates": len(self.candidates), "score": self.scoring,
                "context_copies": self.context_copies, "n_contexts_sampled": len(self.contexts),
                "seed": self.seed, "model": self.model.params()}
