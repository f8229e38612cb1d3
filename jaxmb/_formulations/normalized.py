"""Drift of the orientation's redundant coordinates: every accepted step of a model whose
positions hold more numbers than its velocities (a spatial body's quaternion) ends with
`Model.normalize`, so |p| stays 1 however long the run (the spatial note, section 6). The
kinematics use A(p / |p|), so this changes no motion; it keeps round-off from growing."""

from .._model.model import Model
from .wrapped_solver import TransparentSolver


class NormalizedSolver(TransparentSolver):
    """The wrapped solver's step, then q <- normalize(q) (error estimate unchanged)."""

    model: Model

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        y1, y_error, dense_info, solver_state, result = self.solver.step(
            terms, t0, t1, y0, args, solver_state, made_jump
        )
        y1 = (self.model.normalize(y1[0]),) + tuple(y1[1:])
        return y1, y_error, dense_info, solver_state, result


def normalizing(solver, model: Model):
    """`solver` normalizing after each step where the model's positions need it (none for
    planar bodies: the solver itself)."""
    return NormalizedSolver(solver, model) if model.kind.nq != model.kind.nv else solver
