"""Constraint reactions: multipliers, generalized reactions per pair, forces on bodies.

M qdd + C^T lambda = F (seed 001, eq. 10); the generalized reaction that pair X applies to the
system is -C_X^T lambda_X (eq. 16, sign of API.md), and their sum is M qdd - F (eq. 15).
With redundant constraints lambda is not unique; a reaction method (one class per method, of
the base `AbstractReactionMethod`, see `jaxmb._reaction_methods`) picks one:

- `mb.MinNorm()` ("min_norm"): the minimum-norm lambda (pseudo-inverse);
- `mb.Eliminate(rows)`: drop those rows, solve the reduced nonsingular augmented system
  (eq. 11) and set their multipliers to zero (seed 001, section 3.1 and 4.4);
- `mb.Auto()` ("auto"): eliminate the rows that pivoted QR of C^T marks dependent;
- `mb.Compliance(stiffness, default)`: the reactions that the joints' stiffness selects
  (the rigid limit of the compliant mechanism; unit-consistent).

Only the reactions of solvable pairs (see `solvability`) are the same whichever is used.
"""

import dataclasses
import warnings
from typing import Literal

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Real

from .._custom_types import CoordinatesLike, ScalarLike
from .._formulations import augmented_lagrangian as al
from .._formulations.trajectory import Trajectory
from .._model.input_checks import check_shapes
from .._model.model import Model
from .._model.state_checks import checked_configuration, checked_state, checked_velocities
from .._model.terms import state_terms
from .._reaction_methods._base import AbstractReactionMethod
from .._reaction_methods.spellings import as_method
from .._runtime import errors as _errors
from .._runtime.results import RESULTS
from . import friction as _friction
from .solvability import (
    UndecidedSolvabilityWarning,
    reaction_flags,
    solvability,
    suggesting_rows,
    warn_undecided,
)
from .velocity import kinematics

STATE_TOL = 1e-6
"""`reactions` refuses |Phi| > STATE_TOL (1 + max |q|) or |C qd + b| > STATE_TOL (1 + max |qd|)
(looser than simulate's check of q0: saved states carry the integrator's drift)."""


class NonUniqueReactionWarning(UserWarning):
    """Reactions of pairs that are not unique were computed by a method that picks one of
    infinitely many (min-norm, elimination); `mb.Compliance` gives the physical ones."""


def _warn_not_unique(method, rx, where):
    """Warn (once per call site: the default warnings filter, with the warning attributed to
    the caller of `where`) when `method` is not physical and some pairs' reactions are not
    unique. Eager calls only: inside jit the flags are not known while tracing."""
    if method.physical or _traced(rx.solvable_array):
        return
    flags = jnp.reshape(rx.solvable_array, (-1, len(rx.pair_names)))
    if rx.undecided_array is not None:  # warned about as undecided (`warn_undecided`)
        flags = flags | jnp.reshape(rx.undecided_array, flags.shape)
    names = [n for n, ok in zip(rx.pair_names, flags.all(axis=0).tolist()) if not ok]
    if names:
        warnings.warn(
            f"{where}: the reactions of {', '.join(names)} are not unique (seed 001, section 3); "
            f"method {method.name!r} returns one of infinitely many, not what the joints "
            "carry. method=mb.Compliance(stiffness, default) gives the reactions the joints' "
            "stiffness selects.",
            NonUniqueReactionWarning,
            stacklevel=3,
        )


