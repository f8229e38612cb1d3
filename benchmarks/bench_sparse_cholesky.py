"""Benchmark of sparse_cholesky (CPU, float64): fill, compile and run times.

For chain and grid patterns: per ordering the fill (blocks of L), levels,
compile time and median run time of jitted factor + one solve; baselines on
the same matrix: dense numpy/scipy cho_factor + cho_solve, dense jnp
(jax.scipy cho_factor + cho_solve, jitted) and scipy.sparse.linalg.splu.

    OPENBLAS_NUM_THREADS=1 python bench_sparse_cholesky.py
"""

import functools
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.sparse  # noqa: E402
import scipy.sparse.linalg  # noqa: E402

jax.config.update("jax_enable_x64", True)

from jaxmb._linalg import sparse_cholesky as sc  # noqa: E402
import _common  # noqa: E402,F401  (tests/ on the path)
from test_sparse_cholesky import chain, dense_matrix, grid, make_problem  # noqa: E402

CASES = [("chain", chain(n)) for n in (10, 25, 50, 100, 400, 1600)] + [
    ("grid", grid(n)) for n in (3, 5, 7, 10, 20, 30)
]
ORDERINGS = ("natural", "min_degree", "nested_dissection")
DENSE_MAX = 400  # dense baselines only up to this many blocks


def run_time(f, *args, budget=0.25, max_reps=200):
    """Median wall time of f(*args) (blocked), after one warm-up call."""
    jax.block_until_ready(f(*args))
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < budget and len(times) < max_reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def in_loop_time(factor_solve, a, b, iterations=50):
    """Time per factor+solve inside one jitted fori_loop (no dispatch overhead;
    the matrix depends on the carry so that nothing is hoisted)."""

    def loop(a, b):
        def body(i, x):
            return x + factor_solve(a * (1 + 1e-30 * x[0]), b)

        return jax.lax.fori_loop(0, iterations, body, jnp.zeros_like(b))

    return run_time(jax.jit(loop), a, b) / iterations


def compile_time(f, *args):
    jax.clear_caches()
    t = time.perf_counter()
    compiled = jax.jit(f).lower(*args).compile()
    return time.perf_counter() - t, compiled


def factor_solve(sym, values, b):
    return sc.solve(sym, sc.cholesky(sym, values), b)


def sparse_matrix(nb, edges, diag, edge):
    """scipy CSC matrix of A from its blocks."""
    r, c = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    rows = [
        3 * np.arange(nb)[:, None, None] + r,
        3 * edges[:, 0, None, None] + r,
        3 * edges[:, 1, None, None] + c,
    ]
    cols = [
        3 * np.arange(nb)[:, None, None] + c,
        3 * edges[:, 1, None, None] + c,
        3 * edges[:, 0, None, None] + r,
    ]
    vals = [diag, edge, edge]
    return scipy.sparse.coo_matrix(
        (
            np.concatenate([v.ravel() for v in vals]),
            (np.concatenate([x.ravel() for x in rows]), np.concatenate([x.ravel() for x in cols])),
        ),
        shape=(3 * nb, 3 * nb),
    ).tocsc()


def bench_case(family, pattern):
    nb, edges, _ = pattern
    prob = make_problem(pattern, "generic", dense=False)
    b = np.random.default_rng(0).normal(size=3 * nb)
    rows, timed = (
        [],
        {},
    )  # timed: symbolic -> (compile, run); equal patterns+orderings compare equal
    for ordering in ORDERINGS + ("auto",):
        t = time.perf_counter()
        sym = sc.analyse(nb, edges, ordering)
        t_analyse = time.perf_counter() - t
        if sym not in timed:
            values = sc.assemble(sym, prob["diag"], prob["edge"])
            t_compile, f = compile_time(functools.partial(factor_solve, sym), values, b)
            timed[sym] = (t_compile, run_time(f, values, b))
        rows.append(
            dict(
                ordering=ordering if ordering != "auto" else f"auto={sym.ordering[:6]}",
                fill=sym.num_l_blocks,
                levels=sym.num_levels,
                analyse=t_analyse,
                compile=timed[sym][0],
                run=timed[sym][1],
            )
        )
    values = sc.assemble(sym, prob["diag"], prob["edge"])  # sym: the "auto" analysis
    rows[-1]["loop"] = in_loop_time(functools.partial(factor_solve, sym), values, jnp.asarray(b))
    a_sparse = sparse_matrix(nb, edges, prob["diag"], prob["edge"])
    base = dict(splu=run_time(lambda: scipy.sparse.linalg.splu(a_sparse).solve(b)))
    if nb <= DENSE_MAX:
        a = dense_matrix(nb, edges, prob["diag"], prob["edge"])
        base["numpy"] = run_time(lambda: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b))
        dense_jnp = jax.jit(
            lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b)
        )
        base["jnp"] = run_time(dense_jnp, jnp.asarray(a), jnp.asarray(b))
        base["jnp_loop"] = in_loop_time(dense_jnp, jnp.asarray(a), jnp.asarray(b))
    return rows, base


def main():
    t0 = time.perf_counter()
    print(
        f"jax {jax.__version__}, {jax.devices()[0].platform}; compile: s; analyse, run: ms (median of calls "
        "of jitted factor+solve; 'in loop': per iteration of a jitted fori_loop, auto ordering)"
    )
    head = f"{'family':6} {'nb':>5} {'ordering':15} {'fill':>7} {'levels':>6} {'analyse':>8} {'compile':>8} {'run':>8}"
    print(
        head
        + f" | {'numpy cho':>9} {'jnp cho':>8} {'splu':>8} || in loop: {'sparse':>7} {'jnp cho':>8}"
    )
    summary = {}
    for family, pattern in CASES:
        rows, base = bench_case(family, pattern)
        for k, r in enumerate(rows):
            baselines = ""
            if k == 0:
                baselines = " | " + " ".join(
                    f"{1e3 * base[n]:8.3f}" if n in base else f"{'-':>8}"
                    for n in ("numpy", "jnp", "splu")
                )
            if "loop" in r:
                dense = f"{1e3 * base['jnp_loop']:8.3f}" if "jnp_loop" in base else f"{'-':>8}"
                baselines = f"{'':>39}|| {'':>9} {1e3 * r['loop']:7.3f} {dense}"
            print(
                f"{family:6} {pattern[0]:5d} {r['ordering']:15} {r['fill']:7d} {r['levels']:6d} "
                f"{1e3 * r['analyse']:7.1f}m {r['compile']:8.2f} {1e3 * r['run']:8.3f}{baselines}",
                flush=True,
            )
        summary[family, pattern[0]] = dict(
            call=(rows[-1]["run"], base.get("jnp")), loop=(rows[-1]["loop"], base.get("jnp_loop"))
        )
    for family in ("chain", "grid"):
        for how in ("call", "loop"):
            times = {nb: v[how] for (f, nb), v in summary.items() if f == family and v[how][1]}
            faster = [nb for nb, (sparse, dense) in times.items() if sparse < dense]
            slower = [nb for nb, (sparse, dense) in times.items() if sparse >= dense]
            print(
                f"{family} ({how}): sparse(auto) faster than dense jnp at nb = {faster}, slower at nb = {slower}"
            )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
