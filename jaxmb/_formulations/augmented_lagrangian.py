"""The augmented-Lagrangian formulation (Bayo, Garcia de Jalon & Serna 1988; Bayo & Ledesma
1996, "ALI3-P"; ../shared/notes/augmented_lagrangian.md): accelerations, and projections of the
positions and velocities after every step, from one sparse symmetric positive-definite matrix

    S = M + alpha C'^T C',        C' = D C,   D_i = (C_i M^-1 C_i^T)^(-1/2),

whose pattern is the body graph, fixed when the model is built (`jaxmb._linalg.sparse_cholesky`:
a static-pattern block Cholesky, no rank decision). S stays positive definite with redundant
rows and at singular positions, where C loses rank.

Accelerations: from lambda_0 = 0, a fixed number K of iterations

    S qdd_{k+1} = F - C'^T lambda_k + alpha C'^T gamma',    gamma' = D gamma,
    lambda_{k+1} = lambda_k + alpha (C' qdd_{k+1} - gamma'),

written in correction form, S dqdd = r_k - alpha C'^T c_k with the residuals r_k = F - M qdd_k -
C'^T lambda_k and c_k = C' qdd_k - gamma' of the current iterate, so that the factorization's
round-off enters the corrections only (iterative refinement: qdd to about 1e-15 relative).
qdd_k converges to the unique accelerations at a rate 1 / (1 + alpha sigma^2) per singular
value sigma of the mass-scaled C': 1e-4 or less for the rows of a regular configuration, so
K = 4 leaves round-off. Near a singular position the direction whose sigma vanishes is not
enforced but penalized (its component alpha sigma / (1 + alpha sigma^2) stays bounded), so the
vector field stays smooth through the crossing where an exact solve would amplify the drift
by 1 / sigma; the projections put the state back on the constraints after every step. A
fixed count, not a tolerance, also keeps qdd a fixed smooth function of the state.

The row scaling D makes every row of C' a unit vector in the metric of M^-1, so alpha is
dimensionless (the same rule for rows in metres and radians). `penalty` = 1e8: the window
around a singular position where the vanishing direction is only penalized shrinks as
1 / sqrt(alpha), which sets the error of the crossing (measured on IFToMM A02: D9 of
benchmarks/results/design_measurements.md); cond(S) grows as alpha but
the correction form keeps the accuracy. The non-unique part of lambda is never decided here:
reactions stay with the reaction methods.

Derivatives are those of the K iterations as computed (a `lax.scan`): each solve with S is
a `lax.custom_linear_solve` (`jaxmb._linalg.sparse_cholesky.Factorization`), whose derivative
re-uses the factor, dS^-1 b = -S^-1 dS S^-1 b, so the factorization itself is never
differentiated; jax.grad and jax.jvp both work and agree with central differences, also at a
singular position.

Integration: diffrax's adaptive Runge-Kutta pairs (Tsit5; Dopri8 at tight tolerances) with
the projections below after every accepted step, not the fixed-step index-3 scheme of the
IFToMM reference solvers (ALI3-P: trapezoidal rule, Newton iterations on the positions with
the tangent M + (h^2/4) alpha C'^T C'). Measured side by side on A02 over 20 s
(`benchmarks/bench_index3.py`, design measurement D17): N = 2, the adaptive default 6.8e-6 m
in 0.06-0.09 s; ALI3-P reached 1e-5 m only at h = 1e-4 with a tuned penalty (5.3e-7 m in 2.8 s,
but 1.4e-5 / 5.7e-5 m at ten times less / more penalty), and its error stalled at 1e-4 to 2e-3
m for h down to 2.5e-4 at other penalties; N = 40, the default 6.9e-6 m in 1.9 s against
1.6e-5 m in 27 s at best (h = 2.5e-4), and h = 1e-4 jumped branch. Its Newton iterations do not
converge at the singular positions (each contracts the constraint residual along a singular
direction of C' by 1 / (1 + (h^2/4) alpha sigma^2), which tends to 1 as sigma vanishes), and
for a fixed tangent penalty alpha grows as 1 / h^2, so the multiplier update alpha Phi
amplifies the round-off of Phi: no fixed step is both accurate and cheap.

Projections (Bayo & Ledesma 1996): after each accepted step, the positions by Newton
iterations dq = argmin dq^T M dq subject to Phi_q dq = -Phi (the holonomic rows), the
velocities by the correction dqd = argmin dqd^T M dqd subject to C dqd = -(C qd + b) (all
rows); each is the same constrained solve with other right-hand sides. Unlike
`mb.Projection`, no step is rejected for a large projection: near a singular position the
vanishing direction is penalized, so no correction can jump to another branch.
"""