class Reactions(eqx.Module):
    """Reactions at one state (or, from a Trajectory, with a leading time axis).

    **Fields:** `lam` (multipliers, row order of C), `qdd`, `generalized_array` (pairs x n: the
    generalized force -C_X^T lambda_X of each pair), `solvable_array`; the dict views
    `generalized` and `solvable` are keyed by pair name; `on_body(pair, body)` gives the
    force (global fx, fy) and torque about the body's centre of mass. With friction elements:
    `friction_names`, `friction_force` (the friction force or torque of each, positive with
    its slip rate) and `friction_array` (their generalized forces, elements x n; the dict view
    `friction`); the multipliers then balance M qdd - F minus the friction. `pair_bodies`:
    the bodies (ground left out) of each pair. Printed, it shows the values: each pair's
    force and torque on each of its bodies and its flag (min .. max along a trajectory).
    `singular`: the rank of C at the state is below the mechanism's generic rank (its rank at
    a configuration near `model.q0` assembled onto the constraints, `generic_rank`, so also
    for a model built at a singular position): a singular configuration, e.g. a four-bar's
    collinear position: the reactions have no derivative
    there, so their tangents and gradients are NaN (and an eager `jax.grad` warns,
    `SingularDerivativeWarning`), never a plausible wrong number. Models above
    `DENSE_BODIES` bodies (the sparse path) leave it None. `undecided_array` (dict view
    `undecided`; the sparse path only, else None): pairs whose flag the sparse test cannot
    decide (near a singular position), flagged not unique, with an
    `UndecidedSolvabilityWarning` eagerly; `mb.solvability(model, q, t, method="qr")` decides
    them.

    Shapes: `rows` = m + h rows of C, `n` coordinates, `pairs`, `k` friction elements;
    `*batch` is empty at one state and the time axis (T,) along a Trajectory or in
    `inverse_dynamics` (plus any vmapped axes).
    """

    pair_names: tuple[str, ...] = eqx.field(static=True)
    body_names: tuple[str, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    lam: Float[Array, "*batch rows"]
    qdd: Float[Array, "*batch n"]
    generalized_array: Float[Array, "*batch pairs n"]
    solvable_array: Bool[Array, "*batch pairs"]
    friction_names: tuple[str, ...] = eqx.field(static=True, default=())
    friction_force: Float[Array, "*batch k"] | None = None
    friction_array: Float[Array, "*batch k n"] | None = None
    pair_bodies: tuple[tuple[str, ...], ...] = eqx.field(static=True, default=())
    singular: Bool[Array, " *batch"] | None = None
    rotations: Float[Array, "*batch bodies 3 3"] | None = None  # spatial: A of each body
    undecided_array: Bool[Array, "*batch pairs"] | None = None

    def __repr__(self) -> str:
        """The values: per pair the force and torque on each of its bodies and whether they
        are unique (min .. max over the states of a trajectory)."""
        from .report import format_reactions

        return format_reactions(self)

    @property
    def friction(self) -> dict[str, Float[Array, "*batch n"]]:
        """Friction element name -> its generalized force -T (ds/dq)^T."""
        forces = self.friction_array
        if forces is None:
            return {}
        return {nm: forces[..., k, :] for k, nm in enumerate(self.friction_names)}

    @property
    def generalized(self) -> dict[str, Float[Array, "*batch n"]]:
        return {nm: self.generalized_array[..., k, :] for k, nm in enumerate(self.pair_names)}

    @property
    def solvable(self) -> dict[str, Bool[Array, " *batch"]]:
        return {nm: self.solvable_array[..., k] for k, nm in enumerate(self.pair_names)}

    @property
    def undecided(self) -> dict[str, Bool[Array, " *batch"]]:
        """Pair name -> its flag is undecided (the sparse path; empty for the dense one)."""
        if self.undecided_array is None:
            return {}
        return {nm: self.undecided_array[..., k] for k, nm in enumerate(self.pair_names)}

    def on_body(self, pair_name: str, body_name: str) -> tuple[Float[Array, "..."], ...]:
        """(fx, fy, torque) that pair `pair_name` applies to body `body_name` (global force,
        counter-clockwise torque about the centre of mass); in a spatial model (force,
        moment): global 3-vectors, the moment about the body's centre of mass (the body-frame
        moment N' of the generalized force (F, N') turned by the body's rotation A)."""
        if pair_name not in self.pair_names:
            raise KeyError(f"no pair named {pair_name!r}; pairs: {list(self.pair_names)}")
        if body_name not in self.body_names:
            raise KeyError(f"no body named {body_name!r}; bodies: {list(self.body_names)}")
        k = self.pair_names.index(pair_name)
        if self.pair_bodies and body_name not in self.pair_bodies[k]:
            joined = " and ".join(repr(b) for b in self.pair_bodies[k]) or "the ground only"
            raise KeyError(
                f"pair {pair_name!r} does not act on body {body_name!r}; it joins {joined}"
                + (" (and the ground)" if len(self.pair_bodies[k]) < 2 else "")
            )
        f = self.generalized[pair_name]
        b = self.body_names.index(body_name)
        if self.rotations is not None:
            force, moment = f[..., 6 * b : 6 * b + 3], f[..., 6 * b + 3 : 6 * b + 6]
            return force, jnp.einsum("...ij,...j->...i", self.rotations[..., b, :, :], moment)
        k = 3 * b
        return f[..., k], f[..., k + 1], f[..., k + 2]


class SingularDerivativeWarning(UserWarning):
    """Reactions were differentiated at a singular configuration: the derivatives are NaN."""


@jax.custom_jvp
def _no_derivative_where(singular, x):
    """x; its tangent is NaN where `singular` (broadcast over x's trailing axes). At a
    configuration where C loses rank the rank decision makes the reactions discontinuous, and
    differentiating their formula with the rank held fixed gives a finite, wrong number (the
    N = 1 N-four-bar's A0 y at the collinear position: -1.56 against the one-sided -1.0)."""
    return x


@_no_derivative_where.defjvp
def _no_derivative_where_jvp(primals, tangents):
    singular, x = primals
    _, dx = tangents
    flag = jnp.reshape(singular, singular.shape + (1,) * (x.ndim - singular.ndim))
    return x, dx * jnp.where(flag, jnp.nan, 1.0)


GENERIC_DISPLACEMENT = 1e-3
"""Size of the random displacement of q0, relative to 1 + max |q0|, from which `generic_rank`
assembles a nearby configuration (far from round-off, well inside the branch of q0)."""

GENERIC_STEPS = 50
"""Gauss-Newton steps of that assembly (quadratic where C is regular: a few)."""


def generic_rank(model, t):
    """The mechanism's rank of C near q0 at time t: max(rank C(q0), rank C(q_g)), q_g the
    configuration assembled onto Phi(q, t) = 0 nearest q0 + d, d a fixed random displacement
    of GENERIC_DISPLACEMENT (1 + max |q0|) (`assemble`'s iteration). A model built at a
    singular position (q0 itself singular) then still has its generic rank. q_g counts only
    when the assembly converged (max |Phi| <= 1e-12 (1 + max |q|)): off the constraints the
    rank can exceed the generic one (a redundant row is independent there)."""
    from .._linalg.dense import numerical_rank
    from .assemble import _solve

    q0 = jax.lax.stop_gradient(jnp.asarray(model.q0, jnp.float64))
    rank0 = numerical_rank(jax.lax.stop_gradient(model.C(q0, t)))
    if not model.m:
        return rank0
    scale = 1.0 + jnp.max(jnp.abs(q0))
    direction = np.random.default_rng(20261207).standard_normal(model.n)
    step = GENERIC_DISPLACEMENT * scale * jnp.asarray(direction / np.linalg.norm(direction))
    start = model.retract(q0, step)  # q0 + step for planar bodies

    def assembled():
        q, residual = _solve(model, start, t, 1e-12 * scale, GENERIC_STEPS)
        q, residual = jax.lax.stop_gradient((q, residual))
        converged = residual <= 1e-12 * (1.0 + jnp.max(jnp.abs(q)))
        rank = numerical_rank(jax.lax.stop_gradient(model.C(q, t)))
        return jnp.where(converged, jnp.maximum(rank0, rank), rank0)

    # a full rank at q0 is the generic one: no assembly
    return jax.lax.cond(rank0 < min(model.num_rows, model.n), assembled, lambda: rank0)


def _rank_dropped(model, rank, t, reference=None):
    """Whether `rank` (of C at the state) is below the mechanism's generic rank at time t
    (`generic_rank`, or `reference` when given)."""
    return rank < (generic_rank(model, t) if reference is None else reference)


def _warn_singular_derivative(rx, where, *inputs):
    """Eagerly under jax.grad / jvp (inputs are tracers with known values): warn when the
    state is singular, where the derivatives are NaN."""
    if rx.singular is None or not _traced(*inputs):
        return
    known = _errors.concrete(rx.singular)
    if known is not None and bool(known.any()):
        warnings.warn(
            f"{where}: differentiated at a singular configuration (the rank of C is below its "
            "generic rank near model.q0): the reactions have no derivative there, so their "
            "derivatives are NaN (Reactions.singular marks the states)",
            SingularDerivativeWarning,
            stacklevel=3,
        )


def _traced(*trees):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(trees))


