"""One linear program through HiGHS with fallbacks: the bounds' LPs are certified by their multipliers (weak
duality), so any method that ends with status 0 will do, and one that fails hands the LP to the next."""
from __future__ import annotations

from scipy import optimize


def linprog(tries, c, **kwargs):
    """``scipy.optimize.linprog(c, **kwargs)`` with each ``(method, options)`` of ``tries`` in turn until one ends with
    status 0 (solved); otherwise the last one's result, whose status the caller reads."""
    res = None
    for method, options in tries:
        res = optimize.linprog(c, method=method, options=options, **kwargs)
        if res.status == 0:
            break
    return res
