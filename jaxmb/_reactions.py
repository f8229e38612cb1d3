"""Constraint reactions: multipliers, generalized reactions per pair, forces on bodies.

M qdd + C^T lambda = F (seed 001, eq. 10); the generalized reaction that pair X applies to the
system is -C_X^T lambda_X (eq. 16, sign of API.md), and their sum is M qdd - F (eq. 15).
With redundant constraints lambda is not unique; three ways to pick one:

- "min_norm": the minimum-norm lambda (pseudo-inverse);
- `Eliminate(rows)`: drop those rows, solve the reduced nonsingular augmented system (eq. 11)
  and set their multipliers to zero (seed 001, section 3.1 and 4.4);
- "auto": eliminate the rows that pivoted QR of C^T marks dependent.

Only the reactions of solvable pairs (see `solvability`) are the same whichever is used.
"""

import contextlib
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp

from ._dynamics import (
    Eliminate,
    check_shapes,
    check_removable,
    eliminated_solve,
    keep_mask,
    min_norm_multipliers,
    null_space_solve,
    suggesting_rows,
    unchecked_accelerations,
)
from ._simulate import Trajectory
from ._solvability import solvability
from ._state_checks import checked_state

STATE_TOL = 1e-6
"""`reactions` refuses |Phi| > STATE_TOL (1 + max |q|) or |C qd + b| > STATE_TOL (1 + max |qd|)
(looser than simulate's check of q0: saved states carry the integrator's drift)."""
from ._velocity import kinematics


class Reactions(eqx.Module):
    """Reactions at one state (or, from a Trajectory, with a leading time axis).

    **Fields:** `lam` (multipliers, row order of C), `qdd`, `generalized_array` (pairs x n: the
    generalized force -C_X^T lambda_X of each pair), `solvable_array`; the dict views
    `generalized` and `solvable` are keyed by pair name; `on_body(pair, body)` gives the
    force (global fx, fy) and torque about the body's centre of mass.
    """

    pair_names: tuple[str, ...] = eqx.field(static=True)
    body_names: tuple[str, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    lam: jnp.ndarray
    qdd: jnp.ndarray
    generalized_array: jnp.ndarray
    solvable_array: jnp.ndarray

    @property
    def generalized(self) -> dict:
        return {nm: self.generalized_array[..., k, :] for k, nm in enumerate(self.pair_names)}

    @property
    def solvable(self) -> dict:
        return {nm: self.solvable_array[..., k] for k, nm in enumerate(self.pair_names)}

    def on_body(self, pair_name: str, body_name: str):
        """(fx, fy, torque) that pair `pair_name` applies to body `body_name` (global force,
        counter-clockwise torque about the centre of mass)."""
        if pair_name not in self.pair_names:
            raise KeyError(f"no pair named {pair_name!r}; pairs: {list(self.pair_names)}")
        if body_name not in self.body_names:
            raise KeyError(f"no body named {body_name!r}; bodies: {list(self.body_names)}")
        f = self.generalized[pair_name]
        k = 3 * self.body_names.index(body_name)
        return f[..., k], f[..., k + 1], f[..., k + 2]


def _method_name(method):
    return method if isinstance(method, str) else f"eliminate{tuple(method.rows)}"


_ELIMINATE_LABEL = "mb.Eliminate(rows)"  # in messages from compiled code (rows are data there)


def _method_parts(model, method, where="reactions"):
    """(kind, keep): kind "min_norm", "auto" or "eliminate"; for `Eliminate` the kept-row mask
    as an array, so that eliminations of different rows share one compiled program. Raises for
    any other method (naming the function `where`)."""
    if not (isinstance(method, Eliminate) or method in ("min_norm", "auto")):
        raise ValueError(
            f"{where}: method must be 'min_norm', 'auto' or mb.Eliminate(rows), got {method!r}"
        )
    if isinstance(method, Eliminate):
        return "eliminate", keep_mask(model, method, None)
    return method, None


def _label(method, shared):
    """The method as error messages name it; `shared`: the program serves every Eliminate."""
    if isinstance(method, Eliminate) and shared:
        return f"reactions(method={_ELIMINATE_LABEL})"
    return f"reactions(method={method!r})"


def _traced(*trees):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(trees))


