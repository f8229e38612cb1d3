"""The augmented-Lagrangian formulation (Bayo, Garcia de Jalon & Serna 1988; Bayo & Ledesma
1996, "ALI3-P"; ../shared/notes/augmented_lagrangian.md): accelerations, and projections of the
positions and velocities after every step, from one sparse symmetric positive-definite matrix

    S = M + alpha C'^T C',        C' = D C,   D_i = (C_i M^-1 C_i^T)^(-1/2),

whose pattern is the body graph, fixed when the model is built (`jaxmb._linalg.sparse_cholesky`:
a static-pattern block Cholesky, no rank decision). S stays positive definite with redundant
rows and at singular positions, where C loses rank.

Accelerations: from lambda_0 = 0 iterate

    S qdd_{k+1} = F - C'^T lambda_k + alpha C'^T gamma',    gamma' = D gamma,
    lambda_{k+1} = lambda_k + alpha (C' qdd_{k+1} - gamma'),

until qdd stops changing; M qdd_k + C'^T lambda_k = F holds at every iterate, and qdd_k
converges to the unique accelerations (linearly, at a rate about 1 / (1 + alpha sigma_min^2),
sigma over the nonzero singular values of the mass-scaled C'). The row scaling D makes every
row of C' a unit vector in the metric of M^-1, so alpha is dimensionless (the same rule for rows
in metres and radians): `penalty` = 1e6 gives a few iterations and keeps about 10 digits in
the factorization. The non-unique part of lambda is never decided here: reactions stay with
the reaction methods.

Derivatives do not differentiate the iterations: differentiating M qdd + C^T lambda = F,
C qdd = gamma gives the same constrained problem for (dqdd, dlambda) with right-hand sides
dF - dM qdd - dC^T lambda and dgamma - dC qdd, solved by the same iteration inside
`lax.custom_linear_solve` on the symmetric operator [[M, C'^T], [C', 0]] (the iteration from
lambda_0 = 0 is its symmetric generalized inverse), so jax.grad and jax.jvp both work.

Projections (Bayo & Ledesma 1996): after each accepted step, the positions by Newton
iterations dq = argmin dq^T M dq subject to Phi_q dq = -Phi (the holonomic rows), the
velocities by qd = argmin (qd - qd*)^T M (qd - qd*) subject to C qd + b = 0 (all rows); each is
the same constrained solve with other right-hand sides.
"""

import functools
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from .._linalg import sparse_cholesky as sc
from .._model.blocks import (
    body_cliques,
    constraint_blocks,
    mass_row_norms,
    multiply,
    multiply_transposed,
    weighted_normal_blocks,
)
from .._model.model import Model
from .._model.terms import StateTerms
from .._runtime import errors as _errors
from .base import AbstractStateFormulation, with_ratios
from .projection import ProjectedSolver

ROUND_OFF = 1e-7
"""An iteration whose change stops shrinking below this fraction of qdd's size has reached the
round-off floor of S's factorization (about eps cond(S)) and counts as converged; a constraint
residual above it means C qdd = gamma has no solution (inconsistent constraints)."""


ABSOLUTE_FLOOR = 1e-10
"""Accelerations below this size (1e-10 m/s^2 or rad/s^2) count as zero in the tests of
convergence and consistency: a mechanism at rest has no other scale, and there gamma is
round-off (1e-14) that redundant rows need not agree on."""


class AugmentedLagrangian(AbstractStateFormulation):
    """`simulate(..., formulation=mb.AugmentedLagrangian())` (or "augmented_lagrangian"): the
    accelerations of the augmented-Lagrangian iteration on the sparse matrix M + alpha C'^T C'
    and mass-orthogonal projections of q and qd after every accepted step with the same
    matrix (module docstring). No rank decision anywhere: it passes redundant constraints and
    singular positions (the IFToMM A02 N-four-bar) alike, and its cost grows with the number
    of pairs, not rows x n.

    **Arguments** (all data: a new value reuses the compiled program):
    - `penalty`: alpha, dimensionless (rows scaled to unit norm in the metric of M^-1);
    - `tol`: the iteration stops when qdd changes by less than tol times its size (in the
      kinetic metric);
    - `max_iterations`: a right-hand side whose iteration has not converged by then is
      refused (nan: the step is rejected; a run that cannot go on stops and says so);
    - `projection_iterations` (static): Newton iterations of the position projection;
    - `projection_tol`: the largest max |Phi| a step's position projection may leave (else
      the step is rejected and retried shorter)."""

    penalty: Real[ArrayLike, ""] = 1e6
    tol: Real[ArrayLike, ""] = 1e-12
    max_iterations: Real[ArrayLike, ""] = 50
    projection_iterations: int = eqx.field(static=True, default=3)
    projection_tol: Real[ArrayLike, ""] = 1e-10
    baumgarte: ClassVar[bool] = False  # the projections hold the constraints at round-off
    monitored: ClassVar[bool] = False  # no rank decision: nothing to monitor

    def accelerations(self, model: Model, terms: StateTerms, label: str) -> Float[Array, " n"]:
        return accelerations(model, self, terms.q, terms.qd, terms.t, terms.F)

    def accelerations_and_ratios(
        self, model: Model, terms: StateTerms, label: str
    ) -> tuple[Float[Array, " n"], Float[Array, " width"]]:
        return with_ratios(self, model, terms, label)

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        return ProjectedSolver(solver, model, self)

    def check_start(
        self, model: Model, q0: Float[Array, " n"], t0: Float[Array, ""], label: str
    ) -> Float[Array, " n"]:
        return q0

    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        """Eagerly: raise when the iteration does not converge at the last state reached."""
        failed = _errors.concrete(failed)
        t, q, qd = (_errors.concrete(x) for x in stop)
        if failed is None or not bool(np.all(failed)) or q is None or np.ndim(q) != 1:
            return
        converged = _converged_at(model, self, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(t))
        if not bool(converged):
            raise RuntimeError(
                f"simulate(formulation={self!r}) stopped at t = {float(t):.10g}: the "
                "augmented-Lagrangian iteration for the accelerations does not converge there "
                f"in {int(self.max_iterations)} iterations (inconsistent constraints, e.g. two "
                "drivers that contradict each other, or a penalty too small for the "
                "mechanism: raise `penalty` or `max_iterations`)")

    def project_state(
        self, model: Model, q: Float[Array, " n"], qd: Float[Array, " n"], t: Float[Array, ""]
    ) -> tuple[Float[Array, " n"], Float[Array, " n"], Float[Array, ""]]:
        """(q, qd, max |Phi| left): the position and velocity projections (module docstring)."""
        return project_state(model, self, q, qd, t)

    @property
    def projection_limit(self) -> Float[Array, ""]:
        return jnp.asarray(self.projection_tol)


