"""Equations of motion with joint friction: the friction forces depend on the reactions.

With friction elements (`jaxmb.elements.friction`) the equations of motion are

    M qdd + C^T lambda = F + sum_k -T_k g_k,   C qdd = gamma,
    T_k = mu_k a_k N_k(lambda_X(k)) tanh(a_k s_dot_k / v_s,k),          g_k = (ds_k/dq)^T,

so the friction forces T (one per element) depend on the reactions lambda, lambda on qdd and
qdd on T. For fixed T the equations are linear: qdd and the multipliers picked by a reaction
method are affine in T,

    (qdd, lambda)(T) = (qdd_0, lambda_0) + (Qd, L) T,

where (qdd_0, lambda_0) solve the frictionless equations and the columns of (Qd, L) solve them
with F = -g_k, gamma = 0 (k + 1 solves with one factorization of C). What remains is a small
nonlinear system in the k friction forces,

    r(T) = T - Phi(lambda_0 + L T) = 0,      Phi_k = mu_k a_k N_k(.) tanh(.),

solved by Newton's method (`optimistix.Newton`, started from the friction of the frictionless
reactions) with implicit derivatives (`optimistix.ImplicitAdjoint`: dT = (I - Phi' L)^-1 dr,
so gradients do not differentiate the iterations). Its Jacobian I - Phi' L is singular only
when the friction can lock the mechanism (mu N comparable to the load that drives it, e.g. a
jamming drawer): then Newton does not converge and `converged` is False.

Which reactions: N_k needs the reaction of pair X(k). When that reaction is unique (the pair
is solvable, seed 001 section 3) every reaction method gives it. When it is not (an
overconstrained mechanism) the friction, and so the motion, depends on how the load is shared,
which the joint compliance decides: then only `mb.Compliance` (physical) is accepted, and a
method that picks one of infinitely many solutions (min-norm, elimination) raises an error
naming the pair (`check_unique`) instead of producing an arbitrary motion.
"""

from typing import ClassVar, Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import Coordinates, CoordinatesLike, Scalar, ScalarLike
from .._formulations.base import AbstractRatiosApart, AbstractStateFormulation
from .._linalg.dense import solve
from .._model.input_checks import check_shapes
from .._model.model import Model
from .._model.terms import StateTerms, state_terms
from .._reaction_methods._base import AbstractReactionMethod
from .._reaction_methods._common import eliminated_multipliers
from .._reaction_methods.eliminate import KeptRows
from .._reaction_methods.spellings import as_method
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbRuntimeError
from .._runtime.results import RESULTS
from .solvability import solvability

NEWTON_RTOL = 1e-12
NEWTON_ATOL = 1e-12
"""Newton's tolerances on the friction forces scaled by 1 + max |T_0| (dimensionless)."""
NEWTON_MAX_STEPS = 64


class _DenseSolve(lx.AbstractLinearSolver):
    """lineax solver for the small dense Newton systems through `jaxmb._linalg.dense.solve` (one
    matrix to LAPACK at a time, also under vmap)."""

    def init(self, operator, options):
        return operator.as_matrix(), False

    def compute(self, state, vector, options):
        matrix, transposed = state
        return solve(matrix.T if transposed else matrix, vector), lx.RESULTS.successful, {}

    def transpose(self, state, options):
        matrix, transposed = state
        return (matrix, not transposed), options

    def conj(self, state, options):
        return state, options

    def assume_full_rank(self):
        return True


class FrictionForces(eqx.Module):
    """The solution of the equations of motion with friction at one state.

    **Fields:** `names` (the friction elements, in the order added); `force` (k,): the friction
    force or torque T_k along each slip coordinate (positive with the slip rate); `generalized`
    (k, n): their generalized forces -T_k (ds_k/dq)^T; `power` (k,): the power each dissipates,
    T_k s_dot_k >= 0; `normal_load` (k,): N_k; `slip_rate` (k,): s_dot_k; `qdd`, `lam`: the
    accelerations and multipliers with friction; `converged`: whether Newton's method met its
    tolerance; `num_steps`: its iterations. `*batch`: leading axes where vmapped. Printed, it
    shows the values per element (min .. max over a batch).
    """

    names: tuple[str, ...] = eqx.field(static=True)
    force: Float[Array, "*batch k"]
    generalized: Float[Array, "*batch k n"]
    power: Float[Array, "*batch k"]
    normal_load: Float[Array, "*batch k"]
    slip_rate: Float[Array, "*batch k"]
    qdd: Float[Array, "*batch n"]
    lam: Float[Array, "*batch rows"]
    converged: Bool[Array, " *batch"]
    num_steps: Int[Array, " *batch"]

    def __repr__(self) -> str:
        """The values: force, slip rate, power and normal load of each element."""
        from .report import format_friction

        return format_friction(self)