def _reactions_at(model, q, qd, t, kind, keep, label, qdd=None, *, check=False):
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    check_shapes(model, "reactions", q=q, qd=qd)
    if check:
        q, qd = checked_state(model, q, qd, t, "reactions", STATE_TOL)
    M = model.mass_matrix()
    F = model.forces(q, qd, t)
    if model.num_rows:
        terms = model.kinematic_terms(q, qd, t)  # C and gamma in one pass
        C, gamma = terms.C, terms.gamma
    else:
        C, gamma = jnp.zeros((0, model.n)), jnp.zeros(0)
    if kind == "min_norm":
        if qdd is None:
            qdd = (null_space_solve(M, F, C, gamma) if model.num_rows
                   else unchecked_accelerations(model, q, qd, t))
        lam = min_norm_multipliers(C, F - M @ qdd)
    else:
        mask = keep if kind == "eliminate" else keep_mask(model, "auto", C)
        if kind == "eliminate":
            C = check_removable(C, C, mask, label)
        qdd_e, lam = eliminated_solve(M, F, C, gamma, mask, label=label)
        qdd = qdd_e if qdd is None else qdd
    gen = []
    start = 0
    for p in model.pairs:
        sl = slice(start, start + p.num_rows)
        gen.append(-C[sl].T @ lam[sl])
        start += p.num_rows
    # the flags are piecewise constant: no derivative flows into the analysis (whose pivoted QR
    # has no batched JVP rule either)
    frozen = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, model
    )
    report = solvability(frozen, jax.lax.stop_gradient(q), jax.lax.stop_gradient(t))
    return Reactions(
        pair_names=model.pair_names,
        body_names=model.body_names,
        method=kind,  # replaced by the full name (rows included) outside the compiled part
        lam=lam,
        qdd=qdd,
        generalized_array=jnp.stack(gen) if gen else jnp.zeros((0, model.n)),
        solvable_array=report.solvable,
    )


def reactions(model, q, qd=None, t=0.0, method="min_norm", *, check=True):
    """Constraint reactions at a state, or along a `Trajectory` (vmapped over time).

    **Arguments:** `model`; `q`, `qd`, `t` (or a `Trajectory` as `q`); `method`: "min_norm",
    "auto" or `mb.Eliminate(rows=(...))`; `check`: refuse (also inside jit) a state with a
    non-finite entry or violating the constraints (|Phi| or |C qd + b| above `STATE_TOL`
    relative; e.g. a Trajectory that stopped early holds inf after `t_stop`), naming the entry
    or the pair; False computes at any state.

    **Returns:** `Reactions`. Only the pairs flagged in `Reactions.solvable` have reactions
    that do not depend on `method`.
    """
    kind, keep = _method_parts(model, method)
    if not isinstance(q, Trajectory) and qd is None:
        raise TypeError("reactions: pass qd (or a Trajectory)")
    # eager calls share one compiled program among all Eliminate rows (their error message
    # gets the rows back in _naming_rows); traced calls are inlined and name them directly
    label = _label(method, shared=not _traced(model, q, qd, t))
    at = ((q.q[0], q.ts[0], "at the first saved state") if isinstance(q, Trajectory)
          else (q, t, "at this state"))
    with suggesting_rows(model, *at), _naming_rows(method):
        if isinstance(q, Trajectory):
            rx = _reactions_along(model, (q.q, q.qd, q.ts), kind, keep, label, check)
        else:
            rx = _reactions_one(model, jnp.asarray(q, jnp.float64),
                                jnp.asarray(qd, jnp.float64), jnp.asarray(t, jnp.float64),
                                kind, keep, label, check=check)
    return _named(rx, method)


def _named(rx, method):
    """rx with its `method` field naming the method in full (e.g. "eliminate(5, 20)")."""
    return dataclasses.replace(rx, method=_method_name(method))


