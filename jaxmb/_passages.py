"""Singular passages of the null-space formulation: where the motion passes close to a
configuration at which C loses rank (a bifurcation, e.g. the parallelogram's collinear
position, IFToMM A02), the velocity constraints hardly separate the branches that cross there,
and the null-space formulation (seed 001, eq. 13) may leave the branch the motion is on
(`jaxmb._projection` explains why; `mb.Projection()` follows the physical branch).

`PassageMonitor` wraps simulate's solver and records, in the solver state, the first accepted
step whose end state has the rank-revealing ratio

    rho(q) = |R_kk| / |R_11|,   C^(q)^T [:, perm] = Q R,  C^ = C M^(-1/2),  k = rank at t0,

(the pivoted QR the accelerations use) below PASSAGE_DROP rho(q0). rho is a lower estimate of
the smallest retained singular value over the largest (up to a factor of about sqrt(n)); a
regular motion keeps it near its starting value (the tests' mechanisms stay above 0.6 of it),
while passing a rank drop takes it through zero: the A02 four-bar's sampled minimum is 0.8% of
its start at the default tolerances. `simulate` reports the time (`Trajectory.t_passage`) and
warns (`SingularPassageWarning`). The check costs one evaluation of C and one pivoted QR per
step; sampled at step ends, a passage straddled by one long step can be missed -- tighter
tolerances sample more densely.
"""

import diffrax
import jax
import jax.numpy as jnp

from ._linalg import RANK_RTOL, economic_pivoted_qr
from ._model import Model
from ._wrapped_solver import TransparentSolver

PASSAGE_DROP = 0.05
"""rho below this fraction of its value at t0 marks a singular passage."""


class SingularPassageWarning(UserWarning):
    """The null-space formulation passed close to a singular configuration, where it may
    switch branch; `formulation=mb.Projection()` follows the branch the velocity selects."""


def _ratios(model, q, t):
    """|R_jj| / |R_11| of the pivoted QR of the mass-scaled C^T (non-increasing)."""
    w = 1.0 / jnp.sqrt(jnp.diagonal(model.mass_matrix()))
    C = jax.lax.stop_gradient(model.C(q, t)) * w[None, :]
    _, R, _ = economic_pivoted_qr(C.T)
    d = jnp.abs(jnp.diagonal(R))
    return d / jnp.maximum(d[0], jnp.finfo(d.dtype).tiny)


class PassageMonitor(TransparentSolver):
    """`solver` whose state also carries (k, rho(q0), time of the first singular passage or
    inf) of the accepted steps (diffrax keeps a rejected step's solver state out)."""

    solver: diffrax.AbstractSolver
    model: Model

    def init(self, terms, t0, t1, y0, args):
        ratios = _ratios(self.model, y0[0], t0 * getattr(terms, "direction", 1))
        k = jnp.sum(ratios > RANK_RTOL)
        start = ratios[jnp.maximum(k - 1, 0)]
        never = jnp.asarray(jnp.inf, start.dtype)
        return self.solver.init(terms, t0, t1, y0, args), (k, start, never)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner, (k, start, first) = solver_state
        y1, y_error, dense_info, inner, result = self.solver.step(
            terms, t0, t1, y0, args, inner, made_jump)
        t_model = t1 * getattr(terms, "direction", 1)
        rho = _ratios(self.model, y1[0], t_model)[jnp.maximum(k - 1, 0)]
        passed = (rho < PASSAGE_DROP * start) & ~jnp.isfinite(first)
        first = jnp.where(passed, jax.lax.stop_gradient(t_model), first)
        return y1, y_error, dense_info, (inner, (k, start, first)), result