def default_method(
    method: AbstractReactionMethod | Literal["min_norm", "auto"] | None,
    formulation=None,
) -> AbstractReactionMethod:
    """The reaction method friction uses: `method` when given (a method or "min_norm" /
    "auto", `as_method`), else the simulate formulation when it is also a reaction method
    (mb.Eliminate, mb.Auto), the minimum-norm multipliers otherwise (the same for the
    solvable pairs)."""
    if method is None:
        method = formulation if isinstance(formulation, AbstractReactionMethod) else "min_norm"
    return as_method(method)


def slip_terms(model, q, qd):
    """(G, s_dot): G (n, k) the columns (ds_k/dq)^T, s_dot (k,) the slip rates."""
    terms = [f.slip_terms(model.pair(f.pair), q, qd) for f in model.friction]
    return jnp.stack([g for g, _ in terms], axis=1), jnp.stack([r for _, r in terms])


def _rows(model):
    return tuple(model.rows(f.pair) for f in model.friction)


def _friction_of(rows):
    """Phi(T; args): the friction forces that the reactions lambda_0 + L T imply (`rows`: the
    static rows of each element's pair, closed over: optimistix's args hold arrays only)."""

    def forces(T, args):
        frictions, lam0, L, rates = args
        lam = lam0 + L @ T
        return jnp.stack([f.force(lam[r], s) for f, r, s in zip(frictions, rows, rates)])

    return forces


def solve_friction(model, q, qd, multipliers, terms, qdd=None) -> FrictionForces:
    """The equations of motion with friction at (q, qd) (module docstring).

    **Arguments:** `multipliers(terms, qdd) -> (qdd, lambda)`: the frictionless solve of the
    reaction method (linear in F and gamma; `qdd` the given accelerations or None); `terms`:
    the `EquationTerms` M, F, C, gamma (F the applied forces, gamma the acceleration
    right-hand side); `qdd`: given (inverse dynamics, statics) or None (forward dynamics).

    **Returns:** `FrictionForces`.
    """
    G, rates = slip_terms(model, q, qd)
    qdd0, lam0 = multipliers(terms, qdd)
    zero_qdd = None if qdd is None else jnp.zeros_like(qdd)
    unloaded = jnp.zeros_like(terms.gamma)
    Qd, L = jax.vmap(
        lambda g: multipliers(terms._replace(F=-g, gamma=unloaded), zero_qdd),
        in_axes=1,
        out_axes=1,
    )(G)
    rows = _rows(model)
    forces = _friction_of(rows)
    args = (model.friction, lam0, L, rates)
    T0 = forces(jnp.zeros(G.shape[1], terms.F.dtype), args)
    scale = jax.lax.stop_gradient(1.0 + jnp.max(jnp.abs(T0)))
    solver = optx.Newton(rtol=NEWTON_RTOL, atol=NEWTON_ATOL, linear_solver=_DenseSolve())
    sol = optx.root_find(
        lambda y, a: y - forces(scale * y, a) / scale,
        solver,
        T0 / scale,
        args,
        max_steps=NEWTON_MAX_STEPS,
        throw=False,
        adjoint=optx.ImplicitAdjoint(linear_solver=_DenseSolve()),
    )
    T = scale * sol.value
    lam = lam0 + L @ T
    return FrictionForces(
        names=tuple(f.name for f in model.friction),
        force=T,
        generalized=-(G * T[None, :]).T,
        power=T * rates,
        normal_load=jnp.stack([f.normal_load(lam[r]) for f, r in zip(model.friction, rows)]),
        slip_rate=rates,
        qdd=qdd0 + Qd @ T,
        lam=lam,
        converged=sol.result == optx.RESULTS.successful,
        num_steps=sol.stats["num_steps"],
    )


