"""Position analysis: the nearest configuration on the constraint manifold Phi(q, t) = 0.

`assemble` solves   min_q 1/2 |q - q_init|^2   subject to   Phi(q, t) = 0,
whose solution q* satisfies the KKT conditions Phi(q*) = 0 and q* - q_init = -Phi_q^T mu
(mu not unique when constraints are redundant, q* unique). The iteration

    q <- q - Phi_q^+ Phi(q) - (I - Phi_q^+ Phi_q)(q - q_init)

is a least-squares (minimum-norm) Gauss-Newton step on Phi plus the removal of the tangential
part of the displacement; its fixed points are exactly the KKT points. Pseudo-inverses use the
masked SVD, so redundant (rank-deficient) Phi_q is fine.

The derivative is implicit (the iterations are not unrolled): differentiating the KKT system,
    (I + sum_k mu_k Hess Phi_k) dq + Phi_q^T dmu = dq_init - d_theta(Phi_q^T mu),
    Phi_q dq = -d_theta Phi,
which has a unique dq (dmu is not unique); it is solved in the null space of Phi_q.
"""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._custom_types import Coordinates, CoordinatesLike, ScalarLike
from .._linalg.dense import (
    masked_reciprocal,
    materialise,
    null_space,
    pinv_solve,
    rank_mask,
    solve,
    split_inexact,
    svd,
)
from .._model.arguments import checked_count, checked_option
from .._model.input_checks import check_shapes, checked_finite
from .._model.model import Model
from .._runtime import errors as _errors


def _projection_step(model, q, q_init, t):
    """The step dv (over the velocity coordinates, applied by `Model.retract`) and Phi(q)."""
    J = model.holonomic_C(q, t)
    r = model.phi(q, t)
    U, s, Vt = svd(J)
    mask = rank_mask(s)
    s_inv = masked_reciprocal(s, mask)
    newton = -Vt.T @ (s_inv * (U.T @ r))
    disp = model.difference(q, q_init)
    tangential = disp - Vt.T @ jnp.where(mask, Vt @ disp, 0.0)
    return newton - tangential, r


def _solve(model, q_init, t, tol, max_steps):
    step_tol = 1e-11 * (1.0 + jnp.max(jnp.abs(q_init)))

    def cond(state):
        k, _, dq_norm, r_norm = state
        converged = (r_norm < tol) & (dq_norm < step_tol)
        return (k < max_steps) & ~converged & jnp.isfinite(r_norm)

    def body(state):
        k, q, _, _ = state
        dq, r = _projection_step(model, q, q_init, t)
        q_new = model.retract(q, dq)
        r_new = model.phi(q_new, t)
        return k + 1, q_new, jnp.max(jnp.abs(dq)), jnp.max(jnp.abs(r_new), initial=0.0)

    r0 = jnp.max(jnp.abs(model.phi(q_init, t)), initial=0.0)
    init = (0, q_init, jnp.asarray(jnp.inf, q_init.dtype), r0)
    _, q, _, r_norm = jax.lax.while_loop(cond, body, init)
    return q, r_norm


@eqx.filter_custom_jvp
def _assemble_core(model, q_init, t, *, tol, max_steps):
    q, _ = _solve(model, q_init, t, tol, max_steps)
    return q


@_assemble_core.def_jvp
def _assemble_jvp(primals, tangents, *, tol, max_steps):
    model, q_init, t = primals
    t_model, t_q_init, t_t = tangents
    q = _assemble_core(model, q_init, t, tol=tol, max_steps=max_steps)
    if model.nq != model.n:
        return q, _local_jvp(model, q, q_init, t, t_model, t_q_init, t_t)
    diff, static = split_inexact(model)
    t_diff = (
        materialise(diff, t_model)
        if t_model is not None
        else jax.tree_util.tree_map(jnp.zeros_like, diff)
    )
    dq_init = jnp.zeros_like(q) if t_q_init is None else t_q_init
    dt = jnp.zeros_like(t) if t_t is None else t_t

    def phi(q_, diff_, t_):
        return eqx.combine(diff_, static).phi(q_, t_)

    J = model.holonomic_C(q, t)
    mu = pinv_solve(J.T, q_init - q)

    def grad_lagrangian(q_, diff_, t_):
        return jax.grad(lambda qq: mu @ phi(qq, diff_, t_))(q_)

    _, dphi = jax.jvp(lambda d_, t_: phi(q, d_, t_), (diff, t), (t_diff, dt))
    _, dgrad = jax.jvp(lambda d_, t_: grad_lagrangian(q, d_, t_), (diff, t), (t_diff, dt))
    H = jnp.eye(q.shape[0], dtype=q.dtype) + jax.jacfwd(grad_lagrangian)(q, diff, t)

    w_p = -pinv_solve(J, dphi)
    V, mask = null_space(J)
    K = V.T @ H @ V + jnp.diag(~mask).astype(q.dtype)
    y = solve(K, V.T @ (dq_init - dgrad - H @ w_p))
    return q, w_p + V @ y


