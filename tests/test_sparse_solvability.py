"""`mb.solvability(..., method="sparse")`: the verdicts of large models from the sparse
factorization (`jaxmb._analyses.sparse_solvability`).

Reference: seed 001's pivoted-QR test (method "qr", itself checked against the paper and numpy
in test_solvability.py) on the built-in models with redundant rows, knife edges, a singular
position and none of these (the slider-crank): the same ranks, verdicts and counts of unique directions, the same unique
directions (projectors to 1e-8), b_norm of a non-unique pair within the probes' statistical
spread (16 probes: |B_X| estimated within a factor 0.3 to 3, a rank-one B_X's chi-square
interval at 1e-6), and b_norm of a unique pair at round-off. Then the mode block's growth (an
eager call repeats with a larger block, a traced one refuses) and the flags that `statics`
carries above DENSE_BODIES.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._analyses import sparse_solvability
from jaxmb import models
from jaxmb.models import auxetic

MODELS = {
    "mobile_robot": lambda: models.mobile_robot.build(),  # knife edges: h > 0
    "n_four_bar_3": lambda: models.n_four_bar.build(3),
    # the parallelogram's links aligned with the ground: a singular position (rank drops)
    "n_four_bar_singular": lambda: models.n_four_bar.build(1, angle0=0.0),
    "parallelogram": lambda: models.parallelogram.build(),
    "slider_crank": lambda: models.slider_crank.build(),
    "rotating_squares_5": lambda: auxetic.build(5, 4),
}


def _projector(E):
    E = np.asarray(E)
    return E @ E.T


@pytest.mark.parametrize("name", list(MODELS))
def test_sparse_matches_the_pivoted_qr_test(name):
    model = MODELS[name]()
    q = model.q0
    dense = mb.solvability(model, q)
    sparse = mb.solvability(model, q, method="sparse")
    for field in ("rank", "rank_holonomic", "rank_nonholonomic", "redundancy", "dof"):
        assert int(getattr(sparse, field)) == int(getattr(dense, field)), field
    np.testing.assert_array_equal(np.asarray(sparse.solvable), np.asarray(dense.solvable))
    np.testing.assert_array_equal(np.asarray(sparse.unique_count), np.asarray(dense.unique_count))
    ok = np.asarray(dense.solvable)
    assert np.all(np.asarray(sparse.b_relative)[ok] < 1e-12)
    b_dense, b_sparse = np.asarray(dense.b_norm)[~ok], np.asarray(sparse.b_norm)[~ok]
    assert np.all((b_sparse > 0.3 * b_dense) & (b_sparse < 3.0 * b_dense))
    for k in range(len(model.pair_names)):
        np.testing.assert_allclose(
            _projector(sparse.unique_directions[k]),
            _projector(dense.unique_directions[k]),
            atol=1e-8,
        )
    assert sparse.row_order is None and not bool(sparse.block_saturated)
    assert bool(sparse.warning) == bool(dense.warning)
    if name == "n_four_bar_singular":  # exactly aligned: the lost rank is a second mode
        assert int(sparse.dof) == 2 and float(sparse.margin) > 1e6


def test_report_without_row_order_says_which_method_has_it():
    model = MODELS["rotating_squares_5"]()
    report = mb.solvability(model, model.q0, method="sparse", groups={"edge": ("H0_0", "H1_0")})
    with pytest.raises(ValueError, match="method='qr'"):
        report.redundant_rows
    assert report.to_dict()["redundant_rows"] is None
    assert "method: sparse" in str(report)
    dense = mb.solvability(model, model.q0, groups={"edge": ("H0_0", "H1_0")})
    assert bool(report.group_solvable[0]) == bool(dense.group_solvable[0])


def _doubly_pinned_pendulums(k):
    """k pendulums, each pinned to the ground twice at the same point: n = 3 k, rows 4 k,
    rank 2 k, dof k, p = 2 k (the second pin of each is redundant)."""
    mech = mb.Mechanism()
    for i in range(k):
        body = mech.body(f"L{i}", mass=1.0, inertia=0.1, q=(0.5, -float(i), 0.0))
        for pin in ("A", "B"):
            mech.add(
                mb.Revolute(f"{pin}{i}", mech.ground, body, s_i=(0.0, -float(i)), s_j=(-0.5, 0.0))
            )
    return mech.build()


def test_a_full_block_grows_eagerly_and_is_refused_traced():
    """20 degrees of freedom with more rows than coordinates: more modes than the first block
    of 16 columns. Eagerly the block grows and the counts are those of the pivoted QR; inside
    jit the report refuses rather than under-count the modes."""
    model = _doubly_pinned_pendulums(20)
    assert sparse_solvability.block_size(model) == 16
    report = mb.solvability(model, model.q0, method="sparse")
    dense = mb.solvability(model, model.q0)
    assert (int(report.rank), int(report.dof), int(report.redundancy)) == (40, 20, 40)
    assert int(dense.rank) == 40
    np.testing.assert_array_equal(np.asarray(report.solvable), np.asarray(dense.solvable))
    with pytest.raises(Exception, match="independent motions"):
        jax.jit(lambda q: mb.solvability(model, q, method="sparse").rank)(model.q0)


def test_vmap_over_configurations_equals_the_loop():
    """The grid's closed-form configurations at two mode angles (C is defined at any q; the
    held plate need not match): the vmapped report equals the reports one by one."""
    model = MODELS["rotating_squares_5"]()
    qs = jnp.stack([auxetic.configuration(5, 4, th) for th in (0.2, 0.5)])
    batched = jax.vmap(lambda q: mb.solvability(model, q, method="sparse"))(qs)
    for k in range(2):
        one = mb.solvability(model, qs[k], method="sparse")
        assert int(batched.rank[k]) == int(one.rank)
        np.testing.assert_array_equal(np.asarray(batched.solvable[k]), np.asarray(one.solvable))
        np.testing.assert_allclose(
            np.asarray(batched.b_norm[k]), np.asarray(one.b_norm), rtol=1e-9, atol=1e-14
        )