import dataclasses
import functools
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._custom_types import ConstraintMatrix, Coordinates, RowVector, Scalar, ScalarLike
from .._linalg import dense, sparse_cholesky as sc
from .._model.blocks import (
    body_cliques,
    constraint_blocks,
    mass_row_norms,
    multiply,
    multiply_transposed,
    velocity_blocks,
    weighted_normal_blocks,
)
from .._model.model import Model, _place_blocks
from .._model.terms import StateTerms, state_terms
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbRuntimeError
from .._runtime.results import RESULTS
from ..elements.geometry import is_real
from .base import AbstractRatiosApart
from .projecting import AbstractProjectingFormulation

ABSOLUTE_FLOOR = 1e-10
"""Accelerations below this size (1e-10 m/s^2 or rad/s^2) count as zero in the tests of
convergence and consistency: a mechanism at rest has no other scale, and there gamma is
round-off (1e-14) that redundant rows need not agree on."""


def _plain_int(value):
    """A NumPy integer as a Python int (a static field, compared and hashed as one); any other
    value as it is, for the check in `__check_init__` (a bool is refused there)."""
    return int(value) if isinstance(value, np.integer) else value


class AugmentedLagrangian(AbstractProjectingFormulation, AbstractRatiosApart):
    """`simulate(..., formulation=mb.AugmentedLagrangian())` (or "augmented_lagrangian"): the
    accelerations of the augmented-Lagrangian iteration on the sparse matrix M + alpha C'^T C'
    and mass-orthogonal projections of q and qd after every accepted step with the same
    matrix (the docs' Formulations page). No rank decision anywhere: it passes redundant
    constraints and singular positions (the IFToMM A02 N-four-bar) alike, and its cost grows
    with the number of pairs, not rows x n.

    **Arguments:**
    - `penalty` (data: a new value reuses the compiled program): alpha, dimensionless (rows
      scaled to unit norm in the metric of M^-1);
    - `iterations` (static): K, the iterations per right-hand side;
    - `tol` (data): the largest constraint residual |C' qdd - gamma'| accepted, relative to
      the size of the accelerations; above it C qdd = gamma has no solution (inconsistent
      constraints, e.g. two drivers that contradict each other): a run stopped there (its
      position projections cannot meet Phi = 0) says so.
      Loose by design: near a singular position the vanishing direction is penalized, not
      enforced, and keeps its share of the (drift-sized) residual;
    - `projection_iterations` (static): Newton iterations of the position projection;
    - `projection_tol` (data): the largest max |Phi| a step's position projection may leave
      (else the step is rejected and retried shorter)."""

    penalty: ScalarLike = 1e8
    iterations: int = eqx.field(static=True, default=4, converter=_plain_int)
    tol: ScalarLike = 1e-3
    projection_iterations: int = eqx.field(static=True, default=2, converter=_plain_int)
    projection_tol: ScalarLike = 1e-10
    baumgarte: ClassVar[bool] = False  # the projections hold the constraints at round-off
    stabilizable: ClassVar[bool] = False  # its iteration reads the exact gamma: refused
    monitored: ClassVar[bool] = False  # no rank decision: nothing to monitor
    # its projections cannot jump branches: near a singular position the vanishing direction
    # is penalized, so a correction there is at most sqrt(alpha) times the drift
    detects_jumps: ClassVar[bool] = False

    def __check_init__(self):
        for name in ("iterations", "projection_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int) and value >= 1):
                raise ValueError(
                    f"AugmentedLagrangian: {name} must be an integer >= 1, got {value!r}"
                )
        for name in ("penalty", "tol", "projection_tol"):  # data: checked where concrete
            if not is_real(getattr(self, name)):  # text, a bool, None
                raise ValueError(
                    f"AugmentedLagrangian: {name} must be a positive finite number, got "
                    f"{getattr(self, name)!r} of type {type(getattr(self, name)).__name__}"
                )
            value = _errors.concrete(jnp.asarray(getattr(self, name)))
            if value is not None and not (np.ndim(value) == 0 and np.isfinite(value) and value > 0):
                raise ValueError(
                    f"AugmentedLagrangian: {name} must be a positive finite "
                    f"number, got {value.tolist()!r}"
                )

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return accelerations(model, self, terms)

    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates:
        """q0, after the check of penalty, tol and projection_tol where they are traced (the
        concrete ones were checked at construction)."""
        for name in ("penalty", "tol", "projection_tol"):
            value = jnp.asarray(getattr(self, name))
            q0 = _errors.error_if(
                q0,
                ~(jnp.all(jnp.isfinite(value)) & jnp.all(value > 0.0)),
                f"AugmentedLagrangian: {name} must be a positive finite number (traced value)",
            )
        return q0

    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        """Eagerly: raise when the iteration does not converge at the last state reached."""
        failed, t, q, qd = (_errors.concrete(x) for x in (failed, *stop))
        if failed is None or t is None or q is None or qd is None or np.ndim(q) != 1:
            return
        if not bool(np.all(failed)):
            return
        converged = _converged_at(model, self, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(t))
        if not bool(converged):
            function = f"simulate(formulation={self!r})"
            raise JaxmbRuntimeError(
                f"{function} stopped at t = {float(t):.10g}: the "
                "augmented-Lagrangian iteration leaves C qdd = gamma unsatisfied there "
                f"(residual above tol = {float(np.asarray(self.tol)):g} after {self.iterations} "
                "iterations): the constraints are inconsistent (e.g. two drivers that "
                "contradict each other), or the penalty is too small for the mechanism "
                "(raise `penalty` or `iterations`)",
                function=function,
                cause=RESULTS.nonlinear_divergence,
            )

    def project_state(
        self, model: Model, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> tuple[Coordinates, Coordinates, Scalar]:
        """(q, qd, max |Phi| left): the position and velocity projections."""
        return project_state(model, self, q, qd, t)

    def reuses_last_stage(self, model: Model) -> bool:
        """Whether the FSAL stage is kept after a small projection (`ProjectedSolver`): yes,
        for every model. Small models save a sixth of the run time (D11); large ones too since
        `KeptFirstStage` evaluates a fresh stage inside the solver's loop over stages (before,
        a second trace of the right-hand side made the compile time grow by half at
        N = 400): N-four-bar N = 200, 1 s, 0.42 s against 0.46-0.49 s, compile unchanged;
        IFToMM A02 N = 40 over 20 s at the defaults 6.7e-6 m from the reduced solution (6.96e-6
        re-evaluating), at rtol 1e-10 7.38e-8 m (7.44e-8): design measurement D15."""
        return True

    @property
    def projection_limit(self) -> Scalar:
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


DENSE_BODIES = 24
"""Up to this many bodies S is formed and factorized dense (`DenseSystem`: C' from the model's
dense C, one Cholesky, `jaxmb._linalg.dense`), above it by the sparse level schedule
(`System`; the measured crossover: D10 of benchmarks/results/design_measurements.md)."""


def is_dense(model: Model) -> bool:
    """Whether S is dense: up to DENSE_BODIES bodies, and always for spatial bodies (the sparse
    factorization's nodes are one 3 x 3 block per planar body; two per spatial body is the
    scale issue's)."""
    return model.num_bodies <= DENSE_BODIES or model.kind.nodes != (3,)


def _row_scale(w, mass, active):
    """D_i = (C_i M^-1 C_i^T)^(-1/2) from the squared row norms w (0 for zero rows and rows
    outside `active`); no derivative (a fixed preconditioner)."""
    floor = jnp.finfo(mass.dtype).tiny + 1e-300 * jnp.max(w, initial=0.0)
    scale = jnp.where(w > floor, 1.0 / jnp.sqrt(jnp.maximum(w, floor)), 0.0)
    if active is not None:
        scale = jnp.where(active, scale, 0.0)
    return jax.lax.stop_gradient(scale)


class System(eqx.Module):
    """The constrained problem at one configuration of a large model: M (diagonal), C as
    per-pair blocks, the row scaling D and S = M + alpha C'^T C' factorized by the sparse
    block Cholesky (rows outside `active` left out)."""

    groups: list = eqx.field(static=True)
    num_rows: int = eqx.field(static=True)
    mass: Coordinates
    blocks: tuple
    scale: RowVector  # D, zero outside the active rows
    penalty: Scalar
    S: sc.Factorization

    def C(self, x):
        return self.scale * multiply(self.groups, self.blocks, x, self.num_rows)

    def CT(self, y):
        return multiply_transposed(self.groups, self.blocks, self.scale * y, self.mass.shape[0])


class DenseSystem(eqx.Module):
    """The same for a small model: C' = D C dense (from the model's dense C) and
    S = M + alpha C'^T C' factorized by one dense Cholesky."""

    mass: Coordinates
    scale: RowVector
    penalty: Scalar
    C_scaled: ConstraintMatrix
    S: dense.SpdFactorization

    @property
    def num_rows(self) -> int:
        return self.scale.shape[0]

    def C(self, x):
        return self.C_scaled @ x

    def CT(self, y):
        return self.C_scaled.T @ y


def system(model: Model, mass, blocks, penalty, active=None, scale=None) -> System:
    """`System` of `model` with C's `blocks` (rows where `active` is False are left out), the
    rows scaled by D (or by `scale`, a given row scaling without derivative)."""
    _, groups, cliques, symbolic = pattern(model)
    if scale is None:
        frozen = [jax.lax.stop_gradient(b) for b in blocks]
        w = mass_row_norms(groups, frozen, 1.0 / jax.lax.stop_gradient(mass), model.num_rows)
        scale = _row_scale(w, mass, active)
    scale = jax.lax.stop_gradient(scale)
    penalty = jax.lax.stop_gradient(jnp.asarray(penalty, mass.dtype))
    normal = weighted_normal_blocks(groups, blocks, penalty * scale**2)
    values = sc.assemble(symbolic, diag_blocks=_diagonal_blocks(mass))
    for c, block in zip(cliques, normal):
        values = values + sc.assemble_cliques(symbolic, block, c)
    return System(
        groups, model.num_rows, mass, tuple(blocks), scale, penalty, sc.factorize(symbolic, values)
    )


def blocks_of(model: Model, C) -> list:
    """C's per-pair blocks (one (pairs, rows, coordinates) array per group) read from the dense
    C (rows, n) by static gathers."""
    _, groups, _, _ = pattern(model)
    return [C[g.rows[:, :, None], g.columns[:, None, :]] for g in groups]


def dense_system(mass, C, penalty, active=None) -> DenseSystem:
    """`DenseSystem` with the dense constraint matrix `C` (rows, n)."""
    w = jnp.sum(jax.lax.stop_gradient(C) ** 2 / jax.lax.stop_gradient(mass)[None, :], axis=1)
    scale = _row_scale(w, mass, active)
    penalty = jax.lax.stop_gradient(jnp.asarray(penalty, mass.dtype))
    Cs = scale[:, None] * C
    values = jnp.diag(mass) + penalty * (Cs.T @ Cs)
    return DenseSystem(mass, scale, penalty, Cs, dense.factorize_spd(values))


def with_C(s, C_or_blocks):
    """`s` with C at another configuration (dense C, or blocks), its factor of S kept: the
    iteration then uses S at the old configuration as a preconditioner of the new one (they
    differ by the step's local error, which slows the iteration by that factor only)."""
    if isinstance(s, DenseSystem):
        return dataclasses.replace(s, C_scaled=s.scale[:, None] * C_or_blocks)
    return dataclasses.replace(s, blocks=tuple(C_or_blocks))


def _diagonal_blocks(mass):
    """M's diagonal as the factorization's 3 x 3 node blocks (`sparse_cholesky`)."""
    return jax.vmap(jnp.diag)(mass.reshape(-1, 3))


def constrained_solve(s, f, g, iterations, tol):
    """(x, lambda, consistent): K = `iterations` augmented-Lagrangian iterations from
    lambda_0 = 0 for M x + C'^T lambda = f, C' x = g (g in scaled rows; module docstring), and
    whether |C' x - g| <= tol |x| (in the kinetic metric, plus ABSOLUTE_FLOOR).

    Each iteration is S dx = f - M x_k - C'^T (lambda_k + alpha c_k), x_{k+1} = x_k + dx,
    c_{k+1} = C' x_{k+1} - g, lambda_{k+1} = lambda_k + alpha c_{k+1}: the correction form of
    the module docstring with the two products by C'^T merged, so one product by C', one by
    C'^T and one solve per iteration."""
    sqrt_m = jnp.sqrt(s.mass)

    def step(carry, _):
        x, lam, c = carry
        x = x + s.S.solve(f - s.mass * x - s.CT(lam + s.penalty * c))
        c = s.C(x) - g
        return (x, lam + s.penalty * c, c), None

    start = (jnp.zeros_like(f), jnp.zeros(s.num_rows, f.dtype), -g)
    (x, lam, c), _ = jax.lax.scan(
        step, start, None, length=iterations, unroll=isinstance(s, DenseSystem)
    )  # sparse: compile once
    size = (
        jnp.linalg.norm(sqrt_m * x)
        + jnp.linalg.norm(f / sqrt_m)
        + jnp.linalg.norm(g)
        + ABSOLUTE_FLOOR * jnp.linalg.norm(sqrt_m)
    )
    residual = jnp.linalg.norm(jax.lax.stop_gradient(c))
    return x, lam, residual <= jax.lax.stop_gradient(tol) * size


def accelerations(model: Model, formulation: AugmentedLagrangian, terms: StateTerms):
    """qdd at the state of `terms` (its applied forces F). Where C qdd = gamma has no solution
    (inconsistent constraints) this is the iteration's penalized compromise, finite: the step's
    position projection then cannot meet Phi = 0, the step is rejected, and a run that cannot
    go on stops and says why (`diagnose_stop`). Not nan: a nan in a rejected trial stage would
    turn reverse-mode gradients through the integration into nan (0 cotangent times a nan
    Jacobian)."""
    return _accelerations(model, formulation, terms)[0]


def _accelerations(model, formulation, terms):
    mass = model.mass_diagonal()
    if is_dense(model):
        s = dense_system(mass, terms.C, formulation.penalty)
        gamma = terms.gamma_exact  # as the sparse path: the projections hold the constraints
    else:
        pairs, groups, _, _ = pattern(model)
        kin = constraint_blocks(
            pairs, groups, model.num_rows, model.kind, terms.q, terms.qd, terms.t
        )
        s = system(model, mass, kin.blocks, formulation.penalty)
        gamma = kin.gamma
    qdd, _, consistent = constrained_solve(
        s, terms.F, s.scale * gamma, formulation.iterations, formulation.tol
    )
    return qdd, consistent


@eqx.filter_jit
def _converged_at(model, formulation, q, qd, t):
    return _accelerations(model, formulation, state_terms(model, q, qd, t))[1]


PROJECTION_SOLVE_ITERATIONS = 2
"""Iterations of each constrained solve in the projections (at most `iterations`): their
right-hand sides are a step's drift (about the local error), which the first iteration
reduces by 1 / (1 + alpha sigma^2) <= 1e-4 on a regular configuration, so a second leaves
round-off (design measurement D11)."""


def project_state(model: Model, formulation: AugmentedLagrangian, q, qd, t):
    """(q, qd, max |Phi| left by the position projection): Newton iterations of the
    minimum-M-norm correction Phi_q dq = -Phi with the factor at the step's end, then the
    velocity correction with C at the projected q (module docstring). Without Pfaffian rows
    both use one factorization (S at the step's end, a preconditioner at the projected q)."""
    mass = model.mass_diagonal()
    zero = jnp.zeros(model.n, q.dtype)  # over the velocity coordinates
    K, tol = min(formulation.iterations, PROJECTION_SOLVE_ITERATIONS), formulation.tol
    hol = np.flatnonzero(model.holonomic_rows)
    layout = None if is_dense(model) else pattern(model)[:2]  # (pairs, groups) when sparse

    def velocity_terms(q, qd, t):  # (C or its blocks, g = C qd + b) from one pass
        pairs, groups = model._groups() if layout is None else layout
        blocks, g = velocity_blocks(pairs, groups, model.num_rows, model.kind, q, qd, t)
        if layout is not None:
            return blocks, g
        C = _place_blocks(groups, list(blocks), model.num_rows, model.n, q.dtype, model.kind)
        return C, g

    def build(c, active=None):
        if layout is None:
            return dense_system(mass, c, formulation.penalty, active)
        return system(model, mass, c, formulation.penalty, active)

    s = None
    if model.m:
        C_end = velocity_terms(q, zero, t)[0]  # C (or its blocks) at the step's end
        s_hol = s = build(C_end, jnp.asarray(model.holonomic_rows))

        def newton(q, _):
            phi = jnp.zeros(model.num_rows, q.dtype).at[hol].set(model.phi(q, t))
            dq = constrained_solve(s_hol, zero, -s_hol.scale * phi, K, tol)[0]
            return model.retract(q, dq), None

        q, _ = jax.lax.scan(newton, q, None, length=formulation.projection_iterations)
    residual = jnp.max(jnp.abs(model.phi(q, t)), initial=0.0)
    C, g = velocity_terms(q, qd, t)
    s = with_C(s, C) if s is not None and model.h == 0 else build(C)
    # the correction dqd = argmin |dqd|_M subject to C dqd = -(C qd + b): near a singular
    # position the weakly enforced direction keeps its velocity (no round-off from a solve of
    # the whole velocity), so projecting twice changes nothing
    dqd = constrained_solve(s, zero, -s.scale * g, K, tol)[0]
    return q, qd + dqd, residual
