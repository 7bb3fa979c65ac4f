"""Attacks A(a, D, M) -> z: k guesses per target from the release, the prior and the mechanism."""
