"""Rank-revealing linear algebra with fixed shapes, safe under vmap: no batched LAPACK call.

Every factorization and solve that jaxmb makes goes through this module, because of a hazard
in jaxlib 0.10's CPU kernels: a LAPACK custom call that receives a batch of matrices splits it
over XLA's intra-op thread pool (jaxlib's ParallelBatchMap) and blocks until the pieces are
done. When every pool thread is blocked in such a wait, nothing is left to run the pieces and
the program hangs (measured: vmapped solvability of 1024 robot configurations hung in 7 of 18
runs). So jaxmb hands LAPACK one matrix at a time:

- one matrix (no vmap): LAPACK, as jax.numpy would;
- under vmap (`jax.custom_batching.custom_vmap`), for the hot paths (pivoted QR and triangular
  solves): jaxmb's compiled kernels (`jaxmb._linalg.native`, one custom call looping over the batch
  on the calling thread) where they were built, else a pure-jnp algorithm vectorized over the
  batch (`householder_pivoted_qr`, `_substitution`); for the rest, a sequential `lax.map` of
  single-matrix LAPACK calls (`per_member`). Nested vmaps reach the same rules again, so no
  depth of vmap produces a batched LAPACK call.

Derivatives never differentiate a LAPACK call under vmap either: solves are
`lax.custom_linear_solve` (implicit, transposable, so forward and reverse mode work), and the
factorizations carry custom JVPs written with products and the safe triangular solve.
tests/test_linalg.py scans the compiled programs of the documented vmapped uses for LAPACK
custom calls with a batch dimension.

Rank decisions use values s_k > RANK_RTOL * s_max (a relative tolerance): a redundant
constraint set leaves singular values (or pivots |R_kk|) at round-off level (~1e-16 s_max), a
genuine near-singular configuration shows up in the solvability report's margin.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import ArrayLike

from . import native as _native
from .vmap_rules import all_batched, full_batch

RANK_RTOL = 1e-9


def rank_mask(s, rtol: ArrayLike = RANK_RTOL, scale: ArrayLike | None = None):
    """Mask of the values counted in the rank: s_k > rtol * max(s) (singular values, or the
    non-increasing |R_kk| of a pivoted QR), or s_k > rtol * `scale` for a reference scale
    other than the largest value (e.g. the norm of the whole matrix a block came from)."""
    scale = jnp.max(s, initial=0.0) if scale is None else scale
    return s > rtol * scale


# --------------------------------------------------------------------------------------------
# one matrix to LAPACK at a time


def per_member(fun):
    """`fun` of single matrices (LAPACK); under vmap a sequential `lax.map` over the batch, so
    every LAPACK call still sees one matrix (nested vmaps reach this rule again)."""

    @jax.custom_batching.custom_vmap
    def wrapped(*args):
        return fun(*args)

    @wrapped.def_vmap
    def _rule(axis_size, in_batched, *args):
        return _mapped(wrapped, full_batch(axis_size, in_batched, args))

    return wrapped


def _mapped(fun, args, batch_size=None):
    """`lax.map` of `fun` over the leading axis of `args` (vmapped in blocks of `batch_size`),
    with custom_vmap's batched-output flags (all True)."""
    return all_batched(jax.lax.map(lambda xs: fun(*xs), args, batch_size=batch_size))


BLOCK_BYTES = 1 << 17
"""Working set of one block of a vectorized factorization: a batch is processed in blocks of
about this many bytes per matrix argument, so the loop over columns stays in cache (a batch
of 2,000 22 x 22 matrices is 7.7 MB: memory-bound when swept whole at every step)."""