@contextlib.contextmanager
def _naming_rows(method):
    """The compiled program is shared by all Eliminate rows, so its error message cannot list
    them; when the error surfaces here (an eager call), put the rows back into it."""
    try:
        yield
    except Exception as err:  # equinox's runtime error (its type depends on the JAX version)
        generic = _label(method, shared=True)
        if isinstance(method, Eliminate) and generic in str(err):
            named = str(err).replace(generic, _label(method, shared=False))
            raise eqx.EquinoxRuntimeError(named) from None
        raise


# Compiled once per model structure and method kind (the rows of an Eliminate are data), so
# eager calls reuse the program; inside an outer jit they are inlined.
_reactions_one = eqx.filter_jit(_reactions_at)


@eqx.filter_jit
def _reactions_along(model, xs, kind, keep, label, check=False):
    """Reactions along the time axis of xs = (q, qd, ts) or (q, qd, ts, qdd)."""
    return _map_over_time(
        model, lambda x: _reactions_at(model, *x[:3], kind, keep, label, *x[3:], check=check),
        xs)


def inverse_dynamics(model, ts, q=None, method="min_norm"):
    """Inverse dynamics of a kinematically driven model (dof = 0; seed 003): kinematics at the
    times `ts` (see `kinematics`), then the multipliers of M qdd + C^T lambda = F, with
    redundancy handled by `method` as in `reactions`.

    **Returns:** `(Trajectory, Reactions)` with a leading time axis.
    """
    kind, keep = _method_parts(model, method, "inverse_dynamics")  # before the kinematics
    kin = kinematics(model, ts, q)
    n_t = kin.ts.shape[0]
    traj = Trajectory(
        ts=kin.ts,
        q=kin.q,
        qd=kin.qd,
        result=_success_codes(n_t),
        num_steps=jnp.asarray(n_t),
    )
    label = _label(method, shared=not _traced(model, kin.q, ts))
    with _naming_rows(method):
        rx = _reactions_along(model, (kin.q, kin.qd, kin.ts, kin.qdd), kind, keep, label)
    return traj, _named(rx, method)


def _map_over_time(model, f, xs):
    """f over the leading (time) axis, vmapped in chunks: jaxlib 0.10.2's CPU LAPACK splits a
    batch over the intra-op thread pool once 10 m n batch >= 200,000, and two such calls at once
    can deadlock (see the README); chunks stay below that size. The time axis is padded (with
    its last entry) to whole chunks, so the program holds one copy of f (lax.map with a
    remainder would trace a second one)."""
    per_item = max(1, model.num_rows * model.n)
    chunk = int(max(1, min(32, 19_999 // per_item)))
    length = jax.tree.leaves(xs)[0].shape[0]
    chunk = min(chunk, max(length, 1))
    count = -(-length // chunk)
    pad = count * chunk - length

    def blocks(x):
        x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]) if pad else x
        return x.reshape((count, chunk) + x.shape[1:])

    out = jax.lax.map(jax.vmap(f), jax.tree.map(blocks, xs))
    return jax.tree.map(lambda y: y.reshape((count * chunk,) + y.shape[2:])[:length], out)


def _success_codes(n_t):
    import diffrax

    return jax.vmap(lambda _: diffrax.RESULTS.successful)(jnp.arange(n_t))


def statics(model, q, t=0.0, method="min_norm"):
    """Static reactions: qd = 0, qdd = 0, C^T lambda = F (seed 003, "Statics").

    Raises when F is not balanced by the constraints (the configuration is not an equilibrium).
    """
    q = jnp.asarray(q, jnp.float64)
    zeros = jnp.zeros_like(q)
    kind, keep = _method_parts(model, method, "statics")
    rx = _reactions_at(model, q, zeros, t, kind, keep, _label(method, shared=False), qdd=zeros)
    rx = _named(rx, method)
    F = model.forces(q, zeros, t)
    unbalanced = F + jnp.sum(rx.generalized_array, axis=0)
    scale = 1.0 + jnp.max(jnp.abs(F))
    lam = eqx.error_if(
        rx.lam,
        jnp.max(jnp.abs(unbalanced)) > 1e-9 * scale,
        "statics: the applied forces are not balanced by the constraints at this configuration "
        "(it is not an equilibrium: add a driver or a support, or use mb.simulate)",
    )
    return eqx.tree_at(lambda r: r.lam, rx, lam)
