"""DP-SGD fine-tuning of a language model on new-token canaries; the release is each canary's log-probabilities.

Section 4.2 of the paper (after Panda et al. 2025): canary i is two new tokens, a prefix `<i>` and a
secret drawn from 10 new tokens of its own, so n = 100 canaries add n + n m = 1,100 rows to the
vocabulary. The model reads the prefix and is trained, with the loss on the secret only, by DP-SGD:
Poisson sampling at rate q, per-example clipping to norm C, Gaussian noise of standard deviation
sigma C on the clipped sum, division by the expected batch size (opacus's conventions).

What is trained (`trainable`): `rows` (the default) trains the 1,100 new rows only, untied (an
input-embedding row per new token, used by the prefixes, and an output row per new token, used by the
softmax), both initialised from the same seeded draw, with the pretrained body frozen. `body` trains
those rows plus every parameter of the transformer body (attention and MLP linears, norms), on a copy
of the body made per training run, so the loaded model never changes; the old vocabulary's input
embedding (and the lm_head tied to it) and position embeddings (every nn.Embedding of the body) stay
frozen.

One-token inputs (T = 1) make every per-example gradient cheap and exact without per-sample hooks:
for example i with final hidden state h_i, softmax p_i and secret y_i, the output rows get
(p_i - e_{y_i})[new] h_i^T (rank one, norm ||p_i - e_y||_new ||h_i||) and the input row of its prefix
gets g_i = dL_i / d(embedding of the prefix), one backward pass through the body for the whole batch
(examples do not interact). With `trainable: body` the same pass captures each body layer's input a_i
(forward hooks) and output gradient g_i (autograd w.r.t. the layer outputs, body weights' requires_grad
off so only input gradients are computed): a linear layer's per-example weight gradient is the rank-one
g_i a_i^T (squared norm ||a_i||^2 ||g_i||^2, plus ||g_i||^2 for a bias), a norm layer's is g_i * x_hat_i
(x_hat_i recomputed from the captured input), and the clipped sum of a linear layer is one matmul
G^T diag(c) A. `clipping: fast` uses that; `ghost` and `hooks` run the same model through opacus's
PrivacyEngine (for comparison and the benchmark; with `trainable: body` GPT-2's Conv1D layers become
equivalent nn.Linear and LlamaRMSNorm becomes torch's nn.RMSNorm, which opacus knows); `none` is the
non-private baseline (no clipping, no noise, plain SGD on every trained parameter).

Privacy: the noise multiplier sigma is the smallest whose `stages.bound.profiles.DPSGD(sigma, q,
steps, neighboring="replace_one")` profile meets (epsilon, delta) — the profile the bound then uses,
so training and bound cannot disagree. Replacing a canary moves the clipped sum by up to 2C, so this
sigma is larger than what an add/remove accountant (opacus's) asks for: exactly twice at full batch
(q = 1, where both profiles are Gaussian DP and mu scales with the sensitivity), less than twice with
Poisson subsampling (q < 1: 1.29-1.89x measured in the audit of issue 14, since a replaced canary is
absent from most batches under both neighbouring notions); privacy() records both epsilons.
`clipping: none` trains without clipping or noise, and epsilon = inf (or noise_multiplier 0) clips without
noise: such a run is not private, and so is one whose epsilon exceeds MAX_PRIVATE_EPSILON (the one rule,
stages.mechanism.judge_privacy): `profile` is None and privacy() says why (the game then reports no epsilon
and no bound). The release a has shape (n, m): a[i, j] = log p_model(secret j of canary i | prefix i) over
the whole vocabulary.
"""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import DPSGD as DPSGDProfile
from stages.mechanism import check_records, gaussian_mu, judge_privacy

__all__ = ["DPSGDFineTuning", "calibrate_noise_multiplier", "opacus_epsilon", "CLIPPING", "TRAINABLE"]

CLIPPING = ("fast", "ghost", "hooks", "none")
#: What a clipping=none run says about its privacy (metrics.json, figures).
NON_PRIVATE_REASON = "mechanism.clipping=none: plain SGD without clipping or noise, so no privacy guarantee and no bound"
TRAINABLE = ("rows", "body")