def _local_jvp(model, q, q_init, t, t_model, t_q_init, t_t):
    """The derivative of q* where positions and velocities differ in layout (spatial
    bodies): the KKT system of min 1/2 |q (-) q_init|^2 subject to Phi = 0 differentiated in
    the local coordinates xi of q* (q = retract(q*, xi), (-) the kind's `difference`),

        H dxi + J^T dmu = -d(grad_xi L),   J dxi = -d Phi,   L = 1/2 |q (-) q_init|^2 + mu . Phi,

    solved in the null space of J = C_hol(q*) as the planar one; dq* = T(q*) dxi."""
    diff, static = split_inexact(model)
    t_diff = (
        materialise(diff, t_model)
        if t_model is not None
        else jax.tree_util.tree_map(jnp.zeros_like, diff)
    )
    dq_init = jnp.zeros_like(q_init) if t_q_init is None else t_q_init
    dt = jnp.zeros_like(t) if t_t is None else t_t
    xi0 = jnp.zeros(model.n, q.dtype)

    def phi(xi, diff_, t_):
        return eqx.combine(diff_, static).phi(model.retract(q, xi), t_)

    def energy(xi, q_init_):
        d = model.difference(model.retract(q, xi), q_init_)
        return 0.5 * jnp.sum(d * d)

    J = model.holonomic_C(q, t)
    mu = pinv_solve(J.T, -jax.grad(energy)(xi0, q_init))

    def lagrangian(xi, q_init_, diff_, t_):
        return energy(xi, q_init_) + mu @ phi(xi, diff_, t_)

    grad = jax.grad(lagrangian)
    _, dphi = jax.jvp(lambda d_, t_: phi(xi0, d_, t_), (diff, t), (t_diff, dt))
    _, dgrad = jax.jvp(
        lambda qi, d_, t_: grad(xi0, qi, d_, t_), (q_init, diff, t), (dq_init, t_diff, dt)
    )
    H = jax.jacfwd(grad)(xi0, q_init, diff, t)
    w_p = -pinv_solve(J, dphi)
    V, mask = null_space(J)
    K = V.T @ H @ V + jnp.diag(~mask).astype(q.dtype)
    y = solve(K, V.T @ (-dgrad - H @ w_p))
    return model.qdot(q, w_p + V @ y)


def failure_messages(model):
    """assemble's failure message for each holonomic pair (the one keeping the largest residual)."""
    names = [p.name for p in model.pair_info if p.holonomic]
    return tuple(
        f"assemble: no configuration satisfies the constraints; pair {name!r} keeps the largest "
        "residual. Its geometry may be impossible to close (e.g. link lengths), the constraints "
        "may contradict each other, or the start is too far from an assembled configuration."
        for name in names
    ) or ("assemble failed",)


def _worst_pair(model, r):
    """Index (among holonomic pairs) of the pair owning the largest residual entry."""
    hol_pairs = [k for k, p in enumerate(model.pair_info) if p.holonomic]
    row_owner = model.row_pair_index[model.holonomic_rows]
    local = jnp.asarray([hol_pairs.index(int(k)) for k in row_owner])
    return local[jnp.argmax(jnp.abs(r))]


def assemble(
    model: Model,
    q: CoordinatesLike | None = None,
    t: ScalarLike = 0.0,
    *,
    tol: float = 1e-12,
    max_steps: int = 100,
    throw: bool = True,
) -> Coordinates:
    """Nearest configuration to q that satisfies Phi(q, t) = 0 (redundant constraints allowed).

    **Arguments:**
    - `model`: a built `Model`.
    - `q`: starting coordinates (default `model.q0`).
    - `t`: time, for rheonomic drivers.
    - `tol`: required max |Phi| (default 1e-12).
    - `max_steps`: iteration limit.
    - `throw`: raise (also inside jit) when no consistent configuration is found; with
      `throw=False` the unconverged q is returned, check `model.phi`.

    **Returns:** q* = argmin |q - q_init| subject to Phi(q*, t) = 0. Differentiable with respect
    to model parameters, q and t by implicit differentiation.

    ```python
    q = mb.assemble(model, model.q0 + 0.01)
    ```
    """
    q_init = jnp.asarray(model.q0 if q is None else q, dtype=jnp.float64)
    t = jnp.asarray(t, dtype=jnp.float64)
    with _errors.reporting("assemble"):
        check_shapes(model, q=q_init)
        q_init = checked_option(q_init, tol, "tol")
        max_steps = checked_count(max_steps, "max_steps")
        return _assemble_compiled(model, q_init, t, tol, max_steps, throw)


# eager calls run compiled (design measurement D6), with the checks returned as
# data (no host callback: the persistent cache keeps the program); inlined in jit
@_errors.checked_jit
def _assemble_compiled(model, q_init, t, tol, max_steps, throw):
    if throw:
        q_init = checked_finite(model, q_init, "q")
    q_init = model.normalize(q_init)  # unit quaternions (planar: q itself)
    if model.m == 0:
        return q_init
    q_star = _assemble_core(model, q_init, t, tol=tol, max_steps=max_steps)
    if throw:
        bad, worst = assembly_failure(model, q_star, t, tol)
        q_star = _errors.branched_error_if(q_star, bad, worst, failure_messages(model))
    return q_star


def assembly_failure(model, q_star, t, tol):
    """(failed, index of the holonomic pair owning the largest residual) for a result of
    `assemble`: failed unless max |Phi(q_star, t)| < tol (nan fails)."""
    if model.m == 0:
        return jnp.asarray(False), jnp.asarray(0)
    r = jax.lax.stop_gradient(model.phi(q_star, t))
    bad = ~(jnp.max(jnp.abs(r)) < tol)
    # index 0 where assembled: under vmap the largest index over the batch is named
    return bad, jnp.where(bad, _worst_pair(model, r), 0)
