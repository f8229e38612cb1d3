"""Singular passages of the null-space formulation: where the motion passes close to a
configuration at which C loses rank (a bifurcation, e.g. the parallelogram's collinear
position, IFToMM A02), the velocity constraints hardly separate the branches that cross there,
and the null-space formulation (seed 001, eq. 13) may leave the branch the motion is on
(`jaxmb._formulations.projection` explains why; `mb.Projection()` follows the physical branch).

`PassageMonitor` wraps simulate's solver and records, in the solver state, the first accepted
step whose end state has the rank-revealing ratio

    rho(q) = |R_kk| / |R_11|,   C^(q)^T [:, perm] = Q R,  C^ = C M^(-1/2),  k = rank at t0,

(the pivoted QR the accelerations use) below PASSAGE_DROP rho(q0). rho is a lower estimate of
the smallest retained singular value over the largest (up to a factor of about sqrt(n)); a
regular motion keeps it near its starting value (the tests' mechanisms stay above 0.6 of it),
while passing a rank drop takes it through zero: the A02 four-bar's sampled minimum is 0.8% of
its start at the default tolerances. `simulate` reports the time (`Trajectory.t_passage`) and
warns (`SingularPassageWarning`). By default the ratios come from the right-hand side's own
factorization (`PassageMonitor.from_rhs`), so the check adds almost nothing to compile or run
time; otherwise it costs one evaluation of C and one pivoted QR per step. Sampled at step
ends, a passage straddled by one long step can be missed -- tighter tolerances sample more
densely.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx

from .._linalg.dense import RANK_RTOL, economic_pivoted_qr
from .._model.model import Model
from .wrapped_solver import TransparentSolver

PASSAGE_DROP = 0.05
"""rho below this fraction of its value at t0 marks a singular passage."""


class SingularPassageWarning(UserWarning):
    """The null-space formulation passed close to a singular configuration, where it may
    switch branch; `formulation=mb.Projection()` follows the branch the velocity selects."""


def pivot_ratios(pivots):
    """|R_jj| / |R_11| of the non-increasing pivots |R_jj| of a pivoted QR: the rank-revealing
    ratios the monitor follows."""
    return pivots / jnp.maximum(pivots[0], jnp.finfo(pivots.dtype).tiny)


def ratios_of(M, C):
    """`pivot_ratios` of the pivoted QR of the mass-scaled C^T, C^ = C M^(-1/2) (the matrix
    `jaxmb._formulations.null_space.null_space_solve` factorizes); a diagnosis (no derivative)."""
    w = 1.0 / jnp.sqrt(jnp.diagonal(M))
    _, R, _ = economic_pivoted_qr(jax.lax.stop_gradient(C * w[None, :]).T)
    return pivot_ratios(jnp.abs(jnp.diagonal(R)))


def _ratios(model, q, t):
    return ratios_of(model.mass_matrix(), model.C(q, t))


def uses_rhs_ratios(solver, controller) -> bool:
    """Whether the monitor can read the ratios at the end of each step from the right-hand
    side (see `PassageMonitor`): a first-same-as-last Runge-Kutta solver (its last stage is
    the end of the step) with simulate's own step-size controller."""
    tableau = getattr(solver, "tableau", None)
    return controller is None and bool(getattr(tableau, "fsal", False))


def state_norm(y):
    """RMS norm over (q, qd) only: the monitor's ratio component of y is not a state."""
    return optx.rms_norm((y[0], y[1]))


class PassageMonitor(TransparentSolver):
    """`solver` whose state also carries (k, rho(q0), time of the first singular passage or
    inf) of the accepted steps (diffrax keeps a rejected step's solver state out).

    With `from_rhs` the state is y = (q, qd, r) and the right-hand side returns the ratios of
    its own factorization as r' (`jaxmb._formulations.null_space.null_space_solve_with_ratios`): the
    step's stages hold them times dt, the first stage at the start of the step and, for a
    first-same-as-last solver, the last stage at its end, so C is not formed and factorized
    a second time per step (that second C was a quarter of the robot's compile time). r
    itself is reset to 0 and kept out of the error estimate (`state_norm`). Otherwise the
    ratios at the end of each step come from C evaluated there."""

    solver: diffrax.AbstractSolver
    model: Model
    from_rhs: bool = eqx.field(static=True, default=False)

    def init(self, terms, t0, t1, y0, args):
        inner = self.solver.init(terms, t0, t1, y0, args)
        never = jnp.asarray(jnp.inf, y0[0].dtype)
        if self.from_rhs:  # k and rho(q0) from the first accepted step's first stage
            return inner, (jnp.asarray(-1), jnp.asarray(jnp.nan, y0[0].dtype), never)
        ratios = _ratios(self.model, y0[0], t0 * getattr(terms, "direction", 1))
        k = jnp.sum(ratios > RANK_RTOL)
        start = ratios[jnp.maximum(k - 1, 0)]
        return inner, (k, start, never)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner, (k, start, first) = solver_state
        y1, y_error, dense_info, inner, result = self.solver.step(
            terms, t0, t1, y0, args, inner, made_jump
        )
        t_model = t1 * getattr(terms, "direction", 1)
        if self.from_rhs:
            assert dense_info is not None and y_error is not None  # from_rhs: adaptive RK
            stages = jnp.abs(dense_info["k"][2])  # (stages, width): ratios * |dt|
            dt = jnp.abs(t1 - t0)
            stages = stages / jnp.where(dt > 0, dt, 1.0)
            first_step = k < 0
            k = jnp.where(first_step, jnp.sum(stages[0] > RANK_RTOL), k)
            start = jnp.where(first_step, stages[0][jnp.maximum(k - 1, 0)], start)
            ratios = stages[-1]
            y1 = (y1[0], y1[1], jnp.zeros_like(y1[2]))
            y_error = (y_error[0], y_error[1], jnp.zeros_like(y_error[2]))
        else:
            ratios = _ratios(self.model, y1[0], t_model)
        rho = ratios[jnp.maximum(k - 1, 0)]
        passed = (rho < PASSAGE_DROP * start) & ~jnp.isfinite(first)
        first = jnp.where(passed, jax.lax.stop_gradient(t_model), first)
        return y1, y_error, dense_info, (inner, (k, start, first)), result