def method_multipliers(model, method, *, in_loop=False):
    """`multipliers(terms, qdd)` of the bound reaction `method` for `solve_friction`. In
    the integrator's loop (`in_loop`) an elimination skips the removable-set check of every
    call (simulate checks the rows at the start)."""
    if in_loop and isinstance(method, KeptRows):
        return lambda terms, qdd: eliminated_multipliers(terms, method.keep, qdd)
    return lambda terms, qdd: method.multipliers(model, terms, qdd)


def not_unique_messages(model, method_name):
    return tuple(
        _errors.named(
            f"the reactions of pair {f.pair!r}, which carries the friction element "
            f"{f.name!r}, are not unique (the mechanism is overconstrained there, seed 001 section "
            f"3), so its friction depends on how the joints share the load; method "
            f"{method_name!r} picks one of infinitely many sharings and would give an arbitrary "
            "motion. Pass method=mb.Compliance(stiffness, default), the joints' stiffness, "
            "which decides the sharing."
        )
        for f in model.friction
    )


def check_unique(x, model, solvable, method):
    """x, raising (also inside jit) when `method` is not physical and the reactions of a pair
    with friction are not unique (`solvable`: the per-pair flags of `solvability`)."""
    if not model.friction or method.physical:
        return x
    index = {name: k for k, name in enumerate(model.pair_names)}
    bad = ~jnp.stack([solvable[..., index[f.pair]] for f in model.friction], axis=-1)
    bad = jnp.reshape(bad, (-1, len(model.friction))).any(axis=0)
    return _errors.branched_error_if(
        x, jnp.any(bad), jnp.argmax(bad), not_unique_messages(model, method.name)
    )


def check_unique_at(x, model, q, t, method):
    """`check_unique` with the solvability analysis at (q, t) (no derivative flows into it)."""
    if not model.friction or method.physical:
        return x
    frozen = jax.tree.map(
        lambda v: jax.lax.stop_gradient(v) if eqx.is_inexact_array(v) else v, model
    )
    report = solvability(frozen, jax.lax.stop_gradient(q), jax.lax.stop_gradient(t))
    return check_unique(x, model, report.solvable, method)


def not_converged_message(model, where):
    return f"{where}: {_not_converged(model)}"


def _not_converged(model):
    names = ", ".join(f.name for f in model.friction)
    return (
        f"the equations of motion with friction ({names}) have no solution that "
        f"Newton's method finds in {NEWTON_MAX_STEPS} steps: the friction can lock the "
        "mechanism here (mu N comparable to or above the load that drives the pair, e.g. a "
        "jamming slider); check the friction coefficients and the geometry"
    )


def checked_converged(x, model, solution):
    """x, raising (also inside jit) when Newton's method did not converge."""
    return _errors.error_if(x, ~jnp.all(solution.converged), _errors.named(_not_converged(model)))


def at_state(model, q, qd, t, method, *, gamma=None, qdd=None, in_loop=False, terms=None):
    """`solve_friction` at (q, qd, t) with the bound reaction `method`: M, F, C and gamma
    from `terms` (the `StateTerms` at the state, formed here when None; `gamma` replaces
    theirs when given), `qdd` given or None."""
    terms = state_terms(model, q, qd, t) if terms is None else terms
    equation = terms.equation_terms
    equation = equation if gamma is None else equation._replace(gamma=gamma)
    multipliers = method_multipliers(model, method, in_loop=in_loop)
    return solve_friction(model, q, qd, multipliers, equation, qdd)


def friction_accelerations(model, q, qd, t, gamma, method):
    """qdd with friction (for `accelerations`), raising when a friction pair's reactions are
    not unique and `method` is not physical, or when Newton's method does not converge."""
    with _errors.reporting("accelerations"):
        method = default_method(method).bind(model)
        return _friction_accelerations(model, q, qd, t, gamma, method)


@_errors.checked_jit
def _friction_accelerations(model, q, qd, t, gamma, method):
    solution = at_state(model, q, qd, t, method, gamma=gamma)
    qdd = check_unique_at(solution.qdd, model, q, t, method)
    return checked_converged(qdd, model, solution)


