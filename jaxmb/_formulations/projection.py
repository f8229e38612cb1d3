"""The projection formulation: the null-space ODE (seed 001, eq. 13) whose every accepted step
ends with mass-orthogonal projections of the positions and velocities onto the constraints.

After each Runge-Kutta step (q*, qd*) is replaced by the nearest consistent state in the
kinetic-energy metric (Hairer & Wanner, Solving ODEs II, section VII.2, "projection methods";
Bayo & Ledesma, Nonlinear Dyn. 9 (1996) 113-130: the mass-orthogonal projections of the ALI3-P
formulation used by the reference solutions of the IFToMM benchmark A02):

    q   = argmin (q - q*)^T M (q - q*)      subject to  Phi(q, t) = 0,
    qd  = argmin (qd - qd*)^T M (qd - qd*)  subject to  C(q, t) qd + b(q, t) = 0.

The position projection is a simplified Gauss-Newton iteration with minimum-M-norm corrections,

    dq = argmin dq^T M dq  subject to  Phi_q(q*) dq = -Phi(q),

i.e. `null_space_solve(M, 0, Phi_q, -Phi)` (the pivoted QR of the mass-scaled rows that the
accelerations use; redundant rows are dropped); the velocity projection is exact in one solve,
`null_space_solve(M, M qd*, C, -b)`. Both have a fixed number of operations, so derivatives
flow through them (jax.grad, jacfwd) and vmap works.

Why it follows the physical branch at a bifurcation (e.g. the N-four-bar with its cranks
horizontal, IFToMM A02). Near such a configuration the rows of C that separate the two branches
nearly vanish, so the velocity constraints hardly see a velocity component along the other
branch: without projection, the integration error in that direction is never corrected and,
amplified by Baumgarte's position feedback through the ill-conditioned rows, grows until the
motion turns onto the other branch or the step size collapses. Projected after every step, the
state is put back onto the branch it is nearest to -- the one the motion is on, as long as the
step ends farther from the crossing than the local error -- and the velocity loses every
component off that branch, which is what the real linkage's velocity selects. No Baumgarte
feedback is needed (the constraints hold at round-off after each step); `simulate` leaves it
off for this formulation unless a `stabilization` is passed explicitly.
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._custom_types import Coordinates, Scalar
from .._model.model import Model
from .._model.terms import StateTerms
from .base import AbstractRatiosApart, AbstractUnchecked
from .null_space import _gauss_factor, _gauss_solve, null_space_solve
from .projecting import AbstractProjectingFormulation


class Projection(AbstractProjectingFormulation, AbstractRatiosApart, AbstractUnchecked):
    """`simulate(..., formulation=mb.Projection())` (or "projection"): the null-space
    formulation with mass-orthogonal projections of q and qd onto the constraints after every
    accepted step (the docs' Formulations page); it passes singular configurations on the
    branch that the velocity selects (the IFToMM A02 N-four-bar, `benchmarks/bench_a02.py`).

    **Arguments:**
    - `iterations`: Gauss-Newton iterations of the position projection (fixed, so derivatives
      flow through it).
    - `tol`: the largest max |Phi| they may leave; a step whose projection does not get there
      is rejected and retried with a smaller step."""

    iterations: int = eqx.field(static=True, default=3)
    tol: float = eqx.field(static=True, default=1e-10)
    baumgarte: ClassVar[bool] = False  # the projections hold the constraints at round-off
    stabilizable: ClassVar[bool] = True  # an explicit stabilization still takes effect
    monitored: ClassVar[bool] = False  # it passes singular configurations on its branch
    detects_jumps: ClassVar[bool] = True  # a projection onto another branch is rejected

    def __check_init__(self):
        if not (isinstance(self.iterations, int) and self.iterations >= 1):
            raise ValueError(
                f"Projection: iterations must be an integer >= 1, got {self.iterations!r}"
            )
        if not (isinstance(self.tol, float | int) and np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"Projection: tol must be a positive finite number, got {self.tol!r}")

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return null_space_solve(terms.M, terms.F, terms.C, terms.gamma)

    def project_state(
        self, model: Model, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> tuple[Coordinates, Coordinates, Scalar]:
        """(q, qd, max |Phi| left): the projections of `project_state`."""
        return project_state(model, self, q, qd, t)

    def reuses_last_stage(self, model: Model) -> bool:
        return False  # re-evaluates the first stage after every projection

    @property
    def projection_limit(self) -> float:
        return self.tol


def project_position(model, q, t, iterations):
    """Simplified Gauss-Newton on Phi(q, t) = 0 with minimum-M-norm corrections and one
    factorization of Phi_q at the starting point (the step ends within the local error of the
    manifold, so each iteration contracts the residual by about that factor); returns
    (q, max |Phi|)."""
    hol = np.flatnonzero(model.holonomic_rows)
    if hol.size == 0:
        return q, jnp.zeros((), q.dtype)
    factor = _gauss_factor(model.mass_matrix(), model.C(q, t)[hol])
    zero = jnp.zeros(model.n, q.dtype)  # over the velocity coordinates

    def newton(_, q):
        return model.retract(q, _gauss_solve(factor, zero, -model.phi(q, t)))

    q = jax.lax.fori_loop(0, iterations, newton, q)
    return q, jnp.max(jnp.abs(model.phi(q, t)))


def project_velocity(model, q, qd, t):
    """The M-orthogonal projection of qd onto C(q, t) qd + b(q, t) = 0 (every row: Pfaffian
    ones too)."""
    M = model.mass_matrix()
    return null_space_solve(M, M @ qd, model.C(q, t), -model.b(q, t))


def project_state(model, option, q, qd, t):
    """(q, qd, max |Phi| left by the position projection)."""
    q, residual = project_position(model, q, t, option.iterations)
    return q, project_velocity(model, q, qd, t), residual
