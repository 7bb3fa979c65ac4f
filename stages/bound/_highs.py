"""One HiGHS linear program kept across solves (highspy): rows added and row bounds changed in place, each solve warm
started from the last basis. The bounds that use it certify every value from the solution itself (weak duality), so
a solve that ends short of optimal still gives a valid, looser number."""
from __future__ import annotations

import numpy as np
from highspy import _core

INF = _core.kHighsInf
_BASIC_STATUS = _core.HighsBasisStatus.kBasic


#: A warm-started dual simplex that runs past this many iterations per row and column of the model (and past
#: _STALL_MIN) is taken to stall: on Theorem 4's degenerate LPs whose optimum is near its trivial 1 it ran 200,000
#: iterations without ending, where a cold primal simplex ends in a few thousand; 99% of the solves that end take
#: about 0.8 or fewer per row and column, where measured.
STALL = 1.0
_STALL_MIN = 3_000


class Model:
    """min cost.x subject to row_lower <= A x <= row_upper and col_lower <= x <= col_upper (``A`` a scipy sparse
    matrix), solved by HiGHS's simplex on one thread without presolve, each solve within ``iterations`` simplex
    iterations (a count, not a time, so runs repeat exactly): a warm-started dual simplex, and where it stalls (past
    STALL iterations per row and column) a cold primal simplex."""

    def __init__(self, cost, col_lower, col_upper, A, row_lower, row_upper, iterations: int):
        A = A.tocsc()
        lp = _core.HighsLp()
        lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
        lp.col_cost_ = np.asarray(cost, dtype=float)
        lp.col_lower_, lp.col_upper_ = np.asarray(col_lower, dtype=float), np.asarray(col_upper, dtype=float)
        lp.row_lower_, lp.row_upper_ = np.asarray(row_lower, dtype=float), np.asarray(row_upper, dtype=float)
        lp.a_matrix_.format_ = _core.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
        self._h = _core._Highs()  # the class itself: highspy.Highs() prints a banner
        # devex pricing in the dual simplex: more iterations than its default (dual steepest edge) but cheaper ones,
        # ~25% less time on Theorem 4's duals where measured
        for name, value in (("output_flag", False), ("threads", 1), ("presolve", "off"),
                            ("simplex_dual_edge_weight_strategy", 1), ("simplex_iteration_limit", int(iterations))):
            self._h.setOptionValue(name, value)
        self._h.passModel(lp)
        self._limit = int(iterations)
        self.num_col, self.num_row = A.shape[1], A.shape[0]

    def add_rows(self, row_lower, row_upper, R) -> None:
        """Append the rows of the scipy sparse matrix ``R`` (num_col columns) with their bounds."""
        R = R.tocsr()
        if R.shape[0] == 0:
            return
        self._h.addRows(R.shape[0], np.asarray(row_lower, dtype=float), np.asarray(row_upper, dtype=float), R.nnz,
                        R.indptr[:-1].astype(np.int32), R.indices.astype(np.int32), R.data.astype(float))
        self.num_row += R.shape[0]

    def add_cols(self, cost, col_lower, col_upper) -> None:
        """Append empty columns (their entries come with the rows added after) with their costs and bounds."""
        cost = np.asarray(cost, dtype=float)
        if cost.size == 0:
            return
        self._h.addCols(cost.size, cost, np.asarray(col_lower, dtype=float), np.asarray(col_upper, dtype=float), 0,
                        np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=float))
        self.num_col += cost.size

    def set_cost(self, cost) -> None:
        """Every column's cost (the basis is kept: the next solve is warm)."""
        cost = np.asarray(cost, dtype=float)
        self._h.changeColsCost(cost.size, np.arange(cost.size, dtype=np.int32), cost)

    def row_duals(self) -> np.ndarray | None:
        """The last solve's row duals (HiGHS's sign convention for the minimisation), or None without them."""
        solution = self._h.getSolution()
        return np.asarray(solution.row_dual) if solution.dual_valid else None

    def basic_rows(self) -> np.ndarray | None:
        """Whether each row's slack is basic in the last solve's basis (the row is not binding), or None without a valid
        basis."""
        basis = self._h.getBasis()
        if not basis.valid:
            return None
        # an object array compared with the enum: the same answer as comparing each int(r), 2x faster
        return np.array(basis.row_status, dtype=object) == _BASIC_STATUS

    def delete_rows(self, rows) -> None:
        """Delete the rows ``rows`` (those whose slack is basic keep the basis valid, so the next solve stays warm)."""
        rows = np.asarray(rows, dtype=np.int32)
        if rows.size:
            self._h.deleteRows(rows.size, rows)
            self.num_row -= rows.size

    def set_row_bounds(self, rows, lower, upper) -> None:
        rows = np.asarray(rows, dtype=np.int32)
        self._h.changeRowsBounds(rows.size, rows, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))

    def solve(self, primal: bool = False, cold: bool = False, cap: int | None = None):
        """(optimal, x, objective): whether HiGHS ended optimal (a warm dual simplex, or with ``primal`` a warm primal
        one, within STALL iterations per row and column, else a cold primal simplex, else a cold dual one; with ``cold``, a
        model with no basis yet, the cold ones only; with ``cap``, within that many iterations in all), its column
        values (None when it has none) and its objective (meaningful when optimal)."""
        stall = max(_STALL_MIN, int(STALL * (self.num_row + self.num_col)))
        self.iterations = 0
        tries = ((1, min(stall, self._limit)), (4, self._limit), (1, self._limit))  # (simplex strategy, iterations)
        if primal:  # after a change of the costs the last basis is still primal feasible: a warm primal simplex first
            tries = ((4, min(stall, self._limit)),) + tries[1:]
        if cold:  # a new model (no basis): a primal simplex from the slack basis, then a dual one
            tries = tries[1:]
        for attempt, (strategy, limit) in enumerate(tries):
            if cap is not None:
                limit = min(limit, cap - self.iterations)
                if limit <= 0:
                    break
            if attempt:
                self._h.clearSolver()  # a cold start from the slack basis
            self._h.setOptionValue("simplex_strategy", strategy)
            self._h.setOptionValue("simplex_iteration_limit", int(limit))
            self._h.run()
            self.iterations += self._h.getInfo().simplex_iteration_count
            if self._h.getModelStatus() == _core.HighsModelStatus.kOptimal:
                return True, np.asarray(self._h.getSolution().col_value), self._h.getInfo().objective_function_value
        solution = self._h.getSolution()
        x = np.asarray(solution.col_value) if solution.value_valid else None
        return False, x, np.nan