def friction_forces(
    model: Model,
    q: CoordinatesLike,
    qd: CoordinatesLike,
    t: ScalarLike = 0.0,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] = "min_norm",
    *,
    qdd: CoordinatesLike | None = None,
) -> FrictionForces:
    """The friction forces at a state: the equations of motion with friction solved there.

    **Arguments:**
    - `model`: a built `Model` with friction elements.
    - `q`, `qd`: the state, coordinates (n,) and their rates.
    - `t`: time (s).
    - `method`: the reaction method the friction's normal loads come from; a pair's reaction
      must be unique unless it is `mb.Compliance` (the joints' stiffness then shares the load
      of an overconstrained pair).
    - `qdd`: given accelerations (a driven motion), or None for those of the model.

    **Returns:** `FrictionForces` (friction forces, their generalized forces and dissipated
    power, normal loads, qdd, lambda, and whether Newton's method converged). jit, vmap and
    grad work; the derivatives are implicit (they do not differentiate the iterations).
    """
    if not model.friction:
        raise ValueError(
            "friction_forces: the model has no friction elements "
            "(mb.RevoluteFriction, mb.TranslationalFriction)"
        )
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    with _errors.reporting("friction_forces"):
        check_shapes(model, q=q, qd=qd)
        bound = default_method(method).bind(model)
        qdd = None if qdd is None else jnp.asarray(qdd, jnp.float64)
        if qdd is not None:
            check_shapes(model, qdd=qdd)
        return _friction_forces(model, q, qd, jnp.asarray(t, jnp.float64), bound, qdd)


@_errors.checked_jit
def _friction_forces(model, q, qd, t, method, qdd, check=True):
    solution = at_state(model, q, qd, t, method, qdd=qdd)
    if not check:
        return solution
    force = check_unique_at(solution.force, model, q, t, method)
    return eqx.tree_at(lambda s: s.force, solution, force)


def simulate_accelerations(model, q, qd, t, terms, method):
    """qdd with friction for the integrator's right-hand side: nan where Newton's method does
    not converge, so that the step is rejected (and, where that persists, the run stops and
    `check_stop` names the cause)."""
    solution = at_state(model, q, qd, t, method, in_loop=True, terms=terms)
    return jnp.where(solution.converged, solution.qdd, jnp.nan)


def check_stop(model, method, failed, stop):
    """Eagerly, after a failed simulate of a model with friction: raise RuntimeError when the
    friction equations have no (converging) solution at the last state reached (a
    JaxmbRuntimeError, RESULTS.nonlinear_divergence), `stop` =
    (t, q, qd); otherwise return and let the generic diagnosis speak."""
    failed, t, q, qd = (_errors.concrete(x) for x in (failed, *stop))
    if not model.friction or failed is None or not bool(failed) or t is None or q is None:
        return
    solution = _friction_forces(model, q, qd, t, method, None, check=False)
    if not bool(solution.converged):
        raise JaxmbRuntimeError(
            not_converged_message(model, f"simulate (stopped at t = {float(t):.10g})"),
            function="simulate",
            cause=RESULTS.nonlinear_divergence,
        )


class WithFriction(AbstractRatiosApart):
    """The formulation `simulate` runs for a model with friction elements: the accelerations of
    the coupled friction solve (`simulate_accelerations`, over the bound reaction `method`),
    everything else (stabilization, solver wrapping, passage monitor) that of `formulation`,
    the state formulation the user chose. At the start the reactions of the friction pairs
    must be unique unless `method` is physical (`check_unique_at`)."""

    formulation: AbstractStateFormulation
    method: AbstractReactionMethod

    @property
    def baumgarte(self) -> bool:
        return self.formulation.baumgarte

    @property
    def monitored(self) -> bool:
        return self.formulation.monitored

    stabilizable: ClassVar[bool] = True  # the coupled friction solve reads the terms' gamma

    def accelerations(self, model: Model, terms: StateTerms) -> Coordinates:
        return simulate_accelerations(model, terms.q, terms.qd, terms.t, terms, self.method)

    def wrap_solver(
        self, solver: diffrax.AbstractSolver, model: Model, from_rhs: bool = False
    ) -> diffrax.AbstractSolver:
        return self.formulation.wrap_solver(solver, model, from_rhs)

    def check_start(self, model: Model, q0: Coordinates, t0: Scalar) -> Coordinates:
        q0 = self.formulation.check_start(model, q0, t0)
        return check_unique_at(q0, model, q0, t0, self.method)

    def diagnose_stop(self, model: Model, failed: object, stop: tuple) -> None:
        check_stop(model, self.method, failed, stop)
