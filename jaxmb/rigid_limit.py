"""The rigid limit of compliant joints: compliant variants of a model, and their statics.

`mb.Compliance` gives the reactions of an overconstrained rigid model as the limit of a model
whose joints are springs (seed 001, section 5; derivation under `mb.Compliance`). This
module builds that compliant model so the limit can be checked by simulation:

- `with_bushings(model, stiffness, damping)`: named revolutes and welds become `mb.Bushing`s
  with the same points (their deflection is the pair's residual Phi, so the bushing force
  K Phi + D dPhi/dt is the counterpart of the pair's multipliers);
- `with_slip(model, damping)`: named knife edges become `LateralDamper`s, lambda = d g with
  g = n^T v_K the knife edge's velocity residual (seed 001, eq. 30): a linear tyre;
- `static_equilibrium(model, q, t)`: the equilibrium of a compliant model under its loads
  (Newton on F(q) - C^T lambda = 0, Phi(q) = 0 for the constraints it still has);
- `pair_forces(model, q, qd, names)`: the force of each named bushing or lateral damper, in the
  layout of the rigid pair's multipliers;
- the three rigid-limit studies: `parallelogram_statics`, `parallelogram_cycle` and
  `robot_slip` return the relative difference between the compliant model's forces and the
  rigid model's `Compliance` reactions for each stiffness scale s, and the observed rate
  d log(error) / d log(s) (expected -1: the error is O(1/s)).
"""

import difflib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from ._linalg.dense import solve
from ._model.mechanism import checked_elements
from ._model.model import Model
from ._runtime import errors as _errors
from .elements import AbstractForceElement, Bushing, KnifeEdge, Revolute, Weld
from .elements.drive import Polynomial
from .elements.geometry import Body, as_f64, direction, dot2, point

if TYPE_CHECKING:
    import diffrax

NEWTON_TOL = 1e-12
"""Relative size of the last Newton step at which `static_equilibrium` stops."""


class LateralDamper(AbstractForceElement):
    """A knife edge made compliant: lateral force -d g n at body point s, g = n^T v_K the slip
    velocity across the body-frame unit normal n (seed 001, eq. 30). d is a tyre's cornering
    stiffness over its rolling speed (N s/m); lambda = d g plays the knife edge's multiplier."""

    nonnegative: ClassVar[tuple[str, ...]] = ("damping",)
    nonzero: ClassVar[tuple[str, ...]] = ("n",)

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: jnp.ndarray = eqx.field(converter=as_f64)
    n: jnp.ndarray = eqx.field(converter=as_f64)
    damping: jnp.ndarray = eqx.field(converter=as_f64)

    def __check_init__(self):
        self.check_body(self.body, "body")
        self.check_vector(self.s, "s")
        self.check_vector(self.n, "n")
        self.check_scalar(self.damping, "damping")

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def slip(self, q: Float[Array, " n"], qd: Float[Array, " n"]) -> Float[Array, ""]:
        """g = n^T v_K (global n of unit length)."""
        v_K = jax.jvp(lambda q_: point(q_, self.body, self.s), (q,), (qd,))[1]
        return dot2(direction(q, self.body, self.n / jnp.linalg.norm(self.n)), v_K)

    def force(self, q: Float[Array, " n"], qd: Float[Array, " n"]) -> Float[Array, "1"]:
        """lambda = d g, shape (1,)."""
        return jnp.reshape(self.damping * self.slip(q, qd), (1,))

    def generalized_force(
        self, model: Model, q: Float[Array, " n"], qd: Float[Array, " n"], t: Float[Array, ""]
    ) -> Float[Array, " n"]:
        return -self.force(q, qd)[0] * jax.grad(self.slip, argnums=1)(q, qd)


def _rows(value, count):
    return jnp.broadcast_to(jnp.asarray(value, jnp.float64), (count,))


