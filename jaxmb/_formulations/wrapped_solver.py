"""A diffrax solver that wraps another one transparently (diffrax's `AbstractWrappedSolver`:
isinstance checks see the wrapped solver), forwarding what diffrax reads from or sets on the
solver it was given: the orders, the interpolation, and the fields that `diffeqsolve` and the
adjoints replace with `eqx.tree_at` (`scan_kind` of Runge-Kutta solvers, `root_finder` of
implicit ones). Subclasses override `step` (and `init` for a state of their own)."""

import diffrax


class TransparentSolver(diffrax.AbstractAdaptiveSolver, diffrax.AbstractWrappedSolver):
    solver: diffrax.AbstractSolver

    @property
    def term_structure(self):
        return self.solver.term_structure

    @property
    def interpolation_cls(self):
        return self.solver.interpolation_cls

    @property
    def scan_kind(self):  # set by the adjoints through eqx.tree_at: reaches the wrapped field
        # (a field of the concrete solvers, which AbstractSolver does not declare)
        return self.solver.scan_kind  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def root_finder(self):  # its tolerances are set by diffeqsolve through eqx.tree_at
        return self.solver.root_finder  # pyright: ignore[reportAttributeAccessIssue]

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def init(self, terms, t0, t1, y0, args):
        return self.solver.init(terms, t0, t1, y0, args)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)
