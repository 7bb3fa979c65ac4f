"""DP-SGD fine-tuning of a language model on new-token canaries; the release is each canary's log-probabilities.

Section 4.2 of the paper (after Panda et al. 2025): canary i is two new tokens, a prefix `<i>` and a
secret drawn from 10 new tokens of its own, so n = 100 canaries add n + n m = 1,100 rows to the
vocabulary. The model reads the prefix and is trained, with the loss on the secret only, by DP-SGD:
Poisson sampling at rate q, per-example clipping to norm C, Gaussian noise of standard deviation
sigma C on the clipped sum, division by the expected batch size (opacus's conventions).

What is trained: the 1,100 new rows only, untied (an input-embedding row per new token, used by the
prefixes, and an output row per new token, used by the softmax), both initialised from the same
seeded draw; the pretrained body stays frozen. One-token inputs make every per-example gradient
cheap and exact without per-sample hooks: for example i with final hidden state h_i, softmax p_i and
secret y_i, the output rows get (p_i - e_{y_i})[new] h_i^T (rank one, norm ||p_i - e_y||_new ||h_i||)
and the input row of its prefix gets g_i = dL_i / d(embedding of the prefix), one backward pass
through the frozen body for the whole batch (examples do not interact). `clipping: fast` uses that;
`ghost` and `hooks` run the same model through opacus's PrivacyEngine (for comparison and the
benchmark); `none` is the non-private baseline (no clipping, no noise).

Privacy: the noise multiplier sigma is the smallest whose `stages.bound.profiles.DPSGD(sigma, q,
steps, neighboring="replace_one")` profile meets (epsilon, delta) — the profile the bound then uses,
so training and bound cannot disagree. Replacing a canary moves the clipped sum by up to 2C, so this
sigma is about twice what an add/remove accountant (opacus's) asks for; params() records both
epsilons. The release a has shape (n, m): a[i, j] = log p_model(secret j of canary i | prefix i) over
the whole vocabulary.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import DPSGD as DPSGDProfile
from stages.bound.profiles import GaussianDP
from stages.mechanism import check_records

__all__ = ["DPSGDFineTuning", "calibrate_noise_multiplier", "opacus_epsilon", "CLIPPING"]

CLIPPING = ("fast", "ghost", "hooks", "none")


def calibrate_noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int,
                               neighboring: str = "replace_one", rtol: float = 1e-3) -> float:
    """The smallest sigma (to rtol) whose DPSGD(sigma, sample_rate, steps, neighboring) profile is (epsilon, delta)-DP.

    At sample_rate 1 the profile is mu-GDP with mu = c sqrt(steps) / sigma (c = 2 replace-one, 1
    add/remove), so sigma = c sqrt(steps) / mu(epsilon, delta) in closed form; otherwise a bisection on
    log sigma against the profile's own epsilon(delta) (the PLD accountant). The returned sigma is
    checked to satisfy the target.
    """
    eps = _validate.positive("epsilon", epsilon)
    d = _validate.delta("delta", delta)
    if d <= 0:
        raise ValueError(f"delta must be in (0, 1) for DP-SGD, got {delta!r}; no finite noise gives delta = 0.")
    steps = _validate.integer("steps", steps, minimum=1)

    def epsilon_of(sigma: float) -> float:
        return DPSGDProfile(sigma, sample_rate, steps, neighboring).epsilon(d)

    if float(sample_rate) >= 1.0:
        c = 2.0 if neighboring == "replace_one" else 1.0
        sigma = c * math.sqrt(steps) / float(GaussianDP.from_epsilon_delta(eps, d).mu)
        while epsilon_of(sigma) > eps:  # guard against the last ulp of the closed form
            sigma *= 1 + 1e-9
        return sigma
    # Subsampling only amplifies privacy, so the full-batch sigma meets the target: start below it.
    hi = calibrate_noise_multiplier(eps, d, 1.0, steps, neighboring)
    lo = hi / 2
    while epsilon_of(lo) <= eps and lo > 1e-4:
        lo, hi = lo / 2, lo
    while hi / lo > 1 + rtol:
        mid = math.sqrt(lo * hi)
        if epsilon_of(mid) <= eps:
            hi = mid
        else:
            lo = mid
    return hi


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


def _canary_module(model, n_new: int, init: "Any"):
    """The trainable canary model: the frozen LM with n_new untied new input rows and output rows."""
    import torch
    from torch import nn

    body = model.base_model
    old_head = model.get_output_embeddings()

    class CanaryModel(nn.Module):
        """logits over old + new vocabulary for one-token inputs given by their new-row index."""

        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.old_head = old_head
            dim = init.shape[1]
            self.new_in = nn.Embedding(n_new, dim)
            self.new_out = nn.Linear(dim, n_new, bias=False)
            with torch.no_grad():
                self.new_in.weight.copy_(init)
                self.new_out.weight.copy_(init)

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


class DPSGDFineTuning:
    """DP-SGD on n new-token canaries; release(X) = (n, m) log-probabilities of every candidate secret.

    Give epsilon (with delta) to calibrate the noise multiplier, or noise_multiplier directly (epsilon
    null). batch_size is the expected batch size (null: all n canaries): sample_rate q = 1 / ceil(n / batch_size) and
    steps = epochs / q, as opacus's Poisson data loader does.
    """

    name = "dpsgd"

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
            self.noise_multiplier = _validate.positive("noise_multiplier", noise_multiplier)
            self.epsilon = None
        elif epsilon is not None:
            self.epsilon = _validate.positive("epsilon", epsilon)
            self.noise_multiplier = calibrate_noise_multiplier(self.epsilon, self.delta, self.sample_rate, self.steps)
        else:
            raise ValueError("epsilon must be given (or noise_multiplier), got epsilon=None and noise_multiplier=None.")
        self.last_rows: dict[str, np.ndarray] | None = None

    # -- privacy -------------------------------------------------------------------------------------
    @property
    def profile(self) -> DPSGDProfile:
        """The replace-one DP-SGD profile of the training run (the one the noise was calibrated to)."""
        return DPSGDProfile(self.noise_multiplier, self.sample_rate, self.steps, "replace_one")

    def privacy(self) -> dict:
        """epsilon at delta under replace-one (ours, the bound's) and add/remove (ours and opacus's accountant)."""
        add_remove = DPSGDProfile(self.noise_multiplier, self.sample_rate, self.steps, "add_remove")
        return {
            "noise_multiplier": self.noise_multiplier, "sample_rate": self.sample_rate, "steps": self.steps,
            "delta": self.delta,
            "epsilon_replace_one": float(self.profile.epsilon(self.delta)),
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
        """A fresh canary model (new rows drawn from `seed`) on the model's device, in train mode."""
        import torch

        model, _ = self._base()
        init = self._init_rows(torch.Generator().manual_seed(int(seed)))
        module = _canary_module(model, self.n_new_tokens, init).to(model.device)
        module.train()  # from_pretrained gives eval mode; dropout of the body as in fine-tuning
        module.body.requires_grad_(False)
        module.old_head.requires_grad_(False)
        return module

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
                          "new_out": module.new_out.weight.detach().float().cpu().numpy()}
        return out

    def _targets(self, x: np.ndarray):
        import torch

        prefix = torch.as_tensor(self.prefix_rows(), dtype=torch.long)
        secret = torch.as_tensor(self.secret_rows()[np.arange(self.n_targets), x], dtype=torch.long)
        return prefix, secret

    def train(self, module, x: np.ndarray, seed: int, steps: int | None = None) -> None:
        """Run DP-SGD (or the non-private baseline) for `steps` (default self.steps) on canary secrets x."""
        steps = self.steps if steps is None else int(steps)
        if self.clipping in ("ghost", "hooks"):
            return self._train_opacus(module, x, seed, steps)
        import torch

        device = module.new_in.weight.device
        prefix, secret = self._targets(x)
        prefix, secret = prefix.to(device), secret.to(device)
        old_vocab = module.old_head.weight.shape[0]
        sampler = torch.Generator().manual_seed(seed + 1)
        noise_gen = torch.Generator(device=device).manual_seed(seed + 2)
        expected_batch = self.sample_rate * self.n_targets
        params = [module.new_in.weight, module.new_out.weight]
        for _ in range(steps):
            chosen = torch.rand(self.n_targets, generator=sampler) < self.sample_rate  # Poisson sampling
            idx = chosen.nonzero()[:, 0].to(device)
            if self.clipping == "none":
                self._step_nonprivate(module, prefix[idx], secret[idx])
                continue
            grads = self._clipped_sum(module, prefix[idx], secret[idx], old_vocab) if idx.numel() else \
                [torch.zeros_like(p) for p in params]
            with torch.no_grad():
                for p, g in zip(params, grads):
                    noise = torch.randn(p.shape, generator=noise_gen, device=device, dtype=p.dtype)
                    p.sub_(self.learning_rate * (g + self.noise_multiplier * self.clip_norm * noise) / expected_batch)

    def per_example_gradients(self, module, prefix, secret):
        """The exact per-example gradients' parts: (h, u, g) with grad_out_i = u_i h_i^T and grad_in_i = g_i at row prefix_i.

        u_i = (softmax(logits_i) - e_{secret_i}) restricted to the new rows; g_i = dL_i / d new_in[prefix_i].
        """
        import torch

        old_vocab = module.old_head.weight.shape[0]
        embeds = module.new_in.weight[prefix].detach().requires_grad_(True)
        with torch.enable_grad():
            h = module.hidden(embeds)
            logits = module.logits_from_hidden(h.detach())
            log_probs = torch.log_softmax(logits.float(), dim=1)
            target = secret + old_vocab
            # dL/dh for the summed loss; examples are independent, so one backward gives every g_i
            probs = log_probs.exp()
            probs[torch.arange(len(target)), target] -= 1.0
            weight = torch.cat([module.old_head.weight, module.new_out.weight], dim=0).float()
            grad_h = probs @ weight
            (g,) = torch.autograd.grad(h, embeds, grad_outputs=grad_h.to(h.dtype))
        u = probs[:, old_vocab:]
        return h.detach().float(), u, g.float()

    def _clipped_sum(self, module, prefix, secret, old_vocab):
        """sum_i min(1, C / ||G_i||) G_i for the new_in and new_out gradients, in closed form (no per-sample hooks)."""
        import torch

        h, u, g = self.per_example_gradients(module, prefix, secret)
        norms = torch.sqrt((u * u).sum(1) * (h * h).sum(1) + (g * g).sum(1))
        factor = (self.clip_norm / (norms + 1e-6)).clamp(max=1.0)  # opacus's clipping factor
        grad_out = (u * factor[:, None]).T @ h
        grad_in = torch.zeros_like(module.new_in.weight, dtype=torch.float32)
        grad_in.index_add_(0, prefix, g * factor[:, None])
        return [grad_in.to(module.new_in.weight.dtype), grad_out.to(module.new_out.weight.dtype)]

    def _step_nonprivate(self, module, prefix, secret) -> None:
        """Plain SGD on the mean loss of the batch (the non-private baseline of the benchmark)."""
        import torch

        if prefix.numel() == 0:
            return
        old_vocab = module.old_head.weight.shape[0]
        params = [module.new_in.weight, module.new_out.weight]
        for p in params:
            p.grad = None
        with torch.enable_grad():
            loss = torch.nn.functional.cross_entropy(module(prefix).float(), secret + old_vocab, reduction="sum")
            (loss / (self.sample_rate * self.n_targets)).backward()
        with torch.no_grad():
            for p in params:
                p.sub_(self.learning_rate * p.grad)
                p.grad = None

    def _train_opacus(self, module, x: np.ndarray, seed: int, steps: int) -> None:
        """The same DP-SGD through opacus's PrivacyEngine (grad_sample_mode hooks or ghost), Poisson sampling."""
        import torch
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        device = module.new_in.weight.device
        prefix, secret = self._targets(x)
        old_vocab = module.old_head.weight.shape[0]
        loader = DataLoader(TensorDataset(prefix, secret + old_vocab), batch_size=self.batch_size,
                            generator=torch.Generator().manual_seed(seed + 1))
        optimizer = torch.optim.SGD([module.new_in.weight, module.new_out.weight], lr=self.learning_rate)
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
            "mechanism": self.name, "model": self.model.params(), "epsilon": self.epsilon, "delta": self.delta,
            "noise_multiplier": self.noise_multiplier, "clip_norm": self.clip_norm,
            "learning_rate": self.learning_rate, "epochs": self.epochs, "batch_size": self.batch_size,
            "sample_rate": self.sample_rate, "steps": self.steps, "n_targets": self.n_targets,
            "domain_size": self.domain_size, "clipping": self.clipping, "init_scale": self.init_scale,
        }
