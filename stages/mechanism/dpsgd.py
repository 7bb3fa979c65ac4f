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

Trials side by side (`side_by_side`, default auto; the game hands its trials to release_side_by_side): R trials
train as one stacked computation (_trial_stack: the new rows [R, n_new, d] and, for body, one body copy whose
trained layers carry a leading trial axis), their batches as one trial-major batch, each trial with its own
canaries, Poisson batches, clipping, noise and dropout masks drawn from its own seeds in its own order, so a trial
equals its training alone up to float round-off (the order of additions in batched matmuls; tested to 1e-4 on the
tiny models). trials_side_by_side(R) decides how many go together from a memory estimate made before training
(side_by_side_bytes against the free memory of the model's device). clipping fast and none only.

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
import logging
import math
from typing import Any

import numpy as np

from stages._bisect import NOISE_RTOL, smallest_noise
from stages.bound import _validate
from stages.bound.profiles import DPSGD as DPSGDProfile
from stages.mechanism import check_records, gaussian_mu, judge_privacy

__all__ = ["DPSGDFineTuning", "calibrate_noise_multiplier", "opacus_epsilon", "CLIPPING", "TRAINABLE"]

log = logging.getLogger(__name__)

CLIPPING = ("fast", "ghost", "hooks", "none")
#: What a clipping=none run says about its privacy (metrics.json, figures).
NON_PRIVATE_REASON = "mechanism.clipping=none: plain SGD without clipping or noise, so no privacy guarantee and no bound"
TRAINABLE = ("rows", "body")


def calibrate_noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int,
                               neighboring: str = "replace_one", rtol: float = NOISE_RTOL) -> float:
    """The smallest sigma (to rtol) whose DPSGD(sigma, sample_rate, steps, neighboring) profile is (epsilon, delta)-DP.

    At sample_rate 1 the profile is mu-GDP with mu = c sqrt(steps) / sigma (c = 2 replace-one, 1
    add/remove), so sigma = c sqrt(steps) / mu(epsilon, delta) in closed form; otherwise a bisection on
    log sigma against the profile's own epsilon(delta) (the PLD accountant), the noise calibration that
    stages.bound's calibrate_noise shares (stages._bisect.smallest_noise, rtol NOISE_RTOL). The returned sigma is
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
    # Subsampling only amplifies privacy, so the full-batch sigma meets the target: start an octave below it and
    # go down at most to 1e-4 (log2(hi / 1e-4) halvings) before the bisection (a bounded number of steps)
    hi = full_batch_sigma()
    return smallest_noise(lambda sigma: epsilon_of(sigma) <= eps, hi / 2, hi, floor=1e-4, rtol=tol)


def _side_by_side_setting(value: Any, clipping: str) -> str | int | bool:
    """side_by_side as given: "auto" (true too), false (one trial at a time; 0, 1 and "off" too) or a number of
    trials >= 2 (at most that many together, memory permitting)."""
    if value is True or value == "auto":
        return "auto"
    if value is False or value is None or value in ("off", "false"):
        return False
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        if value <= 1:
            return False
        if clipping in ("ghost", "hooks"):
            raise ValueError(f"side_by_side={int(value)} needs clipping fast or none (opacus trains one model at a time), "
                             f"got clipping={clipping}; set side_by_side to auto or false.")
        return int(value)
    raise ValueError(f"side_by_side must be auto, false or a number of trials trained together (>= 1), got {value!r}.")


#: The bound of calibrate_noise_multiplier's nudges of the closed form (1e-9 relative, doubling: up to a factor ~3
#: in all; its bisection is bounded by stages._bisect's).
_NUDGES = 31


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
            return _body_parameters(self.body) if self.trainable == "body" else []

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


# -- trials side by side: R trials' canary models as one module ----------------------------------------

#: Share of the free memory (the GPU's on CUDA, else this process's) that trials side by side may fill.
SIDE_BY_SIDE_MEMORY_FRACTION = 0.5
#: Margin on the per-trial memory estimate (allocator slack, temporaries the estimate does not name).
SIDE_BY_SIDE_MARGIN = 1.5


def _layer_kind(layer) -> str | None:
    """linear | conv1d | layernorm | rmsnorm for the body layer types clipping=fast (and side by side) handle, else None."""
    from torch import nn
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.pytorch_utils import Conv1D

    kinds = ((nn.Linear, "linear"), (Conv1D, "conv1d"), (nn.LayerNorm, "layernorm"), (LlamaRMSNorm, "rmsnorm"))
    kind = next((k for cls, k in kinds if type(layer) is cls), None)
    if kind == "layernorm" and len(layer.normalized_shape) != 1:
        return None
    return kind


def _body_layers(body) -> list:
    """(parent, name, layer) of every body module holding parameters of its own, nn.Embedding tables aside."""
    from torch import nn

    out = []
    for parent in body.modules():
        for name, child in parent.named_children():
            if not isinstance(child, nn.Embedding) and any(True for _ in child.parameters(recurse=False)):
                out.append((parent, name, child))
    return out


def _trial_stack(model, inits, trainable: str):
    """R trials' canary models as one module (inits: [R, n_new, d], each trial's initial new rows).

    The trials' examples run as one batch, trial-major (trial r's B examples are rows r B .. r B + B - 1).
    new_in and new_out are [R, n_new, d]: trial r's prefixes read rows of its own new_in, and its logits over
    the new rows are its hidden states times its own new_out (one batched matmul). trainable "rows" shares the
    loaded body (frozen) across the trials; "body" gets one copy of the body in which every layer holding
    trained parameters (nn.Linear, GPT-2's Conv1D, 1-d LayerNorm, LlamaRMSNorm) is replaced by a stacked one
    whose weight has a leading trial axis [R, ...] and which applies trial r's weights to trial r's rows
    (a batched matmul; a norm's normalisation then trial r's weight), so one forward and one backward pass
    serve every trial. Examples never interact (one-token inputs), so nothing else of the body needs a trial
    axis; the embedding tables stay shared and frozen. The parameters' order (trained_parameters) is the one
    a trial's own canary model has, so each trial draws its noise exactly as it would alone.
    """
    import torch
    from torch import nn

    trials = int(inits.shape[0])

    class StackedLinear(nn.Module):
        """R copies of an nn.Linear (weight [R, out, in]) or GPT-2 Conv1D (weight [R, in, out])."""

        def __init__(self, layer, kind: str) -> None:
            super().__init__()
            self.kind = kind
            self.weight = nn.Parameter(layer.weight.detach()[None].repeat(trials, 1, 1), requires_grad=False)
            bias = getattr(layer, "bias", None)
            self.bias = None if bias is None else nn.Parameter(bias.detach()[None].repeat(trials, 1), requires_grad=False)

        def forward(self, x):
            flat = x.reshape(trials, -1, x.shape[-1])
            weight = self.weight.transpose(1, 2) if self.kind == "linear" else self.weight  # [R, in, out]
            out = torch.bmm(flat, weight) if self.bias is None else torch.baddbmm(self.bias[:, None, :], flat, weight)
            return out.reshape(*x.shape[:-1], out.shape[-1])

    class StackedNorm(nn.Module):
        """R copies of a 1-d nn.LayerNorm or a LlamaRMSNorm (weight, bias [R, H]), computed as the layer computes."""

        def __init__(self, layer, kind: str) -> None:
            super().__init__()
            self.kind = kind
            self.weight = nn.Parameter(layer.weight.detach()[None].repeat(trials, 1), requires_grad=False)
            bias = getattr(layer, "bias", None) if kind == "layernorm" else None
            self.bias = None if bias is None else nn.Parameter(bias.detach()[None].repeat(trials, 1), requires_grad=False)
            if kind == "layernorm":
                self.eps = layer.eps
            else:
                self.variance_epsilon = layer.variance_epsilon

        def forward(self, x):
            flat = x.reshape(trials, -1, x.shape[-1])
            if self.kind == "layernorm":
                out = torch.nn.functional.layer_norm(flat, (flat.shape[-1],), None, None, self.eps) * self.weight[:, None]
                if self.bias is not None:
                    out = out + self.bias[:, None]
            else:  # LlamaRMSNorm's own steps: float32 normalisation, back to the input dtype, then the weight
                h = flat.to(torch.float32)
                h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
                out = self.weight[:, None] * h.to(flat.dtype)
            return out.reshape(x.shape)

    body = model.base_model
    if trainable == "body":
        shared = {id(p): p for p in body.parameters()}  # the trained layers are replaced below; nothing is copied twice
        body = copy.deepcopy(body, memo=shared)
        for parent, name, layer in _body_layers(body):
            kind = _layer_kind(layer)
            if kind is None:
                raise ValueError(f"trials side by side support nn.Linear, GPT-2's Conv1D, 1-d nn.LayerNorm and "
                                 f"LlamaRMSNorm body layers, but {name} is a {type(layer).__name__}; set "
                                 f"mechanism.side_by_side=false for this model.")
            stacked = (StackedLinear if kind in ("linear", "conv1d") else StackedNorm)(layer, kind)
            stacked.train(layer.training)
            setattr(parent, name, stacked)  # same place in the parent: the parameter order is kept
    old_head = model.get_output_embeddings()

    class TrialStack(nn.Module):
        """logits over old + new vocabulary of R trials' one-token inputs (prefix: [R, B] new-row indices)."""

        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.old_head = old_head
            self.trainable = trainable
            self.trials = trials
            self.new_in = nn.Parameter(inits.clone(), requires_grad=False)
            self.new_out = nn.Parameter(inits.clone(), requires_grad=False)

        def body_parameters(self) -> list:
            """(name, stacked parameter) of the trained body, in a trial's own canary model's order; [] for rows."""
            return _body_parameters(self.body) if self.trainable == "body" else []

        def trained_parameters(self) -> list:
            return [self.new_in, self.new_out, *(p for _, p in self.body_parameters())]

        def stacked_layers(self) -> list:
            """(layer, kind) of every stacked body layer, in the body's order ([] for rows)."""
            return [(m, m.kind) for m in self.body.modules() if isinstance(m, (StackedLinear, StackedNorm))]

        def rows(self, prefix):
            """Flat indices into new_in viewed as [R n_new, d] of the prefixes [R, B]."""
            offsets = torch.arange(trials, device=prefix.device)[:, None] * self.new_in.shape[1]
            return (prefix + offsets).reshape(-1)

        def embeds(self, prefix):
            return self.new_in.reshape(-1, self.new_in.shape[-1])[self.rows(prefix)]

        def hidden(self, embeds):
            positions = torch.zeros(embeds.shape[0], 1, dtype=torch.long, device=embeds.device)
            out = self.body(inputs_embeds=embeds[:, None, :], position_ids=positions, use_cache=False)
            return out.last_hidden_state[:, 0]

        def new_logits(self, h):
            """[R B, n_new]: trial r's rows of h times its own new_out."""
            return torch.bmm(h.reshape(trials, -1, h.shape[-1]), self.new_out.transpose(1, 2)).reshape(h.shape[0], -1)

        def logits_from_hidden(self, h):
            return torch.cat([self.old_head(h), self.new_logits(h)], dim=1)

        def forward(self, prefix):
            return self.logits_from_hidden(self.hidden(self.embeds(prefix)))

    return TrialStack()


def _has_dropout(model) -> bool:
    """Whether the body draws random numbers in train mode (an nn.Dropout or an attention dropout above 0)."""
    from torch import nn

    config = getattr(model, "config", None)
    attention = max(float(getattr(config, name, 0.0) or 0.0) for name in ("attention_dropout", "attn_pdrop"))
    return attention > 0 or any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.base_model.modules())