def _vectorized(
    single,
    batched=None,
    worth_it=lambda *shapes: True,
    native=None,
    native_worth_it=lambda *shapes: True,
):
    """`single` for one matrix; under vmap, `native` (a compiled kernel of the whole batch,
    `jaxmb._linalg.native`) where it is available and `native_worth_it(*member shapes)`, else
    `batched` (a pure-jnp function of single matrices) vmapped over blocks of the batch
    (BLOCK_BYTES) and mapped sequentially over the blocks; nested vmaps reach the rule again
    and vectorize too. Where `batched` is None or `worth_it(*member shapes)` is False (matrices
    large enough that XLA's vectorized loops lose to LAPACK), the batch is mapped member by
    member through `single` instead, as `per_member` does."""

    @jax.custom_batching.custom_vmap
    def wrapped(*args):
        return single(*args)

    @wrapped.def_vmap
    def _rule(axis_size, in_batched, *args):
        args = full_batch(axis_size, in_batched, args)
        shapes = [a.shape[1:] for a in args]
        if native is not None and _native.available(*args) and native_worth_it(*shapes):
            return all_batched(native(*args))
        if batched is None or not worth_it(*shapes):
            return _mapped(wrapped, args)  # one matrix per LAPACK call, as in `per_member`
        item = max(a[0].size * a.dtype.itemsize for a in args)
        return _mapped(batched, args, int(min(axis_size, max(1, BLOCK_BYTES // item))))

    return wrapped


def small_product(A, B):
    """A @ B for small matrices, as the elementwise products summed over the shared axis: one
    fused loop under vmap, where XLA:CPU makes a matrix-kernel call per batch member of a
    batched dot (measured on the robot's unique directions, see
    design measurement D2)."""
    return jnp.sum(A[:, :, None] * B[None, :, :], axis=1)


# --------------------------------------------------------------------------------------------
# triangular and general solves


def _substitution(T, b, lower):
    """x with T x = b for triangular T (k, k), b (k,) or (k, c): back or forward
    substitution, x_i = (b_i - sum_{j beyond i} T_ij x_j) / T_ii, pure jnp."""
    k = T.shape[0]
    idx = jnp.arange(k)
    order = idx if lower else idx[::-1]

    def step(s, x):
        i = order[s]
        row = jnp.where((idx < i) if lower else (idx > i), T[i], 0.0)
        return x.at[i].set((b[i] - row @ x) / T[i, i])

    return jax.lax.fori_loop(0, k, step, jnp.zeros_like(b))


def _tri_single(T, b, lower):
    return jsl.solve_triangular(T, b, lower=lower)


_tri = {
    lower: _vectorized(
        lambda T, b, lower=lower: _tri_single(T, b, lower),
        lambda T, b, lower=lower: _substitution(T, b, lower),
        native=lambda T, b, lower=lower: _native.triangular_solve(T, b, lower),
    )
    for lower in (False, True)
}


def solve_triangular(R, b, *, lower=False, trans=False):
    """x with R x = b (R^T x = b with `trans`), R triangular (k, k), b (k,) or (k, c):
    LAPACK trsm for one system, vectorized substitution under vmap; differentiable in R and b
    (implicit: dx = R^-1 (db - dR x), via lax.custom_linear_solve)."""
    T = R.T if trans else R
    low = lower != trans

    def solve(_, rhs):
        return _tri[low](T, rhs)

    def transpose_solve(_, rhs):
        return _tri[not low](T.T, rhs)

    return jax.lax.custom_linear_solve(lambda x: T @ x, b, solve, transpose_solve)


_lu_solve = per_member(lambda A, b: jnp.linalg.solve(A, b))


def solve(A, b):
    """x with A x = b, A square nonsingular, b (n,) or (n, c); differentiable (implicit)."""

    def transpose_solve(_, rhs):
        return _lu_solve(A.T, rhs)

    return jax.lax.custom_linear_solve(
        lambda x: A @ x, b, lambda _, r: _lu_solve(A, r), transpose_solve
    )


# --------------------------------------------------------------------------------------------
# Cholesky of a symmetric positive-definite matrix


def _cholesky_by_columns(A):
    """Lower L with L L^T = A, pure jnp, column by column: L_jj = sqrt(A_jj - sum_{k<j}
    L_jk^2), L_ij = (A_ij - sum_{k<j} L_ik L_jk) / L_jj; a non-positive pivot gives nan."""
    n = A.shape[0]
    idx = jnp.arange(n)

    def step(j, L):
        row = jnp.where(idx < j, L[j], 0.0)
        d = A[j, j] - row @ row
        ljj = jnp.sqrt(jnp.where(d > 0, d, jnp.nan))
        col = (A[:, j] - L @ row) / ljj
        return L.at[:, j].set(jnp.where(idx > j, col, jnp.where(idx == j, ljj, 0.0)))

    return jax.lax.fori_loop(0, n, step, jnp.zeros_like(A))


class SpdFactorization(eqx.Module):
    """A = L L^T factorized once, kept as A^-1 = L^-T L^-1 (one triangular solve with the
    identity and one product): `solve(b)` = A^-1 b is then one matrix-vector product, which
    for the small matrices this serves (at most a few dozen coordinates) costs less than two
    triangular solves per right-hand side, and vectorizes under vmap. Differentiable in A and
    b (lax.custom_linear_solve: dx = A^-1 (db - dA x), the inverse reused). The inverse's
    error, about cond(A) eps relative, is that of the triangular solves it replaces; callers
    that need more iterate on the residual (`jaxmb._formulations.augmented_lagrangian`)."""

    values: jax.Array
    inverse: jax.Array

    def solve(self, b: jax.Array) -> jax.Array:
        def solve_factored(_, rhs):
            return self.inverse @ rhs

        return jax.lax.custom_linear_solve(
            lambda x: self.values @ x, b, solve_factored, symmetric=True
        )


def _spd_inverse_single(A):
    """A^-1 = L^-T L^-1 with L the Cholesky factor (LAPACK potrf and trsm, one matrix)."""
    l_inv = _tri_single(jnp.linalg.cholesky(A), jnp.eye(A.shape[0], dtype=A.dtype), True)
    return l_inv.T @ l_inv


def _spd_inverse_by_columns(A):
    """The same, pure jnp: the column loop of `_cholesky_by_columns`, forward substitution."""
    l_inv = _substitution(_cholesky_by_columns(A), jnp.eye(A.shape[0], dtype=A.dtype), True)
    return l_inv.T @ l_inv


spd_inverse = _vectorized(
    _spd_inverse_single, _spd_inverse_by_columns, native=lambda A: _native.spd_inverse(A)
)
"""A^-1 of a symmetric positive-definite A by its Cholesky factor, nan where A is not
positive definite: LAPACK for one matrix; under vmap the compiled kernel
(`jaxmb._linalg.native.spd_inverse`, one call for the batch) where built, else the column
loop vectorized over the batch. Not differentiated (used under stop_gradient)."""


def factorize_spd(values: jax.Array) -> SpdFactorization:
    """`SpdFactorization` of the symmetric positive-definite `values` (n, n)."""
    return SpdFactorization(values, spd_inverse(jax.lax.stop_gradient(values)))


# --------------------------------------------------------------------------------------------
# QR


def householder_pivoted_qr(A, full=False):
    """A[:, perm] = Q R of one m x n matrix, pure jnp with fixed shapes (Golub & Van Loan,
    Matrix Computations, 4th ed., alg. 5.4.1): Q (m, k) and R (k, n), k = min(m, n), or with
    `full` Q (m, m) and R (m, n); R upper triangular with |R_jj| non-increasing, perm (n,).

    At step j the remaining column of largest norm (the first one in the current order on
    ties) becomes pivot j and the reflector H_j = I - tau v v^T zeroes it below row j, with
    LAPACK's dlarfg convention R_jj = -sign(x_j) ||x|| and H_j = I when x is already zero below
    the diagonal, as geqp3 does; the column norms are recomputed at every step rather than
    downdated, so only exact ties can be broken differently. The columns are not moved during
    the loop (a moving column is a gather per step, slow when vectorized over a batch): `pos`
    tracks the order a swapping implementation would have, and R is permuted once at the end.
    A matrix with a nan or inf entry gives nan Q and R."""
    m, n = A.shape
    rows, cols = jnp.arange(m), jnp.arange(n)

    def step(j, carry):
        R, Q, pos, done = carry
        below = rows >= j
        norms = jnp.sum(jnp.where(below[:, None], R * R, 0.0), axis=0)
        cand = jnp.where(done, -1.0, norms)
        best = jnp.max(cand)
        p = jnp.argmin(jnp.where(cand == best, pos, n))  # first in the current order
        pick = cols == p
        jj = jnp.asarray(j, pos.dtype)
        current = jnp.sum(jnp.where(pick, pos, 0), dtype=pos.dtype)
        pos = jnp.where(pos == jj, current, jnp.where(pick, jj, pos))
        x = jnp.where(below, jnp.sum(jnp.where(pick[None, :], R, 0.0), axis=1), 0.0)
        alpha = x[j]
        tail = jnp.sum(jnp.where(rows > j, x * x, 0.0))
        beta = -jnp.where(alpha >= 0.0, 1.0, -1.0) * jnp.sqrt(alpha * alpha + tail)
        v = jnp.where(rows == j, alpha - beta, x)
        reflect = tail > 0.0
        tau = jnp.where(reflect, 2.0 / jnp.where(reflect, jnp.sum(v * v), 1.0), 0.0)
        R = R - jnp.outer(tau * v, v @ R)
        R = jnp.where(pick[None, :] & (rows[:, None] > j), 0.0, R)  # exact zeros
        Q = Q - jnp.outer(Q @ v, tau * v)
        return R, Q, pos, done | pick

    k = min(m, n)
    init = (A, jnp.eye(m, dtype=A.dtype), cols.astype(jnp.int32), jnp.zeros(n, bool))
    R, Q, pos, _ = jax.lax.fori_loop(0, k, step, init)
    perm = jnp.zeros(n, jnp.int32).at[pos].set(cols.astype(jnp.int32))
    R = R[:, perm]
    # nan in, nan out (as geqp3): the pivoting alone would move a nan column to the end and
    # leave the other columns finite, a silently wrong factorization
    bad = ~jnp.all(jnp.isfinite(A))
    Q, R = jnp.where(bad, jnp.nan, Q), jnp.where(bad, jnp.nan, R)
    if full:
        return Q, R, perm
    return Q[:, :k], R[:k], perm


def _lapack_pivoted_qr(A, mode):
    Q, R, perm = jsl.qr(A, mode=mode, pivoting=True)
    return Q, R, perm.astype(jnp.int32)


VECTOR_QR_LIMIT = 2000
"""Largest m n min(m, n) (the flop count's shape factor) for which a vmapped pivoted QR runs
`householder_pivoted_qr` vectorized over the batch; larger matrices go to LAPACK one member at
a time: the measured crossover (`python benchmarks/bench_batch.py --qr`; the figures in
design measurement D3). XLA:CPU runs each step of the vectorized loop as a few dozen
small kernels whose cost grows with the matrix, while geqp3's stays nearly flat."""


def _vector_qr_worth_it(shape):
    m, n = shape
    return m * n * min(m, n) <= VECTOR_QR_LIMIT


_pivoted_qr = {
    mode: _vectorized(
        lambda A, mode=mode: _lapack_pivoted_qr(A, mode),
        lambda A, mode=mode: householder_pivoted_qr(A, full=mode == "full"),
        _vector_qr_worth_it,
        native=lambda A, mode=mode: _native.pivoted_qr(A, full=mode == "full"),
    )
    for mode in ("economic", "full")
}


def _thin_qr_jvp(Q, R, dA):
    """Tangents of A = Q R (m >= n, thin): with X = dA R^-1 and Omega the skew part of the
    strictly lower triangle of Q^T X, dQ = Q (Omega - Q^T X) + X, dR = (Q^T X - Omega) R
    (J. Townsend, "Differentiating the QR decomposition", 2018)."""
    X = solve_triangular(R, dA.T, trans=True).T  # X R = dA
    QtX = Q.T @ X
    low = jnp.tril(QtX, -1)
    omega = low - low.T
    return Q @ (omega - QtX) + X, (QtX - omega) @ R


@jax.custom_jvp
def economic_pivoted_qr(A):
    """Economic column-pivoted QR, A[:, perm] = Q R with |R_jj| non-increasing (LAPACK geqp3;
    `householder_pivoted_qr` vectorized over the batch under vmap). Differentiable at any
    order, forward and reverse, with the pivots held constant (m >= n, R nonsingular where
    differentiated)."""
    return _pivoted_qr["economic"](A)


@economic_pivoted_qr.defjvp
def _economic_pivoted_qr_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    Q, R, perm = economic_pivoted_qr(A)
    dQ, dR = _thin_qr_jvp(Q, R, dA[:, perm])
    return (Q, R, perm), (dQ, dR, jnp.zeros(perm.shape, jax.dtypes.float0))


def pivoted_qr(C):
    """Full column-pivoted QR, C[:, perm] = Q R (seed 001, eq. 21), Q square; for rank
    decisions and null-space bases (no derivative: the basis of a null space is not a
    differentiable function of C)."""
    return _pivoted_qr["full"](jax.lax.stop_gradient(C))


def _past_rank(Q, d, rtol):
    """(Q with its columns up to the rank zeroed, d): d the pivots |R_kk| (`rank_mask`)."""
    return jnp.where(rank_mask(d, rtol)[None, :], 0.0, Q), d


def _past_rank_of(qr, rtol):
    """`_past_rank` of a full pivoted QR (Q, R, perm)."""
    Q, R, _ = qr
    return _past_rank(Q, pivot_magnitudes(R, Q.shape[0]), rtol)


@functools.cache
def _left_null_qr(rtol):
    return _vectorized(
        lambda C: _past_rank_of(_lapack_pivoted_qr(C, "full"), rtol),
        lambda C: _past_rank_of(householder_pivoted_qr(C, full=True), rtol),
        _vector_qr_worth_it,
        native=lambda C: jax.vmap(lambda Q, d: _past_rank(Q, d, rtol))(*_native.left_null(C, rtol)),
    )


def left_null_qr(C, rtol=RANK_RTOL):
    """(Q~, d) from the full pivoted QR C[:, perm] = Q R (seed 001, eq. 21): d = |R_kk| padded
    with zeros to the rows of C (`pivot_magnitudes`), and Q with its columns up to the rank
    (`rank_mask(d, rtol)`) zeroed, so the others, Q~, are an orthonormal basis of null(C^T)
    (eq. 27). Under vmap the compiled kernel forms only Q~'s columns (for the robot, 2 of 22)
    and writes no R. No derivative (a null-space basis is not a function of C). A traced
    `rtol` (the kernel needs a number) takes the full pivoted QR and masks it."""
    C = jax.lax.stop_gradient(C)
    try:
        rtol = float(rtol)
    except TypeError:  # a tracer (jax's ConcretizationTypeError is a TypeError)
        return _past_rank_of(pivoted_qr(C), rtol)
    return _left_null_qr(rtol)(C)


def pivot_magnitudes(R, size):
    """|R_kk| of a pivoted QR padded with zeros to `size` (non-increasing, as geqp3 orders
    them): the values whose `rank_mask` is the numerical rank."""
    return jnp.zeros(size, R.dtype).at[: min(R.shape)].set(jnp.abs(jnp.diagonal(R)))


def row_order(A):
    """(d, order): pivoted QR of A^T, A^T[:, order] = Q R, and d = `pivot_magnitudes` of R.
    Rows order[:r] (r the rank) span A's row space (seed 001, section 3.3)."""
    _, R, order = pivoted_qr(A.T)
    return pivot_magnitudes(R, A.shape[0]), order


def independent_rows(A, rtol=RANK_RTOL):
    """Mask of rows of A that span its row space, the others being redundant: the pivots of
    `row_order` counted in the rank (`rank_mask`). Every rank decision of jaxmb on rows of C
    goes through it or `rank_mask`."""
    d, order = row_order(A)
    return jnp.zeros(A.shape[0], bool).at[order].set(rank_mask(d, rtol))


_qr_single = _vectorized(
    lambda A: tuple(jnp.linalg.qr(A)),
    native=lambda A: _native.pivoted_qr(A, pivoting=False)[:2],
)


@jax.custom_jvp
def qr(A):
    """Economic QR A = Q R without pivoting (m >= n where differentiated)."""
    return _qr_single(A)


@qr.defjvp
def _qr_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    Q, R = qr(A)
    return (Q, R), _thin_qr_jvp(Q, R, dA)


# --------------------------------------------------------------------------------------------
# SVD and what is built from it


JACOBI_SVD_LIMIT = 10
"""Largest min(m, n) for which a vmapped SVD runs the compiled one-sided Jacobi kernel
(`jaxmb._linalg.native.svd`); larger matrices go to LAPACK one member at a time. Measured on a
2-core AMD EPYC (`python benchmarks/bench_batch.py --svd`), us per member of a batch of 64,
Jacobi vs LAPACK: 3 x 4: 0.57 vs 4.0; 3 x 22: 1.0 vs 5.0; 6 x 7: 3.7 vs 7.4; 10 x 11: 16 vs
21; 14 x 15: 37 vs 27 (Jacobi's sweeps cost k^3, gesdd's overhead is flat)."""


def _jacobi_worth_it(shape):
    return min(shape) <= JACOBI_SVD_LIMIT


_svd_thin = _vectorized(
    lambda A: tuple(jnp.linalg.svd(A, full_matrices=False)),
    native=_native.svd,
    native_worth_it=_jacobi_worth_it,
)
_svd_full = per_member(lambda A: tuple(jnp.linalg.svd(A, full_matrices=True)))
_svd_values = _vectorized(
    lambda A: jnp.linalg.svd(A, compute_uv=False),
    native=lambda A: _native.svd(A)[1],
    native_worth_it=_jacobi_worth_it,
)


@jax.custom_jvp
def svd(A):
    """Thin SVD A = U diag(s) Vt; differentiable where the singular values are distinct."""
    return _svd_thin(A)


@svd.defjvp
def _svd_jvp(primals, tangents):
    """dS = U^T dA V; ds = diag(dS); dU, dV from F_ij = 1 / (s_j^2 - s_i^2) (i != j) and the
    parts of dA outside range(U) and range(V) (Townsend 2016; as jax.numpy's rule)."""
    (A,), (dA,) = primals, tangents
    U, s, Vt = svd(A)
    V = Vt.T
    dS = U.T @ dA @ V
    ds = jnp.diagonal(dS)
    k = s.shape[0]
    eye = jnp.eye(k, dtype=A.dtype)
    sr = s[None, :]
    F = 1.0 / ((sr + sr.T) * (sr - sr.T) + eye) - eye
    zero = (s == 0).astype(A.dtype)
    s_inv = 1.0 / (s + zero) - zero
    dU = U @ (F * (sr * dS + (sr * dS).T) + 0.5 * (dS - dS.T) * s_inv[None, :] * eye)
    dV = V @ (F * (sr.T * dS + (sr.T * dS).T))
    m, n = A.shape
    s_safe = jnp.where(s == 0, 1.0, s)[None, :]
    if m > n:
        dAV = dA @ V
        dU = dU + (dAV - U @ (U.T @ dAV)) / s_safe
    if n > m:
        dAtU = dA.T @ U
        dV = dV + (dAtU - V @ (Vt @ dAtU)) / s_safe
    return (U, s, Vt), (dU, ds, dV.T)


def singular_values(A):
    """Singular values, non-increasing (for rank decisions: no derivative)."""
    return _svd_values(jax.lax.stop_gradient(A))


def numerical_rank(A, rtol=RANK_RTOL):
    """The number of singular values of A above rtol times the largest (`rank_mask`)."""
    return jnp.sum(rank_mask(singular_values(A), rtol))


def svd_full(A):
    """Full SVD U (m, m), s, Vt (n, n), for null-space bases (no derivative)."""
    return _svd_full(jax.lax.stop_gradient(A))


def masked_reciprocal(s, mask):
    """1 / s where `mask` (the values counted in the rank), 0 elsewhere: the singular values
    of a pseudo-inverse (no division by the dropped ones, so no nan in value or derivative)."""
    return jnp.where(mask, 1.0 / jnp.where(mask, s, 1.0), 0.0)


def _masked_pinv(A, rtol):
    U, s, Vt = _svd_thin(A)
    s_inv = masked_reciprocal(s, rank_mask(s, rtol))
    return (Vt.T * s_inv[None, :]) @ U.T


@jax.custom_jvp
def _pinv(A, rtol):
    return _masked_pinv(A, rtol)


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
    """dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, valid where the rank is
    locally constant (Golub & Pereyra 1973, eq. 4.12; the rule jax.numpy uses)."""
    A, rtol = primals
    dA, _ = tangents
    P = _pinv(A, rtol)
    m, n = A.shape
    dP = (
        -P @ dA @ P
        + P @ P.T @ dA.T @ (jnp.eye(m, dtype=A.dtype) - A @ P)
        + (jnp.eye(n, dtype=A.dtype) - P @ A) @ dA.T @ P.T @ P
    )
    return P, dP


def pinv(A, rtol=RANK_RTOL):
    """Moore-Penrose pseudo-inverse with singular values below rtol * s_max dropped."""
    return _pinv(A, jnp.asarray(rtol, A.dtype))


def pinv_solve(A, b, rtol=RANK_RTOL):
    """Minimum-norm least-squares solution x = A^+ b."""
    return pinv(A, rtol) @ b


def null_space(A, rtol=RANK_RTOL):
    """Orthonormal basis of null(A) with fixed shape (n, n): columns outside it are zero.

    Returns (V, mask) where mask[k] says whether column k belongs to the null space.
    """
    n = A.shape[1]
    _, s, Vt = svd_full(A)
    s_full = jnp.zeros(n, A.dtype).at[: s.shape[0]].set(s)
    in_range = rank_mask(s_full, rtol) if s.shape[0] else jnp.zeros(n, bool)
    mask = ~in_range
    return jnp.where(mask[None, :], Vt.T, 0.0), mask


def cond(A):
    """2-norm condition number s_max / s_min (inf when singular; no derivative)."""
    s = singular_values(A)
    return s[0] / s[-1]


# --------------------------------------------------------------------------------------------
# pytree helpers


def materialise(primal, tangent):
    """Replace symbolic-zero (None) tangents of a pytree by arrays of zeros."""
    return jax.tree_util.tree_map(
        lambda p, t: jnp.zeros_like(p) if t is None else t,
        primal,
        tangent,
        is_leaf=lambda x: x is None,
    )


def split_inexact(tree):
    """(differentiable, static) parts of a pytree, as `eqx.partition` with inexact arrays."""
    return eqx.partition(tree, eqx.is_inexact_array)
