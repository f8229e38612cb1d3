"""Column-pivoted QR that vectorizes across a vmapped batch.

XLA:CPU runs a vmapped LAPACK geqp3 (plus the formation of Q) as a loop of small calls, one
per batch member: about 3 us per member for the 9 x 8 matrix of a slider-crank on a 2-core
CPU, about half of a batched simulation step. `economic_pivoted_qr` keeps LAPACK for one
matrix and switches, through `jax.custom_batching.custom_vmap`, to `householder_pivoted_qr`
vmapped: a loop over the columns whose every operation acts on the whole batch at once
(benchmarks/bench_batch.py: a batch of 1024 slider-cranks about 1.35x faster).

Householder QR with column pivoting (Golub & Van Loan, Matrix Computations, 4th ed.,
alg. 5.4.1): at step j the remaining column of largest norm (the first one on ties) is swapped
to position j and the reflector H_j = I - tau v v^T zeroes it below the diagonal, with LAPACK's
dlarfg convention R_jj = -sign(x_j) ||x|| and H_j = I when x is already zero below the
diagonal. So A[:, perm] = Q R with |R_jj| non-increasing, as geqp3 gives; the column norms are
recomputed at every step rather than downdated, so only exact ties can be broken differently.
"""

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl


def householder_pivoted_qr(A):
    """Economic A[:, perm] = Q R of one m x n matrix, pure jnp with fixed shapes (Golub &
    Van Loan, alg. 5.4.1): Q (m, k), R (k, n) upper triangular, perm (n,), k = min(m, n)."""
    m, n = A.shape
    rows, cols = jnp.arange(m), jnp.arange(n)

    def step(j, carry):
        R, Q, perm = carry
        below = rows >= j
        norms = jnp.sum(jnp.where(below[:, None], R * R, 0.0), axis=0)
        p = jnp.argmax(jnp.where(cols >= j, norms, -1.0))
        swap = jnp.where(cols == j, p, jnp.where(cols == p, j, cols))
        R, perm = R[:, swap], perm[swap]
        x = jnp.where(below, R[:, j], 0.0)
        alpha = x[j]
        tail = jnp.sum(jnp.where(rows > j, x * x, 0.0))
        beta = -jnp.where(alpha >= 0.0, 1.0, -1.0) * jnp.sqrt(alpha * alpha + tail)
        v = jnp.where(rows == j, alpha - beta, x)
        reflect = tail > 0.0
        tau = jnp.where(reflect, 2.0 / jnp.where(reflect, jnp.sum(v * v), 1.0), 0.0)
        R = R - jnp.outer(tau * v, v @ R)
        R = jnp.where((cols[None, :] == j) & (rows[:, None] > j), 0.0, R)  # exact zeros
        Q = Q - jnp.outer(Q @ v, tau * v)
        return R, Q, perm

    init = (A, jnp.eye(m, dtype=A.dtype), jnp.arange(n, dtype=jnp.int32))
    k = min(m, n)
    R, Q, perm = jax.lax.fori_loop(0, k, step, init)
    return Q[:, :k], R[:k], perm


@jax.custom_batching.custom_vmap
def _lapack_or_householder(A):
    return jsl.qr(A, mode="economic", pivoting=True)


@_lapack_or_householder.def_vmap
def _lapack_or_householder_vmap(axis_size, in_batched, A):
    del axis_size, in_batched  # one argument, batched whenever the rule runs
    return jax.vmap(householder_pivoted_qr)(A), (True, True, True)


@jax.custom_jvp
def economic_pivoted_qr(A):
    """Economic column-pivoted QR, A[:, perm] = Q R with |R_jj| non-increasing: LAPACK geqp3
    for one matrix, `householder_pivoted_qr` vectorized over the batch under vmap (nested
    vmaps included). Differentiable at any order, forward and reverse, with the pivots held
    constant (custom_vmap alone has no reverse-mode rule)."""
    return _lapack_or_householder(A)


@economic_pivoted_qr.defjvp
def _economic_pivoted_qr_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    Q, R, perm = economic_pivoted_qr(A)
    # JAX's derivative of the unpivoted QR of A[:, perm] (only reached when the factorization
    # itself is differentiated, e.g. second derivatives of the accelerations)
    _, (dQ, dR) = jax.jvp(lambda X: jsl.qr(X, mode="economic"), (A[:, perm],), (dA[:, perm],))
    return (Q, R, perm), (dQ, dR, jnp.zeros(perm.shape, jax.dtypes.float0))