# ----------------------------------------------------------------------------------------------
# the sparse system at a configuration


@functools.lru_cache(maxsize=64)
def _symbolic(num_bodies: int, edges: bytes) -> sc.SymbolicCholesky:
    return sc.analyse(num_bodies, np.frombuffer(edges, np.int64).reshape(-1, 2))


def pattern(model: Model):
    """(pairs, groups, cliques, symbolic factorization) of the model's body graph: built once
    per model structure (numpy, at trace time)."""
    pairs, groups = model._groups()
    cliques = body_cliques(groups)
    edges = np.concatenate([sc.clique_edges(c) for c in cliques] or [np.zeros((0, 2), np.int64)])
    edges = np.ascontiguousarray(np.unique(np.sort(edges, axis=1), axis=0), np.int64)
    return pairs, groups, cliques, _symbolic(model.num_bodies, edges.tobytes())


class System(eqx.Module):
    """The constrained problem at one configuration: M (diagonal), C as blocks, the row
    scaling D, and the factor of S = M + alpha C'^T C' (rows outside `active` left out)."""

    groups: list = eqx.field(static=True)
    symbolic: sc.SymbolicCholesky = eqx.field(static=True)
    num_rows: int = eqx.field(static=True)
    mass: Float[Array, " n"]
    blocks: tuple
    scale: Float[Array, " rows"]  # D, zero outside the active rows
    penalty: Float[Array, ""]
    factor: Array

    def C(self, x):
        return self.scale * multiply(self.groups, self.blocks, x, self.num_rows)

    def CT(self, y):
        return multiply_transposed(self.groups, self.blocks, self.scale * y, self.mass.shape[0])


def system(model: Model, mass, blocks, penalty, active=None) -> System:
    """`System` of `model` with C's `blocks` (rows where `active` is False are left out)."""
    _, groups, cliques, symbolic = pattern(model)
    num_rows = model.num_rows
    w = mass_row_norms(groups, [jax.lax.stop_gradient(b) for b in blocks], 1.0 / mass, num_rows)
    floor = jnp.finfo(mass.dtype).tiny + 1e-300 * jnp.max(w, initial=0.0)
    scale = jax.lax.stop_gradient(jnp.where(w > floor, 1.0 / jnp.sqrt(jnp.maximum(w, floor)), 0.0))
    if active is not None:
        scale = jnp.where(active, scale, 0.0)
    penalty = jax.lax.stop_gradient(jnp.asarray(penalty, mass.dtype))
    normal = weighted_normal_blocks(groups, [jax.lax.stop_gradient(b) for b in blocks],
                                    penalty * scale**2)
    values = sc.assemble(symbolic, diag_blocks=_diagonal_blocks(jax.lax.stop_gradient(mass)))
    for c, nb in zip(cliques, normal):
        values = values + sc.assemble_cliques(symbolic, nb, c)
    factor = sc.cholesky(symbolic, values)
    return System(groups, symbolic, num_rows, mass, tuple(blocks), scale, penalty, factor)


def _diagonal_blocks(mass):
    return jax.vmap(jnp.diag)(mass.reshape(-1, 3))