def flags_method(model: Model) -> Literal["qr", "sparse"]:
    """The solvability test behind `Reactions.solvable`: seed 001's pivoted QR ("qr") for the
    models the dense path serves, "sparse" above (no dense factorization of C: a statics call
    of a 400-plate linkage costs milliseconds instead of seconds)."""
    return "qr" if al.is_dense(model) else "sparse"


def generalized_by_pair(
    model: Model, C: Float[Array, "rows n"], lam: Float[Array, " rows"]
) -> Float[Array, "pairs n"]:
    """-C_X^T lambda_X of every pair X, (pairs, n): the rows' terms -lambda_r C_r summed by
    owner (one segment sum, not one product per pair: a traced program of thousands of pairs
    stays a few operations)."""
    table = model.row_table
    return jax.ops.segment_sum(  # negated inside: a sum of zero terms is +0, not -0
        -(C * lam[:, None]),
        table.owner,
        num_segments=len(table.slices),
        indices_are_sorted=True,
    )


def _reactions_at(model, q, qd, t, method, qdd=None, *, check=False, reference=None):
    """Reactions at one state by the bound `method`; `qdd` given (statics, inverse dynamics)
    or, when None, the model's unique accelerations; `check` refuses a state off the
    constraints (see `reactions`); `reference`: the generic rank (`generic_rank`), computed
    here when None."""
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    with _errors.reporting("reactions"):  # the state's checks: reactions' (statics' too)
        check_shapes(model, q=q, qd=qd)
        if check:
            q, qd = checked_state(model, q, qd, t, STATE_TOL)
    terms = state_terms(model, q, qd, t)
    solution = None
    if model.friction:  # the friction depends on the reactions: a coupled solve
        solution = _friction.at_state(model, q, qd, t, method, qdd=qdd, terms=terms)
        qdd, lam = solution.qdd, solution.lam
        lam = _friction.checked_converged(lam, model, solution)
    else:
        qdd, lam = method.multipliers(model, terms.equation_terms, qdd)
    gen = generalized_by_pair(model, terms.C, lam)
    # the flags are piecewise constant: no derivative flows into the analysis (whose pivoted QR
    # has no batched JVP rule either)
    frozen = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, model
    )
    report = reaction_flags(
        frozen, jax.lax.stop_gradient(q), jax.lax.stop_gradient(t), flags_method(model)
    )
    known = report.solvable if report.undecided is None else report.solvable | report.undecided
    lam = _friction.check_unique(lam, model, known, method)  # undecided: not refused
    singular = None
    if flags_method(model) == "qr" and model.num_rows:
        singular = _rank_dropped(frozen, report.rank, jax.lax.stop_gradient(t), reference)
        lam, qdd, gen = (_no_derivative_where(singular, x) for x in (lam, qdd, gen))
        if solution is not None:
            solution = dataclasses.replace(
                solution,
                force=_no_derivative_where(singular, solution.force),
                generalized=_no_derivative_where(singular, solution.generalized),
            )
    return Reactions(
        pair_names=model.pair_names,
        body_names=model.body_names,
        method=method.name,  # replaced by the caller's method's name outside the compiled part
        lam=lam,
        qdd=qdd,
        generalized_array=gen,
        solvable_array=report.solvable,
        friction_names=tuple(f.name for f in model.friction),
        friction_force=None if solution is None else solution.force,
        friction_array=None if solution is None else solution.generalized,
        pair_bodies=tuple(
            tuple(b.name for b in p.bodies if not b.is_ground) for p in model.pair_info
        ),
        singular=singular,
        rotations=model.rotations(q) if model.dim == 3 else None,
        undecided_array=report.undecided,
    )