def calibrate_noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int,
                               neighboring: str = "replace_one", rtol: float = 1e-3) -> float:
    """The smallest sigma (to rtol) whose DPSGD(sigma, sample_rate, steps, neighboring) profile is (epsilon, delta)-DP.

    At sample_rate 1 the profile is mu-GDP with mu = c sqrt(steps) / sigma (c = 2 replace-one, 1
    add/remove), so sigma = c sqrt(steps) / mu(epsilon, delta) in closed form; otherwise a bisection on
    log sigma against the profile's own epsilon(delta) (the PLD accountant). The returned sigma is
    checked to satisfy the target. Every loop is bounded: an epsilon so large (about 1e5 and up at full
    batch) that the accountant cannot certify any sigma for it (its epsilon(delta) overflows), or so
    small that sigma overflows, is one ValueError naming epsilon, not a search that never ends.
    """
    eps = _validate.positive("epsilon", epsilon)
    d = _validate.delta("delta", delta)
    if d <= 0:
        raise ValueError(f"delta must be in (0, 1) for DP-SGD, got {delta!r}; no finite noise gives delta = 0.")
    steps = _validate.integer("steps", steps, minimum=1)
    q = float(_validate.probability("sample_rate", sample_rate, open_low=True))
    tol = _validate.positive("rtol", rtol)

    def epsilon_of(sigma: float) -> float:
        return DPSGDProfile(sigma, q, steps, neighboring).epsilon(d)

    def cannot(why: str, fix: str = "a smaller epsilon (e.g. 1000)") -> ValueError:
        return ValueError(f"epsilon = {eps:g} cannot be calibrated for DP-SGD at delta = {d:g} over {steps} steps "
                          f"(sample rate {q:g}): {why}; give {fix}, or the noise directly (noise_multiplier, with "
                          f"epsilon null).")

    def full_batch_sigma() -> float:
        """The closed form at sample rate 1 (mu-GDP, mu = c sqrt(steps) / sigma), checked against the profile."""
        c = 2.0 if neighboring == "replace_one" else 1.0
        try:
            closed_form = c * math.sqrt(steps) / gaussian_mu(eps, d)
        except ValueError:  # epsilon and delta are valid: the Gaussian calibration itself over- or underflows
            raise cannot("the Gaussian calibration " + ("overflows" if eps > 1 else "underflows"),
                         "a smaller epsilon (e.g. 1000)" if eps > 1 else "a larger epsilon or delta") from None
        if not (math.isfinite(closed_form) and closed_form > 0):
            raise cannot(f"the noise multiplier it needs ({closed_form:g}) is not a positive finite number",
                         "a larger epsilon" if eps < 1 else "another epsilon")
        # guard against the last ulps of the closed form: a bounded number of growing nudges (the first ones
        # 1e-9 relative, as before), never an open-ended loop
        sigma, reached = closed_form, math.inf
        for nudge in range(_NUDGES):
            reached = DPSGDProfile(sigma, 1.0, steps, neighboring).epsilon(d)
            if reached <= eps:
                return sigma
            sigma *= 1 + 1e-9 * 2.0**nudge
        raise cannot(f"the privacy accountant cannot certify the full-batch noise multiplier {closed_form:.3g} it "
                     f"needs (its epsilon there is {reached:g})")

    if q >= 1.0:
        return full_batch_sigma()
    # Subsampling only amplifies privacy, so the full-batch sigma meets the target: start below it.
    hi = full_batch_sigma()
    lo = hi / 2
    while epsilon_of(lo) <= eps and lo > 1e-4:  # halves down to 1e-4: at most log2(hi / 1e-4) steps
        lo, hi = lo / 2, lo
    for _ in range(_BISECTIONS):  # each step halves log(hi / lo): rtol is reached long before the cap
        if hi / lo <= 1 + tol:
            break
        mid = math.sqrt(lo * hi)
        if epsilon_of(mid) <= eps:
            hi = mid
        else:
            lo = mid
    return hi


#: Bounds of calibrate_noise_multiplier's loops: nudges of the closed form (1e-9 relative, doubling: up to a
#: factor ~3 in all) and bisection steps (each halves log(hi / lo); 200 reach any rtol a float can hold).
_NUDGES = 31
_BISECTIONS = 200


def opacus_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float | None:
    """epsilon of opacus's own PRV accountant (add/remove neighbours, sensitivity C) for the same run; None without opacus."""
    try:
        from opacus.accountants import PRVAccountant, RDPAccountant
    except ImportError:
        return None
    import warnings

    for accountant_class in (PRVAccountant, RDPAccountant):  # PRV can refuse extreme settings; RDP never does
        accountant = accountant_class()
        accountant.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
        try:
            # q = 1 makes PRV's log(1 - q) infinite (harmless) and RDP warns about its alpha grid
            with warnings.catch_warnings(), np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                warnings.simplefilter("ignore")
                return float(accountant.get_epsilon(delta=float(delta)))
        except Exception:  # noqa: BLE001 - fall back to the RDP accountant
            continue
    return None