def _bushing(pair, k, c):
    """The Bushing whose deflection is `pair`'s residual (Revolute: no angle stiffness)."""
    if isinstance(pair, Revolute):
        k3 = jnp.concatenate([_rows(k, 2), jnp.zeros(1)])
        c3 = jnp.concatenate([_rows(c, 2), jnp.zeros(1)])
        return Bushing(pair.name, pair.i, pair.j, pair.s_i, pair.s_j, stiffness=k3, damping=c3)
    if isinstance(pair, Weld):
        return Bushing(
            pair.name,
            pair.i,
            pair.j,
            pair.s_i,
            pair.s_j,
            stiffness=_rows(k, 3),
            damping=_rows(c, 3),
            free_angle=pair.angle,
        )
    raise ValueError(
        f"with_bushings: pair {pair.name!r} is a {type(pair).__name__}; only "
        "Revolute and Weld pairs have a Bushing counterpart"
    )


def _replaced(model, values, make, where):
    """`model` with the pairs named in `values` replaced by the force elements `make` builds."""
    unknown = [n for n in values if n not in model.pair_names]
    if unknown:
        raise ValueError(
            f"{where}: unknown pair(s) {unknown}; the pairs are {list(model.pair_names)}"
        )
    kept = tuple(p for p in model.pairs if p.name not in values)
    new = checked_elements([make(p, values[p.name]) for p in model.pairs if p.name in values])
    return Model(
        body_names=model.body_names,
        masses=model.masses,
        inertias=model.inertias,
        q0=model.q0,
        pair_store=kept,
        force_elements=model.force_elements + new,
    )


def with_bushings(
    model: Model,
    stiffness: Mapping[str, Real[ArrayLike, " *rows"]],
    damping: Real[ArrayLike, " *rows"] | Mapping[str, Real[ArrayLike, " *rows"]] = 0.0,
) -> Model:
    """`model` with each pair named in `stiffness` (a Revolute or a Weld) replaced by a
    `Bushing` of that stiffness (one number, or one per row) and `damping` (a number for all,
    or a dict like `stiffness`); the bushings keep the pairs' names. Traceable."""

    def make(pair, k):
        c = damping.get(pair.name, 0.0) if isinstance(damping, dict) else damping
        return _bushing(pair, k, c)

    return _replaced(model, stiffness, make, "with_bushings")


def with_slip(model: Model, damping: Mapping[str, Real[ArrayLike, ""]]) -> Model:
    """`model` with each knife edge named in `damping` replaced by a `LateralDamper` of that
    damping (N s/m), keeping its name. Traceable."""

    def make(pair, d):
        if not isinstance(pair, KnifeEdge):
            raise ValueError(
                f"with_slip: pair {pair.name!r} is a {type(pair).__name__}, not a KnifeEdge"
            )
        return LateralDamper(pair.name, pair.body, pair.s, pair.n, d)

    return _replaced(model, damping, make, "with_slip")


def pair_forces(
    model: Model, q: Float[Array, " n"], qd: Float[Array, " n"], names: Sequence[str]
) -> dict[str, Float[Array, " pair_rows"]]:
    """{name: lambda} for the named Bushings (3 values) and LateralDampers (1 value) of
    `model`: the counterparts of the rigid pairs' multipliers."""
    elements = {e.name: e for e in model.force_elements if isinstance(e, (Bushing, LateralDamper))}
    unknown = [n for n in names if n not in elements]
    if unknown:
        close = {n: difflib.get_close_matches(n, list(elements), n=1) for n in unknown}
        hints = "".join(f"; did you mean {c[0]!r} for {n!r}?" for n, c in close.items() if c)
        raise ValueError(
            f"pair_forces: {unknown} are not Bushings or LateralDampers of the "
            f"model (made by with_bushings / with_slip); they are "
            f"{list(elements)}{hints}"
        )
    return {n: elements[n].force(q, qd) for n in names}


BALANCE_RTOL = 1e-6
"""`static_equilibrium` refuses a solution whose force residual exceeds this fraction of the
applied forces (1e4 N/m bushings balance to 1e-13, 1e10 N/m to 3e-7, 1e14 N/m to 1e-3)."""


