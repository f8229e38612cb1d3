"""Benchmark: rotating-squares (auxetic) linkages of n x n plates, analysed at scale.

    python benchmarks/bench_metamaterial.py                 # 10 x 10 and 20 x 20
    python benchmarks/bench_metamaterial.py --sizes 4 10 20 30

Per size, side by side in one run (OPENBLAS_NUM_THREADS=1):

- `mb.solvability` (first call, compile included; then the median of 3), its verdicts checked
  against an independent numpy computation: the self-stresses null(C^T) from numpy's SVD of
  C (pair X unique iff no self-stress has a component on X's rows, seed 001's criterion),
  timed too;
- the compliance-resolved multipliers of a random equilibrium load f = C^T lambda_0 (uniform
  hinge stiffness): jaxmb's sparse path (`sparse_compliance_multipliers`, jitted) against
  scipy.sparse LSQR on K^(1/2) C (the same lambda* = K C y, C^T K C y = f), both timed, and
  their difference;
- `mb.statics(..., method=mb.Compliance(...))` end to end (it carries the solvability flags
  of every pair, so it costs a solvability report).
"""

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402
from _common import block, machine, median_time, table  # noqa: E402

import jaxmb as mb  # noqa: E402
from jaxmb._reaction_methods import compliance as cp  # noqa: E402
from jaxmb.models import auxetic  # noqa: E402


def first_and_median(fn, repeats=3):
    start = time.perf_counter()
    out = block(fn())
    first = time.perf_counter() - start
    return out, first, median_time(lambda: block(fn()), repeats)


def numpy_verdicts(model, C):
    """Unique per pair from numpy's SVD: the self-stress basis N (rows x p) = the left singular
    vectors of C beyond its rank; pair X unique iff N restricted to X's rows is zero."""
    U, s, _ = np.linalg.svd(C, full_matrices=True)
    rank = int(np.sum(s > 1e-9 * s[0]))
    N = U[:, rank:]
    out = []
    for name in model.pair_names:
        rows = np.arange(model.num_rows)[model.rows(name)]
        out.append(bool(np.linalg.norm(N[rows]) < 1e-8))
    return np.array(out), rank


def scipy_compliance(C, f, k):
    lam_p = np.linalg.lstsq(C.T, f, rcond=None)[0]
    A = sp.diags(np.sqrt(k)) @ sp.csr_matrix(C)
    y = spla.lsqr(A, lam_p / np.sqrt(k), atol=1e-14, btol=1e-14, iter_lim=200_000)[0]
    return k * (C @ y)


def run(sizes):
    rows = []
    for n in sizes:
        model = auxetic.build(n)
        q = model.q0
        C = np.asarray(model.C(q, 0.0))
        report, solv_first, solv_s = first_and_median(lambda: mb.solvability(model, q))
        start = time.perf_counter()
        expected, rank = numpy_verdicts(model, C)
        numpy_s = time.perf_counter() - start
        agree = bool(np.array_equal(np.asarray(report.solvable), expected))

        rng = np.random.default_rng(0)
        f = C.T @ rng.normal(size=model.num_rows)
        k = np.full(model.num_rows, 1e6)
        sparse = jax.jit(lambda C, f, k: cp.sparse_compliance_multipliers(model, C, f, k))
        args = (jnp.asarray(C), jnp.asarray(f), jnp.asarray(k))
        lam, comp_first, comp_s = first_and_median(lambda: sparse(*args))
        start = time.perf_counter()
        reference = scipy_compliance(C, f, k)
        scipy_s = time.perf_counter() - start
        diff = float(np.max(np.abs(np.asarray(lam) - reference)) / np.max(np.abs(reference)))

        method = mb.Compliance(default=1e6)
        _, statics_first, statics_s = first_and_median(
            lambda: mb.statics(model, q, method=method).lam)
        rows.append([f"{n} x {n}", model.num_rows, int(report.redundancy),
                     int(np.sum(expected)), agree, solv_first, solv_s, numpy_s, comp_first,
                     comp_s, scipy_s, diff, statics_first, statics_s])
    table("Rotating squares, n x n plates, plate (0, 0) held: seconds (first call with "
          "compile / median of 3 after)",
          ["grid", "rows", "p", "unique pairs", "verdicts = numpy", "solvability first",
           "solvability s", "numpy SVD s", "compliance first", "compliance s", "scipy LSQR s",
           "rel. diff", "statics first", "statics s"], rows)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 20])
    args = parser.parse_args(argv)
    print(machine())
    return run(args.sizes)


if __name__ == "__main__":
    main()
