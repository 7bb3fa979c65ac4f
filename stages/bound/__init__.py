"""The math of the paper: privacy profiles, Poisson-binomial tails, the theorems and prior-work bounds.

Uses numpy, scipy and dp_accounting only, so it can be imported without torch, jax or Hydra.
"""
