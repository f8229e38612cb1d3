"""Independent-coordinate formulation with the reaction matrix (seed 002), in absolute coordinates.

q is partitioned into f = n - r independent coordinates z and r dependent ones y (r: rank of
Phi_q; for redundant constraints only r independent rows are used). With Phi_y, Phi_z the
column blocks of those rows:

    y = y_c(z, t)                       Newton on Phi(z, y, t) = 0 (inverse kinematics)
    yd = I_c zd - Phi_y^-1 b,           I_c = dy_c/dz = -Phi_y^-1 Phi_z
    ydd = I_c zdd + xi,                 xi = Phi_y^-1 gamma (C qdd = gamma, seed 001 eq. 8)

The equations of motion M qdd = F + Q_c lambda_c with Q_c^T = [-I_c, E] (seed 002, eq. 2) and the
closing condition Q_c^T qdd = xi give the reaction equations (seed 002, eq. 3)

    N_c lambda_c = xi - Q_c^T M^-1 F,   N_c = Q_c^T M^-1 Q_c   (the reaction matrix),

and zdd = [M^-1 (F + Q_c lambda_c)]_z is the minimal-order system (eq. 5) that is integrated.
Since Q_c^T = Phi_y^-1 C_r, the multipliers of C_r^T lambda are lambda = -Phi_y^-T lambda_c.

Re-partitioning (seed 002, remark 5): after every step a diffrax event compares cond(Phi_y) of
the current partition with the best-conditioned one (column-pivoted QR of the constraint rows);
when it exceeds `switch_ratio` times the best, the integration stops there, the partition is
replaced and the integration resumes. The state (q, qd) is continuous across a switch;
`Trajectory.repartitioned` marks the save intervals in which it happened. Knife edges (Pfaffian
rows) have no position-level y_c(z): the formulation accepts holonomic models only.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._custom_types import CoordinatesLike, RowVector, ScalarLike
from .._linalg.dense import (
    numerical_rank,
    pivoted_qr,
    rank_mask,
    row_order,
    singular_values,
    solve,
)
from .._model.arguments import checked_direction
from .._model.model import Model
from .._runtime import errors as _errors
from .._runtime.exceptions import JaxmbRuntimeError
from .._runtime.results import RESULTS
from . import failures as _failures
from .base import AbstractFormulation
from .passages import PASSAGE_DROP
from .problem import Problem
from .start import POSITION_TOL, checked_initial_state, refuse_start, refused
from .trajectory import Trajectory

NEWTON_TOL = 1e-13
NEWTON_MAX_ITERATIONS = 30
MAX_SEGMENTS_PER_INTERVAL = 8


class IndependentCoordinates(AbstractFormulation):
    """`simulate(..., formulation=IndependentCoordinates())`: integrate the minimal-order
    equations of seed 002 (eq. 5). `switch_ratio`: re-partition when cond(Phi_y) exceeds this
    multiple of the best partition's; `rank`: r, computed at q0 when not given; `initial_z`:
    indices of q to start with as independent coordinates (default: the best at q0).

    It stops (with the time and cause, `stop_messages`) where no partition is regular: where
    Phi_q loses rank (`Trajectory.singular`) or Newton finds no dependent coordinates (a
    limit or dead position); a `rank` that is not the rank at q0 is refused."""

    switch_ratio: float = eqx.field(static=True, default=10.0)
    rank: int | None = eqx.field(static=True, default=None)
    initial_z: tuple[int, ...] | None = eqx.field(static=True, default=None)

    def integrate(self, model: Model, problem: Problem) -> Trajectory:
        """Seed 002's minimal-order equations from `problem`'s initial state (forwards only;
        no stabilization is needed: the dependent coordinates are solved by Newton)."""
        if model.dim != 2:
            raise ValueError(
                "simulate(formulation='independent'): independent coordinates are planar only "
                "(they partition q, and a spatial body's quaternion is not a coordinate to pick); "
                "use the default formulation, mb.NullSpace() or mb.Projection()"
            )
        p = problem
        q0, qd0, start = checked_initial_state(model, p.q0, p.qd0, p.t0, p.throw)
        q0, qd0, t1, ts = refuse_start(model, start, q0, qd0, p.t0, p.t1, p.ts)
        with _errors.reporting("simulate(formulation='independent')"):
            checked_direction(p.t0, t1)
        q, qd, result, steps, switched, cause, (t_stop, q_stop) = simulate_independent(
            model,
            q0,
            qd0,
            jnp.concatenate([p.t0[None], ts]),
            option=self,
            solver=p.solver,
            rtol=p.rtol,
            atol=p.atol,
            max_steps=p.max_steps,
        )
        q = q[1:]
        if p.throw:
            q = check_stop(model, cause, (p.t0, q0), (t_stop, q_stop), q)
        traj = Trajectory(
            ts=ts,
            q=q,
            qd=qd[1:],
            result=result,
            num_steps=steps,
            repartitioned=switched[1:],
            t_stop=t_stop,
            singular=cause == SINGULAR,
        )
        return refused(traj, start, p.t0)


SINGULAR, UNSOLVABLE, STUCK, FAILED = 1, 2, 3, 4
"""Causes of an early stop of the independent-coordinate integration (0: none)."""


def stop_messages(when="Trajectory.t_stop (rerun with throw=False)"):
    """Static messages indexed by the cause of a stop; `when` names the time reached."""
    return (
        "",
        "simulate(formulation=IndependentCoordinates()): a singular configuration was reached "
        f"at t = {when}: Phi_q loses rank there (sigma_r / sigma_1 of the independent rows fell "
        f"below {PASSAGE_DROP:g} of its start value), so no partition into independent and "
        "dependent coordinates is regular and the formulation cannot pass it (a bifurcation, "
        "where branches of the motion cross, or a limit position); "
        "formulation=mb.AugmentedLagrangian() or mb.Projection() passes a bifurcation",
        "simulate(formulation=IndependentCoordinates()): the position constraints have no "
        f"solution near the motion at t = {when} (Newton on the dependent coordinates did not "
        f"reach |Phi| <= {POSITION_TOL:g}): a driver pushes the mechanism past a limit or dead "
        "position, or the linkage locks; check mb.solvability(model, q) near that time",
        "simulate(formulation=IndependentCoordinates()): the partition had to change "
        f"{MAX_SEGMENTS_PER_INTERVAL} times within one save interval at t = {when}; raise "
        "switch_ratio or save more often",
        f"simulate(formulation=IndependentCoordinates()): the integration failed at t = {when} "
        "(step-size collapse or max_steps; see Trajectory.result)",
    )


def check_stop(model, cause, start, stop, saved):
    """`saved`, after raising for an early stop: eagerly with the time reached (and, at a
    singular configuration, the pairs whose rows became dependent), inside jit by the
    message of its cause."""
    known = _errors.concrete(cause)
    if known is None:
        return _errors.branched_error_if(saved, cause != 0, cause, stop_messages())
    code = int(np.max(known))
    if code == 0:
        return saved
    t_stop, q_stop = jax.lax.stop_gradient(stop)
    text = stop_messages(f"{float(np.min(_errors.known(t_stop))):.10g}")[code]
    if code == SINGULAR and model.pair_names:
        t0, q0 = jax.lax.stop_gradient(start)
        _, share = _failures.singular_share(model, q0, t0, q_stop, t_stop)
        names = [nm for nm, w in zip(model.pair_names, np.asarray(share)) if w > 0.1]
        text += f"; pairs involved: {names}"
    codes = {SINGULAR: RESULTS.singular_configuration, UNSOLVABLE: RESULTS.nonlinear_divergence}
    raise JaxmbRuntimeError(
        text, function="simulate(formulation=IndependentCoordinates())", cause=codes.get(code)
    )


def _check_holonomic(model):
    nonholonomic = [p.name for p in model.pair_info if not p.holonomic]
    if nonholonomic:
        raise ValueError(
            "simulate(formulation='independent'): the independent-coordinate formulation "
            f"(seed 002) needs holonomic constraints only; pairs {nonholonomic} are Pfaffian "
            "(knife edges have no position-level y_c(z)). Use formulation='null_space'."
        )


def spanning_rows(Phi_q, r):
    """r rows of Phi_q spanning its row space (r its rank; `jaxmb._linalg.dense.row_order`)."""
    return row_order(Phi_q)[1][:r]


def best_partition(Phi_r):
    """(y, z) column indices: pivoted QR of the r x n matrix Phi_r picks the r best-conditioned
    columns as dependent coordinates y; the other f = n - r are z."""
    r = Phi_r.shape[0]
    _, _, perm = pivoted_qr(Phi_r)
    return perm[:r], perm[r:]


def _cond(A):
    s = singular_values(A)
    return s[0] / s[-1]


def dependent_coordinates(model, rows, y_idx, z_idx, z, q_guess, t):
    """y_c(z, t) by Newton on the r independent rows, starting from q_guess."""
    return solved_coordinates(model, rows, y_idx, z_idx, z, q_guess, t)[0]


def solved_coordinates(model, rows, y_idx, z_idx, z, q_guess, t):
    """(q, solved): `dependent_coordinates` and whether Newton met the position constraints
    of every holonomic row to POSITION_TOL (False past a limit position, where no y solves
    Phi(z, y, t) = 0, or where the r rows no longer span the constraints)."""

    def residual(q):
        return model.phi(q, t)[rows]

    def cond_fun(state):
        q, k = state
        return (jnp.max(jnp.abs(residual(q))) > NEWTON_TOL) & (k < NEWTON_MAX_ITERATIONS)

    def body_fun(state):
        q, k = state
        Phi_y = model.holonomic_C(q, t)[rows][:, y_idx]
        step = solve(Phi_y, residual(q))
        return q.at[y_idx].add(-step), k + 1

    q0 = q_guess.at[z_idx].set(z)
    q, _ = jax.lax.while_loop(cond_fun, body_fun, (q0, 0))
    error = jnp.max(jnp.abs(model.phi(q, t)[model.holonomic_rows]), initial=0.0)
    return q, error <= POSITION_TOL


def rank_ratio(C_r):
    """sigma_r / sigma_1 of the r spanning rows: it falls to 0 where Phi_q loses rank."""
    s = singular_values(C_r)
    return s[-1] / jnp.maximum(s[0], jnp.finfo(s.dtype).tiny)


def reaction_matrix_solve(model, rows, y_idx, z_idx, q, zd, t):
    """qd, qdd and the multipliers (C^T lambda convention) from seed 002 eq. 3 and 5."""
    n = model.n
    C_r = model.holonomic_C(q, t)[rows]
    Phi_y, Phi_z = C_r[:, y_idx], C_r[:, z_idx]
    I_c = -solve(Phi_y, Phi_z)
    b_r = model.b(q, t)[model.holonomic_rows][rows]
    qd = jnp.zeros(n, q.dtype).at[z_idx].set(zd).at[y_idx].set(I_c @ zd - solve(Phi_y, b_r))
    gamma_r = model.gamma(q, qd, t)[model.holonomic_rows][rows]
    xi = solve(Phi_y, gamma_r)
    r = y_idx.shape[0]
    Q_c = jnp.zeros((n, r), q.dtype).at[z_idx].set(-I_c.T).at[y_idx].set(jnp.eye(r))
    G = 1.0 / model.mass_diagonal()
    F = model.forces(q, qd, t)
    N_c = Q_c.T @ (G[:, None] * Q_c)
    lam_c = solve(N_c, xi - Q_c.T @ (G * F))
    qdd = G * (F + Q_c @ lam_c)
    lam_r = -solve(Phi_y.T, lam_c)
    return qd, qdd, lam_r


def multipliers(
    model: Model,
    q: CoordinatesLike,
    qd: CoordinatesLike,
    t: ScalarLike = 0.0,
    *,
    rank: int | None = None,
) -> RowVector:
    """lambda (all rows of C; rows outside the independent set get 0) by the reaction matrix
    of seed 002 eq. 3, with the best partition at q. For non-redundant holonomic models this is
    the unique lambda of M qdd + C^T lambda = F. `rank`: r of Phi_q; by default computed from
    a concrete q, or taken as m (non-redundant) when q is traced (jit/vmap)."""
    _check_holonomic(model)
    q, qd = jnp.asarray(q, jnp.float64), jnp.asarray(qd, jnp.float64)
    Phi_q = model.holonomic_C(q, t)
    if rank is None:
        try:
            rank = _rank_at(model, q, t, IndependentCoordinates())
        except ValueError:
            rank = model.m
    rows = spanning_rows(Phi_q, rank)
    y_idx, z_idx = best_partition(Phi_q[rows])
    _, _, lam_r = reaction_matrix_solve(model, rows, y_idx, z_idx, q, qd[z_idx], t)
    lam_r = _errors.error_if(
        lam_r,
        ~jnp.all(jnp.isfinite(lam_r)),
        "reaction_matrix_multipliers: the reaction matrix N_c is singular: the constraints are "
        "redundant (pass rank=r, the rank of Phi_q) or the configuration is singular.",
    )
    hol = jnp.asarray(np.flatnonzero(model.holonomic_rows))
    return jnp.zeros(model.num_rows, q.dtype).at[hol[rows]].set(lam_r)


def _rank_at(model, q0, t0, option):
    """r: the rank of Phi_q at a concrete q0 (checked against `option.rank` when given), or
    `option.rank` when q0 is traced (then checked inside the program, `_checked_rank`)."""
    Phi_q = _errors.concrete(model.holonomic_C(q0, t0))
    if Phi_q is None:
        if option.rank is not None:
            return option.rank
        raise ValueError(
            "simulate(formulation=IndependentCoordinates()): q0 is traced (inside jit or vmap), "
            "so the rank r of Phi_q cannot be found at trace time; pass "
            "IndependentCoordinates(rank=r)."
        )
    s = np.linalg.svd(np.asarray(Phi_q), compute_uv=False)
    rank = int(np.sum(np.asarray(rank_mask(s))))
    if option.rank is not None and option.rank != rank:
        raise ValueError(
            f"IndependentCoordinates(rank={option.rank}): Phi_q has rank {rank} at q0 "
            "(singular values above the relative threshold), so some constraints would not be "
            "enforced; leave rank=None to have it computed, or pass the rank at q0"
        )
    return rank


def simulate_independent(model, q0, qd0, ts, *, option, solver, rtol, atol, max_steps):
    """Integrate seed 002's minimal-order equations between consecutive save times, checking
    the partition at each; returns (q, qd, result, num_steps, repartitioned, cause, t_stop)."""
    _check_holonomic(model)
    r = _rank_at(model, q0, ts[0], option)
    return _integrate(model, q0, qd0, ts, r, option, solver, rtol, atol, max_steps)


def _checked_rank(Phi0, r):
    """Phi0, refusing (also inside jit) a rank r that is not the rank of Phi_q at q0: with r
    too small, rows outside the independent set would be left unenforced."""
    if not 0 < r <= min(Phi0.shape):
        raise ValueError(
            f"IndependentCoordinates: rank must be in 1..{min(Phi0.shape)} (the "
            f"holonomic rows and coordinates of the model), got rank={r}"
        )
    actual = numerical_rank(Phi0)
    return _errors.error_if(
        Phi0,
        actual != r,
        "IndependentCoordinates(rank=r): r is not the rank of Phi_q at q0, so some "
        "constraints would not be enforced; pass the rank at q0",
    )


# reused by eager calls (the closures below are new each call); no callback
@_errors.checked_jit(analysis="simulate")
def _integrate(model, q0, qd0, ts, r, option, solver, rtol, atol, max_steps):
    Phi0 = _checked_rank(model.holonomic_C(q0, ts[0]), r)
    rows = spanning_rows(Phi0, r)
    y_idx, z_idx = best_partition(Phi0[rows])
    rho0 = rank_ratio(Phi0[rows])
    if option.initial_z is not None:
        z_given = sorted(int(k) for k in option.initial_z)
        if len(z_given) != model.n - r or not all(0 <= k < model.n for k in z_given):
            raise ValueError(
                f"IndependentCoordinates: initial_z must list f = n - r = {model.n - r} distinct "
                f"coordinate indices in 0..{model.n - 1}, got {option.initial_z}"
            )
        z_idx = jnp.asarray(z_given)
        y_idx = jnp.asarray([k for k in range(model.n) if k not in z_given])

    def rhs(t, state, args):
        z, zd = state
        q_guess, y_i, z_i = args
        q = dependent_coordinates(model, rows, y_i, z_i, z, q_guess, t)
        _, qdd, _ = reaction_matrix_solve(model, rows, y_i, z_i, q, zd, t)
        return zd, qdd[z_i]

    term = diffrax.ODETerm(rhs)
    controller = diffrax.PIDController(rtol=rtol, atol=atol)

    def stop_cause(q, solved, t):
        """SINGULAR where Phi_q has (nearly) lost rank, UNSOLVABLE where Newton failed."""
        singular = rank_ratio(model.holonomic_C(q, t)[rows]) < PASSAGE_DROP * rho0
        return jnp.where(~solved, UNSOLVABLE, jnp.where(singular, SINGULAR, 0))

    def switch_or_stop(t, state, args, **kwargs):
        """At the end of each accepted step: the partition has degraded (re-partition), or
        the motion cannot go on in these coordinates (stop)."""
        z, _ = state
        q_guess, y_i, z_i = args
        q, solved = solved_coordinates(model, rows, y_i, z_i, z, q_guess, t)
        C_r = model.holonomic_C(q, t)[rows]
        y_best, _ = best_partition(C_r)
        degraded = _cond(C_r[:, y_i]) > option.switch_ratio * _cond(C_r[:, y_best])
        return degraded | (stop_cause(q, solved, t) != 0)

    event = diffrax.Event(switch_or_stop)

    def segment(carry):
        """Integrate from t_cur towards t_b; stop early when the partition degrades (then
        re-partition at the state reached) or the motion cannot go on (then stop)."""
        t_cur, t_b, q, qd, y_i, z_i, result, cause, t_stop, steps, switched, count = carry
        sol = diffrax.diffeqsolve(
            term,
            solver,
            t0=t_cur,
            t1=t_b,
            dt0=None,
            y0=(q[z_i], qd[z_i]),
            args=(q, y_i, z_i),
            stepsize_controller=controller,
            max_steps=max_steps,
            saveat=diffrax.SaveAt(t1=True),
            event=event,
            throw=False,
        )
        assert sol.ts is not None and sol.ys is not None  # SaveAt(t1=True)
        t_end = sol.ts[-1]
        q_e, solved = solved_coordinates(model, rows, y_i, z_i, sol.ys[0][-1], q, t_end)
        qd_e, _, _ = reaction_matrix_solve(model, rows, y_i, z_i, q_e, sol.ys[1][-1], t_end)
        hit = sol.result == diffrax.RESULTS.event_occurred
        new = stop_cause(q_e, solved, t_end)
        new = jnp.where((~hit) & (sol.result != diffrax.RESULTS.successful), FAILED, new)
        stopped = diffrax.RESULTS.where(
            new == SINGULAR, diffrax.RESULTS.singular, diffrax.RESULTS.nonlinear_divergence
        )
        stopped = diffrax.RESULTS.where(new == FAILED, sol.result, stopped)
        result = diffrax.RESULTS.where(new != 0, stopped, result)
        y_new, z_new = best_partition(model.holonomic_C(q_e, t_end)[rows])
        switch = hit & (new == 0)
        y_i = jnp.where(switch, y_new.astype(y_i.dtype), y_i)
        z_i = jnp.where(switch, z_new.astype(z_i.dtype), z_i)
        return (
            t_end,
            t_b,
            q_e,
            qd_e,
            y_i,
            z_i,
            result,
            new,
            jnp.where(new != 0, t_end, t_stop),
            steps + sol.stats["num_steps"],
            switched | switch,
            count + 1,
        )

    def not_done(carry):
        t_cur, t_b, cause, count = carry[0], carry[1], carry[7], carry[-1]
        # a partition that degrades again at once would loop: cap the switches per interval
        return (t_cur < t_b) & (cause == 0) & (count < MAX_SEGMENTS_PER_INTERVAL)

    def interval(carry, t_pair):
        q, qd, y_i, z_i, result, cause, t_stop, steps = carry
        t_a, t_b = t_pair
        init = (
            t_a,
            t_b,
            q,
            qd,
            y_i,
            z_i,
            result,
            cause,
            t_stop,
            steps,
            jnp.asarray(False),
            jnp.asarray(0),
        )
        out = jax.lax.while_loop(not_done, segment, init)
        t_end, _, q, qd, y_i, z_i, result, cause, t_stop, steps, switched, _ = out
        stuck = (t_end < t_b) & (cause == 0)
        result = diffrax.RESULTS.where(stuck, diffrax.RESULTS.max_steps_reached, result)
        t_stop = jnp.where(stuck, t_end, t_stop)
        cause = jnp.where(stuck, STUCK, cause)
        reached = cause == 0
        saved = (jnp.where(reached, q, jnp.inf), jnp.where(reached, qd, jnp.inf), switched)
        return (q, qd, y_i, z_i, result, cause, t_stop, steps), saved

    never = jnp.asarray(jnp.inf, q0.dtype)
    init = (
        q0,
        qd0,
        y_idx,
        z_idx,
        diffrax.RESULTS.successful,
        jnp.asarray(0),
        never,
        jnp.asarray(0),
    )
    (q_last, _, _, _, result, cause, t_stop, steps), (qs, qds, switched) = jax.lax.scan(
        interval, init, (ts[:-1], ts[1:])
    )
    qs = jnp.concatenate([q0[None], qs])
    qds = jnp.concatenate([qd0[None], qds])
    repartitioned = jnp.concatenate([jnp.zeros(1, bool), switched])
    t_stop = jnp.where(cause == 0, ts[-1], t_stop)
    return qs, qds, result, steps, repartitioned, cause, (t_stop, q_last)