def reactions(
    model: Model,
    q: CoordinatesLike | Trajectory,
    qd: CoordinatesLike | None = None,
    t: ScalarLike = 0.0,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] = "min_norm",
    *,
    check: bool = True,
) -> Reactions:
    """Constraint reactions at a state, or along a `Trajectory` (vmapped over time).

    **Arguments:**
    - `model`: a built `Model`.
    - `q`, `qd`, `t`: the state, coordinates (n,), their rates and the time (s); or a
      `Trajectory` as `q` (then `qd` and `t` are left out), for the reactions along it.
    - `method`: a reaction method, `mb.MinNorm()` (or "min_norm", the default), `mb.Auto()`
      (or "auto"), `mb.Eliminate(rows=(...))` or `mb.Compliance(stiffness, default)`.
    - `check`: refuse (also inside jit) a state with a non-finite entry or violating the
      constraints (|Phi| or |C qd + b| above `STATE_TOL` relative; e.g. a Trajectory that
      stopped early holds inf after `t_stop`), naming the entry or the pair; False computes
      at any state.

    **Returns:** `Reactions`. Only the pairs flagged in `Reactions.solvable` have reactions
    that do not depend on `method`; `mb.Compliance` gives the physical ones of the others.
    """
    with _errors.reporting("reactions"):
        method = as_method(method)
        if not isinstance(q, Trajectory) and qd is None:
            raise TypeError("reactions: pass qd (or a Trajectory)")
        bound = method.bind(model)
    at = (
        (q.q[0], q.ts[0], "at the first saved state")
        if isinstance(q, Trajectory)
        else (q, t, "at this state")
    )
    with suggesting_rows(model, *at), _errors.reporting(f"reactions(method={method.name})"):
        if isinstance(q, Trajectory):
            rx = _reactions_along(model, (q.q, q.qd, q.ts), bound, check)
        else:
            rx = _reactions_one(
                model,
                jnp.asarray(q, jnp.float64),
                jnp.asarray(qd, jnp.float64),
                jnp.asarray(t, jnp.float64),
                bound,
                check=check,
            )
    rx = _named(rx, method)
    if not isinstance(q, Trajectory):
        rx = _decided_eagerly(model, rx, q, t)
    _warn_not_unique(method, rx, "reactions")
    if rx.undecided_array is not None and not _traced(rx.undecided_array):
        warn_undecided(rx.undecided_array, rx.pair_names, "reactions")
    _warn_singular_derivative(rx, "reactions", model, q, qd, t)
    return rx