def _iterate(s: System, f, g, tol, max_iterations):
    """The iteration from lambda_0 = 0 (module docstring) for M x + C'^T lambda = f,
    C' x = g (g in scaled rows): (x, lambda, converged)."""
    sqrt_m = jnp.sqrt(s.mass)
    floor = ABSOLUTE_FLOOR * jnp.linalg.norm(sqrt_m)
    size_f = jnp.linalg.norm(f / sqrt_m) + jnp.linalg.norm(g) + floor

    def step(carry):
        x, lam, k, _, previous = carry
        # the iteration in correction form: S dx = r - alpha C'^T c with the residuals of the
        # current iterate, so the factorization's round-off enters the correction only and
        # the iterates refine to the accuracy of the residuals (iterative refinement)
        r = f - s.mass * x - s.CT(lam)
        c = s.C(x) - g
        dx = sc.solve(s.symbolic, s.factor, r - s.penalty * s.CT(c))
        x_new = x + dx
        lam = lam + s.penalty * (s.C(x_new) - g)
        change = jnp.linalg.norm(sqrt_m * dx)
        size = jnp.linalg.norm(sqrt_m * x_new) + size_f
        # converged, or stalled at the round-off floor of the residuals
        done = (change <= tol * size) | ((change >= 0.5 * previous) & (change <= ROUND_OFF * size))
        return x_new, lam, k + 1, done, change

    def going(carry):
        return (carry[2] < max_iterations) & ~carry[3]

    x0 = jnp.zeros_like(f)
    lam0 = jnp.zeros(s.num_rows, f.dtype)
    init = (x0, lam0, 0, jnp.asarray(False), jnp.asarray(jnp.inf, f.dtype))
    x, lam, _, done, _ = jax.lax.while_loop(going, step, init)
    scale = jnp.linalg.norm(sqrt_m * x) + size_f
    consistent = jnp.linalg.norm(s.C(x) - g) <= ROUND_OFF * scale + floor  # g in range(C')
    return x, lam, done & consistent


def constrained_solve(s: System, f, g, tol, max_iterations):
    """(x, converged) with M x + C'^T lambda = f, C' x = g (g in scaled rows), x unique:
    differentiable in M, C, f and g (module docstring)."""
    tol = jax.lax.stop_gradient(tol)
    max_iterations = jax.lax.stop_gradient(max_iterations)
    frozen = jax.lax.stop_gradient(s)

    def kkt(z):
        x, lam = z
        return s.mass * x + s.CT(lam), s.C(x)

    def solve(_, b):
        x, lam, _ = _iterate(frozen, b[0], b[1], tol, max_iterations)
        return x, lam

    _, _, converged = _iterate(frozen, jax.lax.stop_gradient(f), jax.lax.stop_gradient(g),
                               tol, max_iterations)
    x, _ = jax.lax.custom_linear_solve(kkt, (f, g), solve, symmetric=True)
    return x, converged


def accelerations(model: Model, formulation: AugmentedLagrangian, q, qd, t, F):
    """qdd at (q, qd, t) with applied forces F; nan where the iteration did not converge (the
    integrator then rejects the step)."""
    pairs, groups, _, _ = pattern(model)
    terms = constraint_blocks(pairs, groups, model.num_rows, q, qd, t)
    s = system(model, model.mass_diagonal(), terms.blocks, formulation.penalty)
    qdd, converged = constrained_solve(s, F, s.scale * terms.gamma, formulation.tol,
                                       formulation.max_iterations)
    return jnp.where(converged, qdd, jnp.nan)


@eqx.filter_jit
def _converged_at(model, formulation, q, qd, t):
    pairs, groups, _, _ = pattern(model)
    terms = constraint_blocks(pairs, groups, model.num_rows, q, qd, t)
    s = system(model, model.mass_diagonal(), terms.blocks, formulation.penalty)
    F = model.forces(q, qd, t)
    return _iterate(s, F, s.scale * terms.gamma, formulation.tol, formulation.max_iterations)[2]


def project_state(model: Model, formulation: AugmentedLagrangian, q, qd, t):
    """(q, qd, max |Phi| left by the position projection): Newton iterations of the
    minimum-M-norm correction Phi_q dq = -Phi with the factor at the step's end, then the
    velocity projection C qd + b = 0 (module docstring)."""
    pairs, groups, _, _ = pattern(model)
    mass = model.mass_diagonal()
    holonomic = jnp.asarray(model.holonomic_rows)
    zero = jnp.zeros_like(q)
    terms = constraint_blocks(pairs, groups, model.num_rows, q, zero, t)
    s = system(model, mass, terms.blocks, formulation.penalty, active=holonomic)
    tol, iterations = formulation.tol, formulation.max_iterations

    def newton(_, q):
        phi = constraint_blocks(pairs, groups, model.num_rows, q, zero, t).phi
        dq, _ = constrained_solve(s, zero, -s.scale * phi, tol, iterations)
        return q + dq

    if model.m:
        q = jax.lax.fori_loop(0, formulation.projection_iterations, newton, q)
    at_q = constraint_blocks(pairs, groups, model.num_rows, q, zero, t)
    residual = jnp.max(jnp.abs(at_q.phi), initial=0.0)
    s = system(model, mass, at_q.blocks, formulation.penalty)
    qd_new, converged = constrained_solve(s, mass * qd, -s.scale * at_q.g, tol, iterations)
    residual = jnp.where(converged, residual, jnp.inf)
    return q, qd_new, residual