def _dropout_replay(generators, device, one_token_attention: bool = False):
    """A torch function mode giving each trial of a trial-major batch the dropout masks it draws alone.

    generators: one per trial (None: no dropout to replay). Trial r's dropout draws from its own generator
    (seeded seed + 3, as its training alone seeds torch's global one), with the shapes and in the order its own
    forward pass draws them: F.dropout (nn.Dropout) draws a mask of its input's shape, and
    F.scaled_dot_product_attention with dropout_p > 0 draws one of its attention weights' shape [B, heads, 1, 1]
    (one-token inputs: the weights are exactly 1, so the output is the undropped attention's output times that
    mask). A mask is drawn as torch's CPU dropout draws it (bernoulli_(1 - p) on an empty tensor of the input's
    dtype, divided by 1 - p), so on the CPU a trial's masks are bit for bit those of its training alone. Rows
    past a trial's batch (padding) get ones. set_batch(counts, rows) says how many examples each trial has in the
    next pass and the rows per trial.

    one_token_attention: attention over one query and one key (no mask) returns the values themselves (repeated
    over the query heads of a grouped-query attention): its softmax weight is exactly 1, so that is what
    scaled_dot_product_attention computes, without its kernel's cost; the queries and keys then get no gradient,
    which is their exact gradient (a one-key softmax is constant).
    """
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    sdpa_names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")

    class DropoutReplay(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.counts: list[int] = []
            self.per_trial = 0

        def set_batch(self, counts, per_trial: int) -> None:
            self.counts, self.per_trial = [int(c) for c in counts], int(per_trial)

        def noise(self, shape, dtype, p: float):
            trials = len(generators)
            if shape[0] != trials * self.per_trial:
                raise RuntimeError(f"trials side by side: a dropout input of {shape[0]} rows in a pass of {trials} trials "
                                   f"x {self.per_trial} rows; this is a bug.")
            mask = torch.ones((trials, self.per_trial, *shape[1:]), dtype=dtype, device=device)
            for r, (count, generator) in enumerate(zip(self.counts, generators)):
                if count:
                    drawn = torch.empty((count, *shape[1:]), dtype=dtype, device=device)
                    mask[r, :count] = drawn.bernoulli_(1 - p, generator=generator).div_(1 - p)
            return mask.reshape(shape)

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is F.dropout and generators is not None:
                bound = {**dict(zip(("input", "p", "training", "inplace"), args)), **kwargs}
                p, training = float(bound.get("p", 0.5)), bool(bound.get("training", True))
                if training and p > 0:
                    x = bound["input"]
                    noise = self.noise(x.shape, x.dtype, p)
                    return x.mul_(noise) if bound.get("inplace", False) else x * noise
            elif func is F.scaled_dot_product_attention:
                bound = {**dict(zip(sdpa_names, args)), **kwargs}
                p = float(bound.get("dropout_p", 0.0) or 0.0)
                shortcut = one_token_attention and bound.get("attn_mask") is None
                if (p > 0 and generators is not None) or shortcut:
                    query, key, value = bound["query"], bound["key"], bound["value"]
                    if query.shape[-2] != 1 or key.shape[-2] != 1:
                        raise RuntimeError("trials side by side need one-token inputs, got attention query / key lengths "
                                           f"{query.shape[-2]} / {key.shape[-2]}.")
                    if shortcut:
                        heads, kv_heads = query.shape[-3], value.shape[-3]
                        out = value if heads == kv_heads else value.repeat_interleave(heads // kv_heads, dim=-3)
                    else:
                        out = func(**{**bound, "dropout_p": 0.0})
                    if p > 0:
                        out = out * self.noise((*query.shape[:-2], 1, 1), out.dtype, p)
                    return out
            return func(*args, **kwargs)

    return DropoutReplay()


def _body_parameters(body) -> list:
    """(name, parameter) of every parameter of ``body`` outside an nn.Embedding, each once, in module order (a single
    trial's canary model and the side-by-side stack list their trained body in this one order)."""
    from torch import nn

    out, seen = [], set()
    for module_name, module in body.named_modules():
        if isinstance(module, nn.Embedding):
            continue
        for name, p in module.named_parameters(recurse=False):
            if id(p) not in seen:
                seen.add(id(p))
                out.append((f"body.{module_name}.{name}" if module_name else f"body.{name}", p))
    return out


def _store_layer_sums(sums: dict, members: list, weights, biases) -> None:
    """Record a shape group's clipped sums under their parameters: member j's weight gets weights[j] and its bias
    (if it has one) biases[j] (one trial's sums, or every trial's stacked)."""
    for position, layer in enumerate(members):
        sums[id(layer.weight)] = weights[position]
        if getattr(layer, "bias", None) is not None:
            sums[id(layer.bias)] = biases[position]


def _sums_in_order(module, sums: dict, what: str) -> list:
    """The clipped sums in the order of module.trained_parameters() (each in its parameter's dtype)."""
    out = []
    for p in module.trained_parameters():
        if id(p) not in sums:
            raise RuntimeError(f"{what} has no per-example gradient for a trained parameter of shape "
                               f"{tuple(p.shape)}; this is a bug.")
        out.append(sums[id(p)].to(p.dtype))
    return out


def _free_memory(device) -> int | None:
    """Bytes still free for tensors on `device`: the GPU's free memory on CUDA, else stages.resources.available_memory."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    from stages.resources import available_memory

    return available_memory()


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
    #: Left out of the game's trials-stage key at its default (pipeline.game), so keys from before it existed hold.
    STAGE_KEY_DEFAULTS = {"side_by_side": "auto"}
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
        side_by_side: Any = "auto",
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
        self.side_by_side = _side_by_side_setting(side_by_side, clipping)
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
        """The release's cache key: the model, the resolved mechanism config (its model and side_by_side aside), the calibrated
        sigma, the canaries' secrets, the seed and the trial (the key the LLM case study has always used, so
        trainings done before the one game are reused)."""
        # side_by_side changes how trials are scheduled, not what a trial computes (within float round-off)
        mechanism = {k: v for k, v in dict(config).items() if k not in ("model", "side_by_side")}
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
        fork that restores the caller's generator state afterwards (on a GPU, clipping fast / none draw the
        dropout masks from a generator seeded seed + 3 as trials side by side do: _dropout_replay).
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
        import contextlib

        import torch

        device = module.new_in.weight.device
        prefix, secret = self._targets(x)
        prefix, secret = prefix.to(device), secret.to(device)
        old_vocab = module.old_head.weight.shape[0]
        sampler = torch.Generator().manual_seed(seed + 1)
        noise_gen = torch.Generator(device=device).manual_seed(seed + 2)
        expected_batch = self.sample_rate * self.n_targets
        params = module.trained_parameters()
        replay = None
        if device.type != "cpu" and _has_dropout(self._base()[0]):
            # CUDA's fused dropout draws otherwise than the CPU's: draw the masks as trials side by side draw them
            # (from a generator seeded seed + 3), so both give the same trial on a GPU too
            replay = _dropout_replay([torch.Generator(device=device).manual_seed(seed + 3)], device)
        for step in range(1, steps + 1):
            chosen = torch.rand(self.n_targets, generator=sampler) < self.sample_rate  # Poisson sampling
            idx = chosen.nonzero()[:, 0].to(device)
            if replay is not None:
                replay.set_batch([idx.numel()], idx.numel())
            with replay if replay is not None else contextlib.nullcontext():
                if self.clipping == "none":
                    self._step_nonprivate(module, prefix[idx], secret[idx])
                else:
                    grads = self._clipped_sum(module, prefix[idx], secret[idx], old_vocab) if idx.numel() else \
                        [torch.zeros_like(p) for p in params]  # noise alone on every trained parameter
            if self.clipping != "none":
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
            _store_layer_sums(sums, [layers[m][0] for m in members], weights, biases)
        return _sums_in_order(module, sums, "clipping=fast")

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

    # -- trials side by side -------------------------------------------------------------------------
    def _side_by_side_possible(self) -> bool:
        """Whether this setting can train trials side by side: clipping fast or none (not opacus), and with
        trainable body only the layer types the stacked body has (nn.Linear, Conv1D, 1-d LayerNorm, LlamaRMSNorm)."""
        if self.side_by_side is False or self.clipping not in ("fast", "none"):
            return False
        if self.trainable == "rows":
            return True
        model, _ = self._base()
        return all(_layer_kind(layer) is not None for _, _, layer in _body_layers(model.base_model))

    def side_by_side_bytes(self) -> int:
        """Estimated memory one more trial side by side takes, in bytes (the loaded model is not counted).

        Its trained parameters (the new rows; with trainable body also the body's stacked copy) with the float32
        tensors of their update (clipped sum, noise, step), and a full batch's activations: the logits, their
        softmax and its gradient over the whole vocabulary, and each body layer's input and output (and their
        gradients and the captured copies), times SIDE_BY_SIDE_MARGIN.
        """
        model, _ = self._base()
        embedding = model.get_input_embeddings().weight
        dim, itemsize = int(embedding.shape[1]), embedding.element_size()
        vocab = int(model.get_output_embeddings().weight.shape[0]) + self.n_new_tokens
        layers = _body_layers(model.base_model)
        trained = 2 * self.n_new_tokens * dim
        if self.trainable == "body":
            trained += sum(p.numel() for _, _, layer in layers for p in layer.parameters(recurse=False))
        widths = 0
        for _, _, layer in layers:
            weight = getattr(layer, "weight", None)
            widths += int(sum(weight.shape)) if weight is not None and weight.dim() == 2 else 2 * int(weight.numel())
        parameters = trained * (itemsize + 3 * 4)
        activations = self.n_targets * (3 * vocab * 4 + 4 * widths * 4 + 4 * dim * 4)
        return int(SIDE_BY_SIDE_MARGIN * (parameters + activations))

    def trials_side_by_side(self, trials: int) -> int:
        """How many of `trials` trials to train together (1: one after another): all of them, at most
        side_by_side of them when that is a number, and as many as fit in SIDE_BY_SIDE_MEMORY_FRACTION of the
        free memory of the model's device at side_by_side_bytes() each (estimated before any training)."""
        trials = int(trials)
        if trials < 2 or not self._side_by_side_possible():
            return 1
        cap = trials if self.side_by_side == "auto" else min(trials, int(self.side_by_side))
        model, _ = self._base()
        each = self.side_by_side_bytes()
        free = _free_memory(model.device)
        fit = cap if free is None else int(free * SIDE_BY_SIDE_MEMORY_FRACTION // each)
        together = max(1, min(cap, fit))
        log.info("DP-SGD trials side by side: %d of %d at a time (about %.0f MB each, %s free on %s)", together, trials,
                 each / 2**20, "unknown" if free is None else f"{free / 2**20:.0f} MB", model.device)
        return together

    def build_side_by_side(self, seeds):
        """R canary models as one TrialStack (see _trial_stack), trial r's new rows drawn from seeds[r] as build()
        draws them, on the model's device, in train mode; the stacked parameters require grad for clipping=none
        (autograd) only."""
        import torch

        model, _ = self._base()
        inits = torch.stack([self._init_rows(torch.Generator().manual_seed(int(seed))) for seed in seeds])
        module = _trial_stack(model, inits, self.trainable).to(model.device)
        module.train()
        module.body.requires_grad_(False)
        module.old_head.requires_grad_(False)
        for p in module.trained_parameters():
            p.requires_grad_(self.clipping == "none")
        module.fast_layers = module.stacked_layers()
        return module

    def release_side_by_side(self, Xs, rngs) -> list[np.ndarray]:
        """release(X, rng) of several trials trained side by side: the same numbers as one release per trial
        (same seeds; equal to float round-off, see train_side_by_side), one (n, m) array per trial."""
        xs = []
        for X in Xs:
            x = check_records(X, self.domain_size)
            if x.shape[0] != self.n_targets:
                raise ValueError(f"X must hold one secret per canary ({self.n_targets}), got {x.shape[0]}; "
                                 f"set the mechanism's n_targets to the prior's.")
            xs.append(x)
        if len(xs) != len(rngs) or not xs:
            raise ValueError(f"give one rng per trial, got {len(xs)} trials and {len(rngs)} rngs.")
        seeds = [int(rng.integers(0, 2**62)) for rng in rngs]
        module = self.build_side_by_side(seeds)
        self.train_side_by_side(module, xs, seeds)
        out = self.candidate_log_probs_side_by_side(module)
        self.last_rows = {"new_in": module.new_in[-1].detach().float().cpu().numpy(),
                          "new_out": module.new_out[-1].detach().float().cpu().numpy(),
                          **{name: p[-1].detach().float().cpu().numpy() for name, p in module.body_parameters()}}
        return out

    def train_side_by_side(self, module, xs, seeds, steps: int | None = None, on_step=None) -> None:
        """DP-SGD (or clipping=none) of R trials at once on a TrialStack: trial r as train(.., xs[r], seeds[r]).

        Each trial keeps its own canaries, its own Poisson sampler (seed + 1), noise generator (seed + 2) and
        dropout generator (seed + 3, replayed per trial: _dropout_replay), drawn in the order its training alone
        draws them, and its own clipping. A step runs every trial's sampled batch as one trial-major batch
        padded to the largest (padding rows count for nothing), so trial r's update is its own; what differs
        from training it alone is only the order of float additions inside the batched matmuls.
        """
        import torch

        steps = self.steps if steps is None else int(steps)
        device = module.new_in.device
        prefix = torch.as_tensor(self.prefix_rows(), dtype=torch.long, device=device)
        secrets = torch.stack([self._targets(x)[1] for x in xs]).to(device)  # [R, n]
        samplers = [torch.Generator().manual_seed(int(seed) + 1) for seed in seeds]
        noise_gens = [torch.Generator(device=device).manual_seed(int(seed) + 2) for seed in seeds]
        generators = None
        if _has_dropout(self._base()[0]):
            generators = [torch.Generator(device=device).manual_seed(int(seed) + 3) for seed in seeds]
        mode = _dropout_replay(generators, device, one_token_attention=True)
        expected_batch = self.sample_rate * self.n_targets
        params = module.trained_parameters()
        old_vocab = module.old_head.weight.shape[0]
        positions = torch.arange(self.n_targets)
        # the global generators are left as they were (nothing here should draw from them)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            for step in range(1, steps + 1):
                chosen = torch.stack([torch.rand(self.n_targets, generator=sampler) < self.sample_rate
                                      for sampler in samplers])  # [R, n], as each trial's sampler draws it
                counts = chosen.sum(1)
                rows = int(counts.max())
                if rows == 0:
                    grads = None
                else:
                    # each trial's chosen examples first, in increasing order (as nonzero() gives them), then padding
                    order = torch.argsort((~chosen).to(torch.int8), dim=1, stable=True)[:, :rows]
                    valid = positions[None, :rows] < counts[:, None]
                    idx = torch.where(valid, order, 0).to(device)
                    batch_prefix, batch_secret = prefix[idx], secrets.gather(1, idx)
                    valid = valid.to(device)
                    mode.set_batch(counts.tolist(), rows)
                    with mode:
                        if self.clipping == "none":
                            self._step_nonprivate_side_by_side(module, batch_prefix, batch_secret, valid, old_vocab)
                        else:
                            grads = self._clipped_sum_side_by_side(module, batch_prefix, batch_secret, valid, old_vocab)
                if self.clipping != "none":
                    if grads is None:
                        grads = [torch.zeros_like(p) for p in params]
                    with torch.no_grad():
                        self._noisy_update_side_by_side(params, grads, noise_gens, expected_batch)
                if on_step is not None:
                    on_step(step)

    def _noisy_update_side_by_side(self, params, grads, noise_gens, expected_batch) -> None:
        """_noisy_update of every trial at once: trial r's noise from noise_gens[r], drawn as it draws it alone."""
        import torch

        device = params[0].device
        scale = self.noise_multiplier * self.clip_norm
        for p, g in zip(params[:2], grads[:2]):
            noise = torch.stack([torch.randn(p.shape[1:], generator=gen, device=device, dtype=p.dtype) for gen in noise_gens])
            p.add_(g.add_(noise, alpha=scale), alpha=-self.learning_rate / expected_batch)  # g is ours to overwrite
        body, body_grads = params[2:], grads[2:]
        if not body:
            return
        sizes = [p[0].numel() for p in body]
        flat = torch.stack([torch.randn(sum(sizes), generator=gen, device=device, dtype=body[0].dtype)
                            for gen in noise_gens])  # [R, total]
        noises = [n.view(p.shape) for n, p in zip(torch.split(flat, sizes, dim=1), body)]
        steps = torch._foreach_add(body_grads, noises, alpha=scale)
        torch._foreach_add_(body, steps, alpha=-self.learning_rate / expected_batch)

    def _per_example_gradients_side_by_side(self, module, prefix, secret, old_vocab):
        """per_example_gradients of a TrialStack's trial-major batch (prefix, secret: [R, B]): (h, u, g, captured)
        over its R B rows, captured for module.fast_layers (the stacked body layers, whose parameters never
        require grad: the one backward computes input gradients only)."""
        import torch

        layers = module.fast_layers
        inputs, outputs = {}, {}

        def capture(layer, args, output):
            if layer in inputs:
                raise RuntimeError(f"{type(layer).__name__} ran twice in one forward pass; clipping=fast needs each "
                                   f"trained body layer to run once per example.")
            inputs[layer], outputs[layer] = args[0], output

        handles = [layer.register_forward_hook(capture) for layer, _ in layers]
        trials, rows = prefix.shape
        try:
            embeds = module.embeds(prefix).detach().requires_grad_(True)
            with torch.enable_grad():
                h = module.hidden(embeds)
            with torch.no_grad():
                logits = module.logits_from_hidden(h.detach())
                target = (secret + old_vocab).reshape(-1)
                probs = torch.softmax(logits.float(), dim=1)
                probs[torch.arange(len(target), device=target.device), target] -= 1.0
                grad_h = probs[:, :old_vocab] @ module.old_head.weight.float()
                grad_h += torch.bmm(probs[:, old_vocab:].reshape(trials, rows, -1),
                                    module.new_out.float()).reshape(len(target), -1)
            with torch.enable_grad():
                wrt = [outputs[layer] for layer, _ in layers]
                g, *grad_outputs = torch.autograd.grad(h, [embeds, *wrt], grad_outputs=grad_h.to(h.dtype),
                                                       allow_unused=True)
        finally:
            for handle in handles:
                handle.remove()
        batch = len(target)
        captured = []
        for (layer, kind), o, out in zip(layers, grad_outputs, wrt):
            a = inputs[layer]
            if a.shape[0] != batch or a.numel() != batch * a.shape[-1] or out.numel() != batch * out.shape[-1]:
                raise RuntimeError(f"clipping=fast needs one-token inputs, but a {type(layer).__name__} saw an input of "
                                   f"shape {tuple(a.shape)} for {batch} examples.")
            o = torch.zeros_like(out) if o is None else o
            captured.append((a.detach().reshape(batch, -1), o.reshape(batch, -1).float()))
        return h.detach().float(), probs[:, old_vocab:], g.float(), captured

    def _clipped_sum_side_by_side(self, module, prefix, secret, valid, old_vocab):
        """_clipped_sum of every trial of a TrialStack at once: one [R, ...] tensor per trained parameter, trial r's
        slice the clipped sum over its own examples (valid [R, B]: padding rows get clipping factor 0). The
        per-example squared norms are _clipped_sum's, row by row; the sums are batched over layers and trials."""
        import torch

        trials, rows = prefix.shape
        layers = module.fast_layers
        h, u, g, captured = self._per_example_gradients_side_by_side(module, prefix, secret, old_vocab)
        sq = (u * u).sum(1) * (h * h).sum(1) + (g * g).sum(1)
        groups: dict = {}
        for index, ((layer, kind), (a, o)) in enumerate(zip(layers, captured)):
            groups.setdefault((kind, a.shape[1], o.shape[1]), []).append(index)
        stacked = {}
        for key, members in groups.items():
            kind = key[0]
            o = torch.stack([captured[m][1] for m in members])  # [L, R B, out] float32
            o2 = (o * o).sum(2)
            if kind in ("linear", "conv1d"):
                part = torch.stack([captured[m][0] for m in members]).float()
                sq = sq + ((part * part).sum(2) * o2).sum(0)
            else:
                part = torch.stack([self._normalized(layers[m][0], kind, captured[m][0]) for m in members]) * o
                sq = sq + (part * part).sum((0, 2))
            has_bias = torch.tensor([getattr(layers[m][0], "bias", None) is not None for m in members],
                                    device=o.device, dtype=o.dtype)
            sq = sq + (o2 * has_bias[:, None]).sum(0)
            stacked[key] = (o, part)
        factor = (self.clip_norm / (torch.sqrt(sq) + 1e-6)).clamp(max=1.0) * valid.reshape(-1).to(sq.dtype)
        n_new, dim = module.new_in.shape[1], module.new_in.shape[2]
        sums = {}
        grad_in = torch.zeros(trials * n_new, dim, dtype=torch.float32, device=g.device)
        grad_in.index_add_(0, module.rows(prefix), g * factor[:, None])
        sums[id(module.new_in)] = grad_in.view(trials, n_new, dim)
        sums[id(module.new_out)] = torch.bmm(u.reshape(trials, rows, -1).transpose(1, 2),
                                             (h * factor[:, None]).reshape(trials, rows, -1))
        for key, members in groups.items():
            kind, count = key[0], len(members)
            o, part = stacked[key]
            oc = o * factor[None, :, None]  # [L, R B, out]
            if kind == "linear":  # weight [R, out, in]: G_r^T diag(c_r) A_r
                weights = torch.bmm(oc.reshape(count * trials, rows, -1).transpose(1, 2),
                                    part.reshape(count * trials, rows, -1)).reshape(count, trials, *oc.shape[2:],
                                                                                     part.shape[2])
            elif kind == "conv1d":  # weight [R, in, out]: A_r^T diag(c_r) G_r
                weights = torch.bmm(part.reshape(count * trials, rows, -1).transpose(1, 2),
                                    oc.reshape(count * trials, rows, -1)).reshape(count, trials, part.shape[2],
                                                                                   oc.shape[2])
            else:
                weights = (part * factor[None, :, None]).reshape(count, trials, rows, -1).sum(2)
            biases = oc.reshape(count, trials, rows, -1).sum(2)
            _store_layer_sums(sums, [layers[m][0] for m in members], weights, biases)
        return _sums_in_order(module, sums, "trials side by side")

    def _step_nonprivate_side_by_side(self, module, prefix, secret, valid, old_vocab) -> None:
        """_step_nonprivate of every trial at once (autograd through the stack; padding rows weigh 0)."""
        import torch

        params = module.trained_parameters()
        for p in params:
            p.grad = None
        with torch.enable_grad():
            losses = torch.nn.functional.cross_entropy(module(prefix).float(), (secret + old_vocab).reshape(-1),
                                                       reduction="none")
            loss = (losses * valid.reshape(-1).to(losses.dtype)).sum()
            (loss / (self.sample_rate * self.n_targets)).backward()
        with torch.no_grad():
            for p in params:
                if p.grad is not None:  # None: no gradient reaches it (one-token attention's queries and keys)
                    p.sub_(self.learning_rate * p.grad)
                p.grad = None

    def candidate_log_probs_side_by_side(self, module) -> list[np.ndarray]:
        """candidate_log_probs of every trial of a TrialStack (eval mode): one (n, m) float array per trial."""
        import torch

        module.eval()
        device = module.new_in.device
        trials = module.trials
        old_vocab = module.old_head.weight.shape[0]
        out = []
        with torch.no_grad(), _dropout_replay(None, device, one_token_attention=True):
            prefix = torch.as_tensor(self.prefix_rows(), dtype=torch.long, device=device)
            h = module.hidden(module.embeds(prefix[None].expand(trials, -1)))
            secrets = torch.as_tensor(self.secret_rows() + old_vocab, dtype=torch.long, device=device)
            for r in range(trials):  # one trial's logits at a time: n x vocabulary floats, not R times that
                rows = h[r * self.n_targets:(r + 1) * self.n_targets]
                logits = torch.cat([module.old_head(rows), rows @ module.new_out[r].T], dim=1)
                log_probs = torch.log_softmax(logits.float(), dim=1)
                out.append(torch.gather(log_probs, 1, secrets).cpu().numpy().astype(np.float64))
        return out

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
            "trainable": self.trainable, "side_by_side": self.side_by_side,
        }
