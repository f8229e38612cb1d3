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

from . import _errors
from ._dynamics import (
    Eliminate,
    accelerations,
    check_shapes,
    eliminated_solve,
    keep_mask,
    min_norm_multipliers,
    null_space_solve,
)
from ._simulate import Trajectory
from ._solvability import solvability
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


def _reactions_at(model, q, qd, t, kind, keep, label, qdd=None):
    q = jnp.asarray(q, jnp.float64)
    qd = jnp.asarray(qd, jnp.float64)
    t = jnp.asarray(t, jnp.float64)
    check_shapes(model, "reactions", q=q, qd=qd)
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
                   else accelerations(model, q, qd, t))
        lam = min_norm_multipliers(C, F - M @ qdd)
    else:
        mask = keep if kind == "eliminate" else keep_mask(model, "auto", C)
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


def reactions(model, q, qd=None, t=0.0, method="min_norm"):
    """Constraint reactions at a state, or along a `Trajectory` (vmapped over time).

    **Arguments:** `model`; `q`, `qd`, `t` (or a `Trajectory` as `q`); `method`: "min_norm",
    "auto" or `mb.Eliminate(rows=(...))`.

    **Returns:** `Reactions`. Only the pairs flagged in `Reactions.solvable` have reactions
    that do not depend on `method`.
    """
    kind, keep = _method_parts(model, method)
    if not isinstance(q, Trajectory) and qd is None:
        raise TypeError("reactions: pass qd (or a Trajectory)")
    # eager calls share one compiled program among all Eliminate rows (their error message
    # gets the rows back in _naming_rows); traced calls are inlined and name them directly
    label = _label(method, shared=not _traced(model, q, qd, t))
    with _naming_rows(method):
        if isinstance(q, Trajectory):
            rx = _reactions_along(model, (q.q, q.qd, q.ts), kind, keep, label)
        else:
            rx = _reactions_one(model, jnp.asarray(q, jnp.float64),
                                jnp.asarray(qd, jnp.float64), jnp.asarray(t, jnp.float64),
                                kind, keep, label)
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
# The checks are returned as data (jaxmb._errors), so the persistent cache stores the programs.
_reactions_one = _errors.checked_jit(_reactions_at)


@_errors.checked_jit
def _reactions_along(model, xs, kind, keep, label):
    """Reactions along the time axis of xs = (q, qd, ts) or (q, qd, ts, qdd)."""
    return jax.vmap(lambda x: _reactions_at(model, *x[:3], kind, keep, label, *x[3:]))(xs)


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


def _success_codes(n_t):
    import diffrax

    return jax.vmap(lambda _: diffrax.RESULTS.successful)(jnp.arange(n_t))


def statics(model, q, t=0.0, method="min_norm"):
    """Static reactions: qd = 0, qdd = 0, C^T lambda = F (seed 003, "Statics").

    Raises when F is not balanced by the constraints (the configuration is not an equilibrium).
    """
    q = jnp.asarray(q, jnp.float64)
    kind, keep = _method_parts(model, method, "statics")
    label = _label(method, shared=not _traced(model, q, t))
    with _naming_rows(method):
        rx = _statics(model, q, jnp.asarray(t, jnp.float64), kind, keep, label)
    return _named(rx, method)


@_errors.checked_jit  # one compiled program per model structure and method kind, cacheable
def _statics(model, q, t, kind, keep, label):
    zeros = jnp.zeros_like(q)
    rx = _reactions_at(model, q, zeros, t, kind, keep, label, qdd=zeros)
    F = model.forces(q, zeros, t)
    unbalanced = F + jnp.sum(rx.generalized_array, axis=0)
    scale = 1.0 + jnp.max(jnp.abs(F))
    lam = _errors.error_if(
        rx.lam,
        jnp.max(jnp.abs(unbalanced)) > 1e-9 * scale,
        "statics: the applied forces are not balanced by the constraints at this configuration "
        "(it is not an equilibrium: add a driver or a support, or use mb.simulate)",
    )
    return eqx.tree_at(lambda r: r.lam, rx, lam)