def static_equilibrium(
    model: Model, q: Real[ArrayLike, " n"], t: Real[ArrayLike, ""] = 0.0, *, max_steps: int = 50
) -> tuple[Float[Array, " n"], Float[Array, " rows"]]:
    """Equilibrium of `model` (typically a compliant variant) near `q` at time `t`:
    F(q, 0, t) = C^T lambda and Phi(q, t) = 0 for the constraint rows left (independent ones:
    the compliant model should have no redundancy left), by Newton's method with the Jacobian
    by forward-mode autodiff.

    **Returns:** `(q, lambda)`. Raises (also inside jit) when Newton does not converge, or when
    the forces it reaches do not balance to `BALANCE_RTOL` (a stiffness too high for float64).
    """
    if model.h:
        raise ValueError(
            "static_equilibrium: the model has knife edges, which fix no position "
            "(their rows constrain velocities); replace them (with_slip) or leave "
            "them out"
        )
    q = jnp.asarray(q, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    rows, n = model.num_rows, model.n
    zeros = jnp.zeros(n)

    def residual(x):
        qq, lam = x[:n], x[n:]
        F = model.forces(qq, zeros, t)
        if not rows:
            return F
        return jnp.concatenate([F - model.C(qq, t).T @ lam, model.phi(qq, t)])

    def step(state):
        k, x, _ = state
        dx = -solve(jax.jacfwd(residual)(x), residual(x))
        return k + 1, x + dx, jnp.max(jnp.abs(dx[:n]))

    def going(state):
        k, _, size = state
        return (k < max_steps) & ~(size < NEWTON_TOL * (1.0 + jnp.max(jnp.abs(q))))

    x0 = jnp.concatenate([q, jnp.zeros(rows)])
    k, x, size = jax.lax.while_loop(going, step, (0, x0, jnp.asarray(jnp.inf)))
    x = _errors.error_if(
        x,
        ~(size < NEWTON_TOL * (1.0 + jnp.max(jnp.abs(q)))),
        "static_equilibrium: Newton's method did not converge (no equilibrium "
        "near q, or the load is too large for the joints' stiffness)",
    )
    # Newton also stops when its steps fall below the resolution of q (about 1e-16 |q|): with
    # stiffness k the forces are then resolved only to about k 1e-16 |q|, and at 5e18 N/m the
    # steps vanish at once, leaving zero spring forces: the balance itself is checked
    imbalance = jnp.max(jnp.abs(residual(x)[:n]), initial=0.0)
    scale = 1.0 + jnp.max(jnp.abs(model.forces(x[:n], zeros, t)))
    x = _errors.error_if(
        x,
        ~(imbalance <= BALANCE_RTOL * scale),
        f"static_equilibrium: the forces balance only to more than {BALANCE_RTOL:g} of the "
        "applied forces: the stiffness is so high that the deflections the load needs (F / k) "
        "are below the float64 resolution of the coordinates (about 1e-16 |q|); lower the "
        "stiffness, or take the rigid limit itself (mb.statics with mb.Compliance)",
    )
    return x[:n], x[n:]


# ----- the three rigid-limit studies (tests, benchmark, example, notebook) ----------------
PARALLELOGRAM_STIFFNESS = {"O1": 1e4, "O2": 2e4, "O3": 5e3, "A1": 1.5e4, "A2": 1e4, "A3": 3e4}
"""Base stiffness K (N/m, both rows) of the triple-crank parallelogram's revolutes."""

ROBOT_DAMPING = {"W1": 200.0, "W2": 300.0, "W3": 100.0, "W4": 150.0}
"""Base lateral damping D (N s/m) of the robot's knife edges W1-W4 (tyres)."""

PARALLELOGRAM_LOAD = (3.0, -5.0)
"""The load (N) at the coupler's right end, with gravity."""


def observed_rates(
    scales: Real[ArrayLike, " scales"] | Sequence[float],
    errors: Real[ArrayLike, " scales"] | Sequence[float],
) -> np.ndarray:
    """d log(error) / d log(s) between consecutive scales (-1 for errors O(1/s))."""
    s, e = np.log(np.asarray(scales, float)), np.log(np.asarray(errors, float))
    return np.diff(e) / np.diff(s)


def _relative_errors(forces, reference):
    """max over time and rows of |force - reference|, per scale, over max |reference|."""
    forces, reference = np.asarray(forces), np.asarray(reference)
    axes = tuple(range(1, forces.ndim))
    return np.max(np.abs(forces - reference[None]), axis=axes) / np.max(np.abs(reference))


def _stack(forces, names, rows=slice(None)):
    return jnp.concatenate([forces[n][rows] for n in names])


def _rigid_rows(lam, model, names):
    return np.concatenate([np.asarray(lam[..., model.rows(n)]) for n in names], axis=-1)


def _over_scales(one, scales):
    """`one(s)` for every stiffness scale s of `scales`, in one compiled, vmapped program."""
    return eqx.filter_jit(jax.vmap(one))(jnp.asarray(scales, jnp.float64))


def _study(scales, forces, reference, **more) -> dict[str, Any]:
    """A study's result: the `scales`, the compliant model's `forces` at each and the rigid
    `reference`, the relative `errors` between them and their observed `rates`; then `more`
    (times, names, step counts)."""
    errors = _relative_errors(forces, reference)
    return dict(
        scales=np.asarray(scales),
        errors=errors,
        rates=observed_rates(scales, errors),
        reference=reference,
        forces=np.asarray(forces),
        **more,
    )


def _implicit_solver(rtol: float) -> "diffrax.AbstractSolver":
    """Kvaerno5 (L-stable implicit) whose stage equations Newton solves to 100 `rtol`: tighter,
    Newton stalls at round-off and rejects the step."""
    import diffrax
    import optimistix as optx

    return diffrax.Kvaerno5(root_finder=optx.Newton(rtol=100 * rtol, atol=rtol))


def parallelogram_statics(
    scales: Real[ArrayLike, " scales"] | Sequence[float],
    stiffness: Mapping[str, float] = PARALLELOGRAM_STIFFNESS,
    load: Real[ArrayLike, "2"] | Sequence[float] = PARALLELOGRAM_LOAD,
) -> dict[str, Any]:
    """(a) The triple-crank parallelogram held by its motor under gravity and `load`, its six
    revolutes replaced by bushings of stiffness s K: static equilibrium (Newton) for each
    scale s, bushing forces against the `Compliance(K)` statics of the rigid model.

    **Returns:** dict with `scales`, `errors` (relative, max over the revolutes' rows),
    `rates` (`observed_rates`), `reference` (the rigid rows) and `forces`."""
    from ._analyses.reactions import statics
    from ._reaction_methods.compliance import Compliance
    from .models import parallelogram

    model = parallelogram.build(load=load)
    names = list(stiffness)
    rx = eqx.filter_jit(statics)(model, model.q0, method=Compliance(stiffness, default=1.0))
    reference = _rigid_rows(rx.lam, model, names)

    def one(s):
        soft = with_bushings(model, {n: s * k for n, k in stiffness.items()})
        q, _ = static_equilibrium(soft, model.q0)
        return _stack(pair_forces(soft, q, jnp.zeros_like(q), names), names, slice(0, 2))

    return _study(scales, _over_scales(one, scales), reference)


def cycle_drive(theta0: float = 0.7, amplitude: float = 0.6, period: float = 1.0) -> Polynomial:
    """Crank angle theta0 + amplitude 256 tau^4 (1 - tau)^4, tau = t / period: out and back in
    one period, at rest at both ends with zero acceleration and jerk (C3), so a compliant model
    started in equilibrium is not shaken."""
    c = amplitude * 256.0 * np.array([0, 0, 0, 0, 1, -4, 6, -4, 1]) / period ** np.arange(9)
    c[0] = theta0
    return Polynomial(jnp.asarray(c))


def parallelogram_cycle(
    scales: Real[ArrayLike, " scales"] | Sequence[float],
    stiffness: Mapping[str, float] = PARALLELOGRAM_STIFFNESS,
    *,
    damping: float = 200.0,
    period: float = 1.0,
    num_saves: int = 41,
    rtol: float = 1e-6,
    load: Real[ArrayLike, "2"] | Sequence[float] = PARALLELOGRAM_LOAD,
) -> dict[str, Any]:
    """(b) The parallelogram driven through `cycle_drive`, its revolutes replaced by bushings
    of stiffness s K and damping `damping` (N s/m, not scaled, so the damping force is O(1/s)
    too), started in static equilibrium and integrated with diffrax's Kvaerno5 (L-stable
    implicit; Newton root finder); bushing forces at `num_saves` instants against the
    `Compliance(K)` inverse dynamics of the rigid model.

    **Returns:** dict as `parallelogram_statics`, with `ts` and `num_steps`."""
    from ._analyses.reactions import inverse_dynamics
    from ._analyses.simulate import simulate
    from ._reaction_methods.compliance import Compliance
    from .models import parallelogram

    theta0 = 0.7
    model = parallelogram.build(theta=theta0, motor=cycle_drive(theta0, period=period), load=load)
    names = list(stiffness)
    ts = jnp.linspace(0.0, period, num_saves)
    _, rx = eqx.filter_jit(inverse_dynamics)(model, ts, method=Compliance(stiffness, default=1.0))
    reference = _rigid_rows(rx.lam, model, names)
    solver = _implicit_solver(rtol)

    def one(s):
        soft = with_bushings(model, {n: s * k for n, k in stiffness.items()}, damping=damping)
        q0, _ = static_equilibrium(soft, model.q0)
        traj = simulate(
            soft,
            q0,
            jnp.zeros_like(q0),
            period,
            ts=ts,
            solver=solver,
            rtol=rtol,
            atol=1e-2 * rtol,
            max_steps=100_000,
        )
        f = jax.vmap(
            lambda q, qd: _stack(pair_forces(soft, q, qd, names), names, slice(0, 2)).reshape(-1, 2)
        )(traj.q, traj.qd)
        return f, traj.num_steps

    forces, steps = _over_scales(one, scales)
    reference = reference.reshape(len(ts), -1, 2)
    return _study(scales, forces, reference, ts=np.asarray(ts), num_steps=np.asarray(steps))


def robot_slip(
    scales: Real[ArrayLike, " scales"] | Sequence[float],
    damping: Mapping[str, float] = ROBOT_DAMPING,
    *,
    t_end: float = 5.0,
    t1: float = 1.5,
    num_saves: int = 31,
    rtol: float = 1e-11,
    solver: "diffrax.AbstractSolver | None" = None,
) -> dict[str, Any]:
    """(c) The robot of seed 001 (manoeuvre compressed to `t_end`), its knife edges W1-W4
    replaced by tyres (`LateralDamper`, damping s D), the bearings B and C kept rigid (far
    stiffer than the tyres: the quasi-static limit of the derivation); integrated with
    Kvaerno5 (or `solver`) to `t1` from q0 and eq. 39's velocity. The tyre forces and the
    reactions of B and C against the `Compliance(D)` reactions along the rigid trajectory
    (reactions of B and C are not unique in the rigid model; in the compliant one they are).

    **Returns:** dict as `parallelogram_statics`, with `ts`, `names`, `num_steps`."""
    from ._analyses.reactions import reactions
    from ._analyses.simulate import simulate
    from ._reaction_methods.compliance import Compliance
    from .models import mobile_robot

    model = mobile_robot.build(t_end=t_end)
    q0, qd0 = model.q0, mobile_robot.initial_velocity(model)
    ts = jnp.linspace(0.0, t1, num_saves)
    traj = eqx.filter_jit(simulate)(model, q0, qd0, t1, ts=ts, rtol=1e-10, atol=1e-12)
    rx = eqx.filter_jit(reactions)(model, traj, method=Compliance(damping, default=1.0))
    names = ["B", "C", *damping]
    reference = _rigid_rows(rx.lam, model, names)
    if solver is None:
        solver = _implicit_solver(rtol)

    def one(s):
        soft = with_slip(model, {n: s * d for n, d in damping.items()})
        tr = simulate(
            soft, q0, qd0, t1, ts=ts, solver=solver, rtol=rtol, atol=1e-2 * rtol, max_steps=100_000
        )
        held = reactions(soft, tr)  # B and C: unique once the knife edges are compliant
        tyres = jax.vmap(
            lambda q, qd: _stack(pair_forces(soft, q, qd, list(damping)), list(damping))
        )(tr.q, tr.qd)
        return jnp.concatenate(
            [held.lam[:, soft.rows("B")], held.lam[:, soft.rows("C")], tyres], axis=1
        ), tr.num_steps

    forces, steps = _over_scales(one, scales)
    return _study(
        scales, forces, reference, ts=np.asarray(ts), names=names, num_steps=np.asarray(steps)
    )