def _canary_module(model, n_new: int, init: "Any", trainable: str = "rows"):
    """The canary model: the LM with n_new untied new input rows and output rows.

    trainable "rows" shares the loaded body (frozen); "body" gets a copy of the body whose nn.Embedding
    parameters (old vocabulary, positions: frozen) stay shared with the loaded model.
    """
    import torch
    from torch import nn

    body = model.base_model
    if trainable == "body":  # a fresh copy per training run; the frozen embedding tables are not copied
        shared = {id(p): p for m in body.modules() if isinstance(m, nn.Embedding) for p in m.parameters(recurse=False)}
        body = copy.deepcopy(body, memo=shared)
    old_head = model.get_output_embeddings()

    class CanaryModel(nn.Module):
        """logits over old + new vocabulary for one-token inputs given by their new-row index."""

        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.old_head = old_head
            self.trainable = trainable
            dim = init.shape[1]
            self.new_in = nn.Embedding(n_new, dim)
            self.new_out = nn.Linear(dim, n_new, bias=False)
            with torch.no_grad():
                self.new_in.weight.copy_(init)
                self.new_out.weight.copy_(init)

        def body_parameters(self) -> list:
            """(name, parameter) of the trained body: every body parameter outside an nn.Embedding; [] for rows."""
            if self.trainable != "body":
                return []
            out, seen = [], set()
            for module_name, module in self.body.named_modules():
                if isinstance(module, nn.Embedding):
                    continue
                for name, p in module.named_parameters(recurse=False):
                    if id(p) not in seen:
                        seen.add(id(p))
                        out.append((f"body.{module_name}.{name}" if module_name else f"body.{name}", p))
            return out

        def trained_parameters(self) -> list:
            """Every trained parameter, in a fixed order: new_in, new_out, then the body's (trainable body)."""
            return [self.new_in.weight, self.new_out.weight, *(p for _, p in self.body_parameters())]

        def hidden(self, embeds):
            # position ids of shape [B, T] (opacus #841 chokes on [1, T] broadcast)
            positions = torch.zeros(embeds.shape[0], 1, dtype=torch.long, device=embeds.device)
            out = self.body(inputs_embeds=embeds[:, None, :], position_ids=positions, use_cache=False)
            return out.last_hidden_state[:, 0]

        def logits_from_hidden(self, h):
            return torch.cat([self.old_head(h), self.new_out(h)], dim=1)

        def forward(self, prefix):
            return self.logits_from_hidden(self.hidden(self.new_in(prefix)))

    return CanaryModel()


def _fast_layers(module) -> list:
    """(layer, kind) for every body layer holding trained parameters, kind linear | conv1d | layernorm | rmsnorm.

    Refuses any other parameter-holding module type: its per-example gradient has no closed form here.
    """
    from torch import nn
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.pytorch_utils import Conv1D

    kinds = ((nn.Linear, "linear"), (Conv1D, "conv1d"), (nn.LayerNorm, "layernorm"), (LlamaRMSNorm, "rmsnorm"))
    layers = []
    for name, layer in module.body.named_modules():
        if isinstance(layer, nn.Embedding) or not any(True for _ in layer.parameters(recurse=False)):
            continue
        kind = next((k for cls, k in kinds if type(layer) is cls), None)
        if kind is None or (kind == "layernorm" and len(layer.normalized_shape) != 1):
            raise ValueError(
                f"trainable=body with clipping=fast supports nn.Linear, GPT-2's Conv1D, 1-d nn.LayerNorm and LlamaRMSNorm "
                f"layers, but body.{name} is a {type(layer).__name__}; use clipping=hooks or trainable=rows for this model.")
        layers.append((layer, kind))
    return layers