def _decided_eagerly(model, rx, q, t):
    """`rx` with the flags that its compiled sparse test left undecided (its block cannot
    grow inside the compiled reactions) decided again by an eager `solvability(method=
    "sparse")`, which widens its block until the modes are resolved: eager calls at one state
    only, and models without friction (whose pairs' flags were checked inside)."""
    if rx.undecided_array is None or model.friction or _traced(model, q, t, rx.undecided_array):
        return rx
    if not bool(np.any(np.asarray(rx.undecided_array))):
        return rx
    with warnings.catch_warnings():  # the caller warns about what stays undecided
        warnings.simplefilter("ignore", UndecidedSolvabilityWarning)
        report = solvability(model, q, t, method="sparse")
    return dataclasses.replace(rx, solvable_array=report.solvable, undecided_array=report.undecided)


def _named(rx, method):
    """rx with its `method` field naming the caller's method (e.g. "Eliminate(rows=(5, 20))")."""
    return dataclasses.replace(rx, method=method.name)


# Compiled once per model structure, bound-method structure (a Compliance's numbers are data)
# and the function errors are reported as (`_errors.reporting`, which names an Eliminate's
# rows), so eager calls reuse the program; inside an outer jit they
# are inlined. The checks are returned as data (jaxmb._runtime.errors), so the persistent cache
# stores the programs.
_reactions_one = _errors.checked_jit(_reactions_at)


@_errors.checked_jit
def _reactions_along(model, xs, method, check=False):
    """Reactions along the time axis of xs = (q, qd, ts) or (q, qd, ts, qdd)."""

    reference = None  # the generic rank once, at the first time, not once per state
    if flags_method(model) == "qr" and model.num_rows:
        frozen = jax.tree.map(
            lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, model
        )
        reference = generic_rank(frozen, jax.lax.stop_gradient(jnp.reshape(xs[2], (-1,))[0]))

    def at(x):
        qdd = x[3] if len(x) > 3 else None
        return _reactions_at(model, x[0], x[1], x[2], method, qdd, check=check, reference=reference)

    return jax.vmap(at)(xs)


def inverse_dynamics(
    model: Model,
    ts: Real[ArrayLike, " T"],
    q: CoordinatesLike | None = None,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] = "min_norm",
) -> tuple[Trajectory, Reactions]:
    """Inverse dynamics of a kinematically driven model (dof = 0; seed 003): kinematics at the
    times `ts` (see `kinematics`), then the multipliers of M qdd + C^T lambda = F, with
    redundancy handled by `method` as in `reactions`.

    **Returns:** `(Trajectory, Reactions)` with a leading time axis.
    """
    with _errors.reporting("inverse_dynamics"):  # checked before the kinematics
        method = as_method(method)
        bound = method.bind(model)
    kin = kinematics(model, ts, q)
    n_t = kin.ts.shape[0]
    traj = Trajectory(
        ts=kin.ts,
        q=kin.q,
        qd=kin.qd,
        result=_success_codes(n_t),
        num_steps=jnp.asarray(n_t),
    )
    with _errors.reporting(f"inverse_dynamics(method={method.name})"):
        rx = _reactions_along(model, (kin.q, kin.qd, kin.ts, kin.qdd), bound)
    rx = _named(rx, method)
    _warn_not_unique(method, rx, "inverse_dynamics")
    if rx.undecided_array is not None and not _traced(rx.undecided_array):
        warn_undecided(rx.undecided_array, rx.pair_names, "inverse_dynamics")
    return traj, rx