def _opacus_ready(module) -> None:
    """Swap the body's layers opacus has no per-sample gradient for by equivalent ones it has (in place).

    GPT-2's Conv1D (weight in x out) becomes nn.Linear (weight out x in, the transpose); LlamaRMSNorm
    becomes torch's nn.RMSNorm with the same weight and eps.
    """
    import torch
    from torch import nn
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.pytorch_utils import Conv1D

    for parent in list(module.body.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is Conv1D:
                new = nn.Linear(child.nx, child.nf, device=child.weight.device, dtype=child.weight.dtype)
                with torch.no_grad():
                    new.weight.copy_(child.weight.T)
                    new.bias.copy_(child.bias)
            elif type(child) is LlamaRMSNorm:
                new = nn.RMSNorm(child.weight.shape, eps=child.variance_epsilon, device=child.weight.device,
                                 dtype=child.weight.dtype)
                with torch.no_grad():
                    new.weight.copy_(child.weight)
            else:
                continue
            new.train(child.training)
            for p in new.parameters():
                p.requires_grad_(True)
            setattr(parent, child_name, new)


#: Bump when a training's result changes, so old cached releases are not reused.
RELEASE_STAGE_VERSION = 1


class DPSGDFineTuning:
    """DP-SGD on n new-token canaries; release(X) = (n, m) log-probabilities of every candidate secret.

    Give epsilon (with delta) to calibrate the noise multiplier, or noise_multiplier directly (epsilon
    null). batch_size is the expected batch size (null: all n canaries): sample_rate q = 1 / ceil(n / batch_size) and
    steps = epochs / q, as opacus's Poisson data loader does. trainable: rows (the 1,100 new rows) or body
    (the new rows plus every body parameter outside the embedding tables).
    """

    name = "dpsgd"
    needs_prior = ("records",)  # stages.protocols: one candidate value per target
    #: The game caches each trial's training (pipeline.game: stage dpsgd_release).
    cache_release = True
    # The release is each canary's log-probabilities of its candidates (what attack=model_attack reads).
    releases_candidate_log_probs = True

    def __init__(
        self,
        model,
        epsilon: float | None = 10.0,
        delta: float = 1e-5,
        noise_multiplier: float | None = None,
        clip_norm: float = 1.0,
        learning_rate: float = 1.0,
        epochs: int = 10,
        batch_size: int | None = None,
        n_targets: int = 100,
        domain_size: int = 10,
        clipping: str = "fast",
        init_scale: float = 1.0,
        trainable: str = "rows",
    ) -> None:
        self.model = model
        self.n_targets = _validate.integer("n_targets", n_targets, minimum=1)
        self.domain_size = _validate.integer("domain_size", domain_size, minimum=2)
        self.clip_norm = _validate.positive("clip_norm", clip_norm)
        self.learning_rate = _validate.positive("learning_rate", learning_rate)
        self.epochs = _validate.integer("epochs", epochs, minimum=1)
        self.batch_size = self.n_targets if batch_size is None else _validate.integer("batch_size", batch_size, minimum=1)
        if self.batch_size > self.n_targets:
            raise ValueError(f"batch_size must be at most n_targets ({self.n_targets}), got {batch_size}.")
        if clipping not in CLIPPING:
            raise ValueError(f"clipping must be one of {list(CLIPPING)}, got {clipping!r}.")
        self.clipping = clipping
        if trainable not in TRAINABLE:
            raise ValueError(f"trainable must be one of {list(TRAINABLE)} (the new rows only, or the new rows plus the "
                             f"model body), got {trainable!r}.")
        self.trainable = trainable
        self.init_scale = _validate.positive("init_scale", init_scale)
        self.delta = _validate.delta("delta", delta)
        if self.delta <= 0:
            raise ValueError(f"delta must be in (0, 1) for DP-SGD, got {delta!r}.")
        self.steps_per_epoch = math.ceil(self.n_targets / self.batch_size)
        self.sample_rate = 1.0 / self.steps_per_epoch
        self.steps = self.epochs * self.steps_per_epoch
        if noise_multiplier is not None:
            if epsilon is not None:
                raise ValueError(f"give either epsilon or noise_multiplier, got epsilon={epsilon} and "
                                 f"noise_multiplier={noise_multiplier}; set one of them to null.")
            self.noise_multiplier = _validate.positive("noise_multiplier", noise_multiplier, allow_zero=True)
            self.epsilon = None
        elif epsilon is not None:
            self.epsilon = _validate.positive("epsilon", epsilon, allow_inf=True)
            # epsilon = inf: clipped SGD without noise (noise multiplier 0), not private
            self.noise_multiplier = (0.0 if math.isinf(self.epsilon) else
                                     calibrate_noise_multiplier(self.epsilon, self.delta, self.sample_rate, self.steps))
        else:
            raise ValueError("epsilon must be given (or noise_multiplier), got epsilon=None and noise_multiplier=None.")
        self.last_rows: dict[str, np.ndarray] | None = None
        self._judgement: tuple | None = None  # (settings, profile, reason): _judged's last answer

    # -- privacy -------------------------------------------------------------------------------------
    @property
    def adds_noise(self) -> bool:
        """Whether training clips and adds noise (False for clipping=none and for noise multiplier 0)."""
        return self.clipping != "none" and self.noise_multiplier > 0

    def _judged(self) -> tuple[DPSGDProfile | None, str | None]:
        """The replace-one profile and why it is not private (stages.mechanism.judge_privacy, the one rule),
        judged once: the epsilon it reads may take the PLD accountant a while."""
        key = (self.clipping, self.noise_multiplier, self.sample_rate, self.steps, self.delta, self.epsilon)
        if self._judgement is None or self._judgement[0] != key:
            if self.clipping == "none":
                profile, reason = None, NON_PRIVATE_REASON
            else:
                noisy = self.noise_multiplier > 0
                reason = (f"{'epsilon' if self.epsilon is not None else 'noise_multiplier'} = "
                          f"{'inf' if self.epsilon is not None else 0}: clipped SGD without noise")
                profile, reason = judge_privacy(
                    DPSGDProfile(self.noise_multiplier, self.sample_rate, self.steps, "replace_one") if noisy else None,
                    self.delta, stated_epsilon=self.epsilon, no_profile=reason)
            self._judgement = (key, profile, reason)
        return self._judgement[1], self._judgement[2]

    @property
    def private(self) -> bool:
        """Whether the run has a privacy guarantee (stages.mechanism.judge_privacy): not for clipping=none (plain
        SGD), no noise (epsilon = inf) or an epsilon above MAX_PRIVATE_EPSILON."""
        return self._judged()[0] is not None

    @property
    def profile(self) -> DPSGDProfile | None:
        """The replace-one DP-SGD profile of the training run (the one the noise was calibrated to); None
        when the run is not private (clipping=none, no noise, or a vacuous epsilon: judge_privacy)."""
        return self._judged()[0]

    def privacy(self) -> dict:
        """epsilon at delta under replace-one (ours, the bound's) and add/remove (ours and opacus's accountant).

        Not private ({"private": False, "reason": ...}, every epsilon None): clipping=none (no noise is added),
        no noise, or an epsilon above MAX_PRIVATE_EPSILON (stages.mechanism.judge_privacy).
        """
        profile, reason = self._judged()
        if profile is None:
            return {"private": False, "reason": reason,
                    "noise_multiplier": self.noise_multiplier if self.adds_noise else None,
                    "sample_rate": self.sample_rate, "steps": self.steps, "delta": None,
                    "epsilon_replace_one": None, "epsilon_add_remove": None, "epsilon_opacus_add_remove": None}
        add_remove = DPSGDProfile(self.noise_multiplier, self.sample_rate, self.steps, "add_remove")
        return {
            "noise_multiplier": self.noise_multiplier, "sample_rate": self.sample_rate, "steps": self.steps,
            "delta": self.delta,
            "private": True,
            "epsilon_replace_one": float(profile.epsilon(self.delta)),
            "epsilon_add_remove": float(add_remove.epsilon(self.delta)),
            "epsilon_opacus_add_remove": opacus_epsilon(self.noise_multiplier, self.sample_rate, self.steps, self.delta),
        }

    # -- token layout --------------------------------------------------------------------------------
    @property
    def n_new_tokens(self) -> int:
        return self.n_targets * (1 + self.domain_size)

    def prefix_rows(self) -> np.ndarray:
        """New-row index of canary i's prefix `<i>`: i."""
        return np.arange(self.n_targets)

    def secret_rows(self) -> np.ndarray:
        """New-row index of candidate secret j of canary i: n + i m + j, shape (n, m)."""
        return self.n_targets + np.arange(self.n_targets * self.domain_size).reshape(self.n_targets, self.domain_size)

    def token_ids(self) -> dict[str, np.ndarray]:
        """Vocabulary ids of the new tokens (old vocabulary size + new-row index): prefix (n,), secrets (n, m)."""
        vocab = self._base()[0].get_output_embeddings().weight.shape[0]
        return {"prefix": vocab + self.prefix_rows(), "secrets": vocab + self.secret_rows()}

    # -- training ------------------------------------------------------------------------------------
    def _base(self):
        return self.model.load()

    def _init_rows(self, generator):
        """n_new rows ~ N(0, s^2) with s the std of the pretrained input embeddings (times init_scale)."""
        import torch

        model, _ = self._base()
        weight = model.get_input_embeddings().weight
        std = float(weight.float().std()) * self.init_scale
        rows = torch.randn(self.n_new_tokens, weight.shape[1], generator=generator, dtype=torch.float32) * std
        return rows.to(dtype=weight.dtype)

    def build(self, seed: int):
        """A fresh canary model (new rows drawn from `seed`) on the model's device, in train mode.

        Exactly its trained parameters (trained_parameters()) have requires_grad set. With trainable
        body, clipping fast refuses here a body layer type it has no closed form for, and the opacus
        modes get the layers opacus knows (see _opacus_ready).
        """
        import torch

        model, _ = self._base()
        init = self._init_rows(torch.Generator().manual_seed(int(seed)))
        module = _canary_module(model, self.n_new_tokens, init, self.trainable).to(model.device)
        module.train()  # from_pretrained gives eval mode; dropout of the body as in fine-tuning
        module.body.requires_grad_(False)
        module.old_head.requires_grad_(False)
        if self.trainable == "body":
            if self.clipping in ("ghost", "hooks"):
                _opacus_ready(module)
            for _, p in module.body_parameters():
                p.requires_grad_(True)
            module.fast_layers = _fast_layers(module) if self.clipping == "fast" else []
        else:
            module.fast_layers = []
        return module

    def release_stage(self, config, X, seed: int, trial: int) -> tuple[str, dict]:
        """The release's cache key: the model, the resolved mechanism config (its model aside), the calibrated
        sigma, the canaries' secrets, the seed and the trial (the key the LLM case study has always used, so
        trainings done before the one game are reused)."""
        mechanism = {k: v for k, v in dict(config).items() if k != "model"}
        return "dpsgd_release", {"stage": "dpsgd_release", "version": RELEASE_STAGE_VERSION,
                                 "model": self.model.identity(), "mechanism": mechanism,
                                 "noise_multiplier": self.noise_multiplier,
                                 "secrets": np.asarray(X).tolist(), "seed": int(seed), "trial": int(trial),
                                 "keep_checkpoint": False}

    def release(self, X, rng: np.random.Generator) -> np.ndarray:
        """Train on the canaries with secrets X (fresh new rows from rng) and return the (n, m) log-probabilities."""
        x = check_records(X, self.domain_size)
        if x.shape[0] != self.n_targets:
            raise ValueError(f"X must hold one secret per canary ({self.n_targets}), got {x.shape[0]}; "
                             f"set the mechanism's n_targets to the prior's.")
        seed = int(rng.integers(0, 2**62))
        module = self.build(seed)
        self.train(module, x, seed)
        out = self.candidate_log_probs(module)
        self.last_rows = {"new_in": module.new_in.weight.detach().float().cpu().numpy(),
                          "new_out": module.new_out.weight.detach().float().cpu().numpy(),
                          **{name: p.detach().float().cpu().numpy() for name, p in module.body_parameters()}}
        return out

    def _targets(self, x: np.ndarray):
        import torch

        prefix = torch.as_tensor(self.prefix_rows(), dtype=torch.long)
        secret = torch.as_tensor(self.secret_rows()[np.arange(self.n_targets), x], dtype=torch.long)
        return prefix, secret

    def train(self, module, x: np.ndarray, seed: int, steps: int | None = None, on_step=None) -> None:
        """Run DP-SGD (or the non-private baseline) for `steps` (default self.steps) on canary secrets x.

        on_step(k), if given, is called after step k (1, 2, ...) has updated the parameters (the
        benchmark's clock; opacus's wrapping happens before step 1).

        Everything random derives from seed: Poisson sampling (seed + 1), the noise (seed + 2), and the
        body's dropout (GPT-2), which draws from torch's global generator, seeded with seed + 3 inside a
        fork that restores the caller's generator state afterwards.
        """
        import torch

        steps = self.steps if steps is None else int(steps)
        device = module.new_in.weight.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.random.default_generator.manual_seed(seed + 3)
            if device.type == "cuda":
                with torch.cuda.device(device):
                    torch.cuda.manual_seed(seed + 3)
            if self.clipping in ("ghost", "hooks"):
                return self._train_opacus(module, x, seed, steps, on_step)
            return self._train_closed_form(module, x, seed, steps, on_step)

    def _train_closed_form(self, module, x: np.ndarray, seed: int, steps: int, on_step=None) -> None:
        """clipping fast (our closed form) or none (plain SGD), Poisson sampling, noise on every trained parameter."""
        import torch

        device = module.new_in.weight.device
        prefix, secret = self._targets(x)
        prefix, secret = prefix.to(device), secret.to(device)
        old_vocab = module.old_head.weight.shape[0]
        sampler = torch.Generator().manual_seed(seed + 1)
        noise_gen = torch.Generator(device=device).manual_seed(seed + 2)
        expected_batch = self.sample_rate * self.n_targets
        params = module.trained_parameters()
        for step in range(1, steps + 1):
            chosen = torch.rand(self.n_targets, generator=sampler) < self.sample_rate  # Poisson sampling
            idx = chosen.nonzero()[:, 0].to(device)
            if self.clipping == "none":
                self._step_nonprivate(module, prefix[idx], secret[idx])
            else:
                grads = self._clipped_sum(module, prefix[idx], secret[idx], old_vocab) if idx.numel() else \
                    [torch.zeros_like(p) for p in params]  # noise alone on every trained parameter
                with torch.no_grad():
                    self._noisy_update(params, grads, noise_gen, expected_batch)
            if on_step is not None:
                on_step(step)

    def _noisy_update(self, params, grads, noise_gen, expected_batch) -> None:
        """p -= lr (g + sigma C N(0, I)) / expected batch, for every trained parameter.

        The new rows draw their noise one tensor at a time (as they always have: releases of trainable
        rows stay reproducible across versions); the body's noise is one draw of its total size, split
        into the parameters' shapes, and the update is one fused multi-tensor add (few kernel launches).
        """
        import torch

        device = params[0].device
        scale = self.noise_multiplier * self.clip_norm
        for p, g in zip(params[:2], grads[:2]):
            noise = torch.randn(p.shape, generator=noise_gen, device=device, dtype=p.dtype)
            p.sub_(self.learning_rate * (g + scale * noise) / expected_batch)
        body, body_grads = params[2:], grads[2:]
        if not body:
            return
        sizes = [p.numel() for p in body]
        flat = torch.randn(sum(sizes), generator=noise_gen, device=device, dtype=body[0].dtype)
        noises = [n.view(p.shape) for n, p in zip(torch.split(flat, sizes), body)]
        steps = torch._foreach_add(body_grads, noises, alpha=scale)
        torch._foreach_add_(body, steps, alpha=-self.learning_rate / expected_batch)

    def per_example_gradients(self, module, prefix, secret, layers=()):
        """The exact per-example gradients' parts: (h, u, g, captured).

        grad_out_i = u_i h_i^T and grad_in_i = g_i at row prefix_i, with u_i = (softmax(logits_i) -
        e_{secret_i}) restricted to the new rows and g_i = dL_i / d new_in[prefix_i]. For each (layer, kind)
        of `layers` (body layers, see _fast_layers), captured holds (a, o): the layer's input a (forward
        hook, [B, features], the model's dtype) and the gradient o of the summed loss w.r.t. its output
        ([B, features], float32); o_i is
        example i's own output gradient because examples do not interact. The body's weights do not
        require grad during the pass, so the one backward computes input gradients only.
        """
        import torch

        old_vocab = module.old_head.weight.shape[0]
        inputs, outputs = {}, {}

        def capture(layer, args, output):
            if layer in inputs:
                raise RuntimeError(f"{type(layer).__name__} ran twice in one forward pass; clipping=fast needs each "
                                   f"trained body layer to run once per example.")
            inputs[layer], outputs[layer] = args[0], output

        handles = [layer.register_forward_hook(capture) for layer, _ in layers]
        body = [p for _, p in module.body_parameters()]
        flags = [p.requires_grad for p in body]
        try:
            for p in body:
                p.requires_grad_(False)
            embeds = module.new_in.weight[prefix].detach().requires_grad_(True)
            with torch.enable_grad():
                h = module.hidden(embeds)
            with torch.no_grad():  # dL/dh in closed form, no graph through the (large) softmax
                logits = module.logits_from_hidden(h.detach())
                target = secret + old_vocab
                # dL/dh for the summed loss; examples are independent, so one backward gives every g_i
                probs = torch.log_softmax(logits.float(), dim=1).exp()  # (as before: bit-identical releases)
                probs[torch.arange(len(target), device=target.device), target] -= 1.0
                weight = torch.cat([module.old_head.weight, module.new_out.weight], dim=0).float()
                grad_h = probs @ weight
            with torch.enable_grad():
                wrt = [outputs[layer] for layer, _ in layers]
                g, *grad_outputs = torch.autograd.grad(h, [embeds, *wrt], grad_outputs=grad_h.to(h.dtype),
                                                       allow_unused=True)
        finally:
            for handle in handles:
                handle.remove()
            for p, flag in zip(body, flags):
                p.requires_grad_(flag)
        batch = len(target)
        captured = []
        for (layer, kind), o, out in zip(layers, grad_outputs, wrt):
            a = inputs[layer]
            if a.shape[0] != batch or a.numel() != batch * a.shape[-1] or out.numel() != batch * out.shape[-1]:
                raise RuntimeError(f"clipping=fast needs one-token inputs, but a {type(layer).__name__} saw an input of "
                                   f"shape {tuple(a.shape)} for {batch} examples.")
            o = torch.zeros_like(out) if o is None else o  # an output that does not reach the loss
            captured.append((a.detach().reshape(batch, -1), o.reshape(batch, -1).float()))
        u = probs[:, old_vocab:]
        return h.detach().float(), u, g.float(), captured

    @staticmethod
    def _normalized(layer, kind: str, a):
        """x_hat (float32) of a norm layer's input a [B, H], computed as the layer computes it."""
        import torch

        x = a.float()
        if kind == "layernorm":
            mean = x.mean(-1, keepdim=True)
            var = x.var(-1, unbiased=False, keepdim=True)
            return (x - mean) * torch.rsqrt(var + layer.eps)
        # LlamaRMSNorm: float32 normalisation, cast back to the input dtype before the weight multiplies
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + layer.variance_epsilon)).to(a.dtype).float()

    def _clipped_sum(self, module, prefix, secret, old_vocab):
        """sum_i min(1, C / ||G_i||) G_i for every trained parameter, in closed form (no per-sample hooks).

        Returns one tensor per module.trained_parameters(), in that order. ||G_i||^2 adds the rows'
        ||u_i||^2 ||h_i||^2 + ||g_i||^2 and, per body layer, ||a_i||^2 ||o_i||^2 (+ ||o_i||^2 for a bias) for a
        linear layer, ||o_i * x_hat_i||^2 (+ ||o_i||^2) for a norm layer.

        Layers of equal shape (a transformer repeats its blocks) are handled together: their captured
        tensors are stacked, so the squared norms take one reduction and the clipped sums one batched
        matmul per shape group instead of a few small kernels per layer (a GPU step is launch-bound).
        """
        import torch

        layers = module.fast_layers
        h, u, g, captured = self.per_example_gradients(module, prefix, secret, layers)
        sq = (u * u).sum(1) * (h * h).sum(1) + (g * g).sum(1)
        groups: dict = {}  # (kind, a width, o width) -> indices into layers
        for index, ((layer, kind), (a, o)) in enumerate(zip(layers, captured)):
            groups.setdefault((kind, a.shape[1], o.shape[1]), []).append(index)
        stacked = {}
        for key, members in groups.items():
            kind = key[0]
            o = torch.stack([captured[m][1] for m in members])  # [L, B, out] float32
            o2 = (o * o).sum(2)  # [L, B]
            if kind in ("linear", "conv1d"):
                part = torch.stack([captured[m][0] for m in members]).float()  # [L, B, in]
                sq = sq + ((part * part).sum(2) * o2).sum(0)
            else:
                part = torch.stack([self._normalized(layers[m][0], kind, captured[m][0]) for m in members]) * o
                sq = sq + (part * part).sum((0, 2))
            has_bias = torch.tensor([getattr(layers[m][0], "bias", None) is not None for m in members],
                                    device=o.device, dtype=o.dtype)
            sq = sq + (o2 * has_bias[:, None]).sum(0)
            stacked[key] = (o, part)
        factor = (self.clip_norm / (torch.sqrt(sq) + 1e-6)).clamp(max=1.0)  # opacus's clipping factor
        sums = {}
        grad_in = torch.zeros_like(module.new_in.weight, dtype=torch.float32)
        grad_in.index_add_(0, prefix, g * factor[:, None])
        sums[id(module.new_in.weight)] = grad_in
        sums[id(module.new_out.weight)] = (u * factor[:, None]).T @ h
        for key, members in groups.items():
            kind = key[0]
            o, part = stacked[key]
            oc = o * factor[None, :, None]  # [L, B, out]
            if kind == "linear":  # weight out x in: G^T diag(c) A
                weights = torch.bmm(oc.transpose(1, 2), part)
            elif kind == "conv1d":  # weight in x out: A^T diag(c) G
                weights = torch.bmm(part.transpose(1, 2), oc)
            else:  # per-example weight gradients [L, B, H], clipped and summed
                weights = (part * factor[None, :, None]).sum(1)
            biases = oc.sum(1)
            for position, m in enumerate(members):
                layer = layers[m][0]
                sums[id(layer.weight)] = weights[position]
                if getattr(layer, "bias", None) is not None:
                    sums[id(layer.bias)] = biases[position]
        out = []
        for p in module.trained_parameters():
            if id(p) not in sums:
                raise RuntimeError(f"clipping=fast has no per-example gradient for a trained parameter of shape "
                                   f"{tuple(p.shape)}; this is a bug.")
            out.append(sums[id(p)].to(p.dtype))
        return out

    def _step_nonprivate(self, module, prefix, secret) -> None:
        """Plain SGD on the mean loss of the batch (the non-private baseline of the benchmark)."""
        import torch

        if prefix.numel() == 0:
            return
        old_vocab = module.old_head.weight.shape[0]
        params = module.trained_parameters()
        for p in params:
            p.grad = None
        with torch.enable_grad():
            loss = torch.nn.functional.cross_entropy(module(prefix).float(), secret + old_vocab, reduction="sum")
            (loss / (self.sample_rate * self.n_targets)).backward()
        with torch.no_grad():
            for p in params:
                p.sub_(self.learning_rate * p.grad)
                p.grad = None

    def _train_opacus(self, module, x: np.ndarray, seed: int, steps: int, on_step=None) -> None:
        """The same DP-SGD through opacus's PrivacyEngine (grad_sample_mode hooks or ghost), Poisson sampling."""
        import torch
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        device = module.new_in.weight.device
        prefix, secret = self._targets(x)
        old_vocab = module.old_head.weight.shape[0]
        loader = DataLoader(TensorDataset(prefix, secret + old_vocab), batch_size=self.batch_size,
                            generator=torch.Generator().manual_seed(seed + 1))
        optimizer = torch.optim.SGD(module.trained_parameters(), lr=self.learning_rate)
        engine = PrivacyEngine(accountant="prv")
        criterion = torch.nn.CrossEntropyLoss()
        common = dict(module=module, optimizer=optimizer, data_loader=loader, noise_multiplier=self.noise_multiplier,
                      max_grad_norm=self.clip_norm, poisson_sampling=True, grad_sample_mode=self.clipping,
                      noise_generator=torch.Generator(device=device).manual_seed(seed + 2))
        if self.clipping == "ghost":
            private, optimizer, criterion, loader = engine.make_private(criterion=criterion, **common)
        else:
            private, optimizer, loader = engine.make_private(**common)
        done = 0
        while done < steps:
            for batch_prefix, batch_target in loader:
                optimizer.zero_grad()
                loss = criterion(private(batch_prefix.to(device)).float(), batch_target.to(device))
                loss.backward()
                optimizer.step()
                done += 1
                if on_step is not None:
                    on_step(done)
                if done >= steps:
                    break
        if hasattr(private, "_close"):
            private._close()

    # -- the release ---------------------------------------------------------------------------------
    def candidate_log_probs(self, module) -> np.ndarray:
        """log p(secret j of canary i | prefix i) over the whole vocabulary, eval mode: float array (n, m)."""
        import torch

        module.eval()
        device = module.new_in.weight.device
        with torch.no_grad():
            prefix = torch.as_tensor(self.prefix_rows(), dtype=torch.long, device=device)
            log_probs = torch.log_softmax(module(prefix).float(), dim=1)
            old_vocab = module.old_head.weight.shape[0]
            secrets = torch.as_tensor(self.secret_rows() + old_vocab, dtype=torch.long, device=device)
            out = torch.gather(log_probs, 1, secrets)
        return out.cpu().numpy().astype(np.float64)

    def params(self) -> dict:
        return {
            "mechanism": self.name, "model": self.model.params(), "private": self.private,
            # the noise's settings wherever clipped SGD ran (a vacuous epsilon included); None for clipping=none
            "epsilon": self.epsilon if self.clipping != "none" else None,
            "delta": self.delta if self.clipping != "none" else None,
            "noise_multiplier": self.noise_multiplier if self.clipping != "none" else None, "clip_norm": self.clip_norm,
            "learning_rate": self.learning_rate, "epochs": self.epochs, "batch_size": self.batch_size,
            "sample_rate": self.sample_rate, "steps": self.steps, "n_targets": self.n_targets,
            "domain_size": self.domain_size, "clipping": self.clipping, "init_scale": self.init_scale,
            "trainable": self.trainable,
        }