def _consistent(model, q, qd, t):
    """qd, raising unless C qd + b = 0 (to STATE_TOL relative), naming the worst pair."""
    return checked_velocities(
        model,
        q,
        qd,
        t,
        STATE_TOL,
        "statics: velocity violates the velocity constraints C qd + b = 0 of pair {!r}; "
        "project it with mb.consistent_velocity(model, q, velocity, t)",
    )


def _success_codes(n_t):
    return jax.vmap(lambda _: RESULTS.successful)(jnp.arange(n_t))


def statics(
    model: Model,
    q: CoordinatesLike,
    t: ScalarLike = 0.0,
    method: AbstractReactionMethod | Literal["min_norm", "auto"] = "min_norm",
    *,
    velocity: CoordinatesLike | None = None,
    check: bool = True,
) -> Reactions:
    """Static reactions: qd = 0, qdd = 0, C^T lambda = F (seed 003, "Statics"); redundancy
    handled by `method` as in `reactions`.

    `check`: refuse (also inside jit) a q with a non-finite entry or violating the position
    constraints (|Phi| above `STATE_TOL` relative), naming the entry or the pair, as
    `reactions` does; False computes at any q.

    `velocity`: a quasi-static motion, qdd = 0 at the velocity qd = `velocity` (consistent with
    the constraints): inertia is neglected but the velocity-dependent forces are kept, i.e. the
    friction of the friction elements (and dampers), so the drivers' reactions are the driving
    forces that move the mechanism slowly against its loads and its friction losses. With a
    slip rate well above the regularization's velocity scale the friction is Coulomb's
    (see `jaxmb.elements.friction`). A pair with friction needs unique reactions, or
    `mb.Compliance` (see `reactions`).

    Raises when F is not balanced by the constraints (the configuration is not an equilibrium).
    """
    q = jnp.asarray(q, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    with _errors.reporting("statics"):
        method = as_method(method)
        bound = method.bind(model)
        if velocity is not None:
            velocity = jnp.asarray(velocity, jnp.float64)
            check_shapes(model, velocity=velocity)
    with _errors.reporting(f"statics(method={method.name})"):
        rx = _statics(model, q, t, bound, velocity, check)
    rx = _named(rx, method)
    rx = _decided_eagerly(model, rx, q, t)
    _warn_not_unique(method, rx, "statics")
    if rx.undecided_array is not None and not _traced(rx.undecided_array):
        warn_undecided(rx.undecided_array, rx.pair_names, "statics")
    return rx


@_errors.checked_jit  # one compiled program per model and bound-method structure, cacheable
def _statics(model, q, t, bound, velocity=None, check=True):
    if check:
        with _errors.reporting("statics"):
            check_shapes(model, q=q)
            q = checked_configuration(model, q, t, STATE_TOL)
    zeros = jnp.zeros(model.n, q.dtype)  # over the velocity coordinates
    qd = zeros if velocity is None else _consistent(model, q, velocity, t)
    rx = _reactions_at(model, q, qd, t, bound, qdd=zeros)
    F = model.forces(q, qd, t)
    if model.friction and rx.friction_array is not None:
        F = F + jnp.sum(rx.friction_array, axis=0)
    unbalanced = F + jnp.sum(rx.generalized_array, axis=0)
    scale = 1.0 + jnp.max(jnp.abs(F))
    lam = _errors.error_if(
        rx.lam,
        jnp.max(jnp.abs(unbalanced)) > 1e-9 * scale,
        "statics: the applied forces are not balanced by the constraints at this configuration "
        "(it is not an equilibrium: add a driver or a support, or use mb.simulate)",
    )
    return eqx.tree_at(lambda r: r.lam, rx, lam)
