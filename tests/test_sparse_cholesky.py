"""Tests of sparse_cholesky against dense numpy / scipy references (float64)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

jax.config.update("jax_enable_x64", True)

import jaxmb  # noqa: E402,F401  (float64)
from jaxmb._linalg import sparse_cholesky as sc  # noqa: E402

ORDERINGS = ("natural", "min_degree", "nested_dissection", "auto")


# --------------------------------------------------------------------------
# Pattern generators: (num_blocks, edges, grounded bodies)
# --------------------------------------------------------------------------


def chain(num_blocks: int):
    """1-D strip with cycles (N-four-bar-like): k joined to k+1 and k+2; the
    two ends and the middle body are pinned to the ground."""
    k = np.arange(num_blocks)
    edges = np.concatenate([np.stack([k[:-1], k[1:]], 1), np.stack([k[:-2], k[2:]], 1)])
    return num_blocks, edges.reshape(-1, 2), np.unique([0, num_blocks // 2, num_blocks - 1])


def grid(n: int):
    """n x n plates (rotating squares), each joined to its 4 neighbours; the
    first row is pinned to the ground."""
    idx = np.arange(n * n).reshape(n, n)
    edges = np.concatenate(
        [
            np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1),
        ]
    )
    return n * n, edges.reshape(-1, 2), idx[0]


def random_graph(num_blocks: int, extra: int, seed: int, connected: bool = True):
    """Random spanning tree plus ``extra`` random edges; if not connected, the
    tree edges into every third node are dropped (components, isolated
    nodes); a few edges are duplicated and reversed."""
    rng = np.random.default_rng(seed)
    child = np.arange(1, num_blocks)
    tree = np.stack([child, rng.integers(0, child)], 1)
    if not connected:
        tree = tree[child % 3 != 0]
    e = np.concatenate([tree, rng.integers(0, num_blocks, (extra, 2))])
    e = e[e[:, 0] != e[:, 1]]
    if not connected:
        e = e[(e % 3 != 0).all(1)]  # nodes 0, 3, 6, ... isolated
    dup = e[rng.integers(0, len(e), max(1, len(e) // 5))][:, ::-1]
    return num_blocks, np.concatenate([e, dup]), np.array([1 % num_blocks])


FAMILIES = {
    "single": (1, np.zeros((0, 2), np.int64), np.array([0])),
    "chain": chain(23),
    "grid": grid(6),
    "random": random_graph(40, 25, seed=1),
    "random_disconnected": random_graph(40, 30, seed=2, connected=False),
}


# --------------------------------------------------------------------------
# Values: M + B^T W B
# --------------------------------------------------------------------------


def pin_jacobian(positions, point, a, b):
    """2x6 Jacobian of a pin joint at ``point`` between bodies a and b (rows:
    x, y of the joint; columns: x, y, phi of a then of b).  It annihilates
    rigid motions of the pair, so C^T W C has a null space of dimension >= 3."""
    jac = np.zeros((2, 6))
    for k, (body, sign) in enumerate(((a, 1.0), (b, -1.0))):
        r = point - positions[body]
        jac[:, 3 * k : 3 * k + 3] = sign * np.array([[1.0, 0.0, -r[1]], [0.0, 1.0, r[0]]])
    return jac


def make_problem(family, kind: str, seed: int = 0, dense: bool = True):
    """Blocks of ``A = M + C^T W C`` for a pattern family (name or
    ``(num_blocks, edges, grounded)``).

    kind "generic": random SPD mass blocks, full-rank random 3x6 constraint
    blocks, grounded bodies get a random 3x3 block too.  "redundant": unit
    masses, pin joints (no ground) with W = 1e6; duplicated edges repeat the
    same joint: C^T W C is rank-deficient (rigid motions, repeated rows), only
    M keeps A SPD.  "badly_scaled": as "redundant" with masses 1e-3..1e3 and
    inertias 1e-6.
    Returns dict(diag, edge (E,3,3) = A[edges[e,0], edges[e,1]], cliques
    (k,6,6) = J^T W J per joint, bodies (k,2) with -1 for ground, mass, and
    the dense A (numpy) if ``dense``).
    """
    nb, edges, grounded = FAMILIES[family] if isinstance(family, str) else family
    rng = np.random.default_rng(seed)
    positions = rng.normal(size=(nb, 2)) * 3
    if kind == "generic":
        g = rng.normal(size=(nb, 3, 3))
        mass = g @ g.transpose(0, 2, 1) + np.eye(3)
    else:
        m = np.logspace(-3, 3, nb) if kind == "badly_scaled" else np.ones(nb)
        inertia = np.full(nb, 1e-6) if kind == "badly_scaled" else np.ones(nb)
        mass = np.zeros((nb, 3, 3))
        mass[:, 0, 0] = mass[:, 1, 1] = rng.permutation(m)
        mass[:, 2, 2] = inertia
    pairs = [(a, b) for a, b in edges] + ([(g, -1) for g in grounded] if kind == "generic" else [])
    cliques, bodies, points = [], [], {}
    for a, b in pairs:
        if kind == "generic":
            jac = rng.normal(size=(3, 6))
            w = rng.uniform(0.5, 2.0, size=3)
        else:
            point = points.setdefault(
                (min(a, b), max(a, b)), 0.5 * (positions[a] + positions[b]) + rng.normal(size=2)
            )
            jac = pin_jacobian(positions, point, a, b)
            w = 1e6 * rng.uniform(0.5, 2.0, size=2)
        cliques.append(jac.T @ (w[:, None] * jac))
        bodies.append((a, b))
    cliques, bodies = (
        np.array(cliques).reshape(-1, 6, 6),
        np.array(bodies, dtype=np.int64).reshape(-1, 2),
    )
    diag = mass.copy()
    np.add.at(diag, bodies[:, 0], cliques[:, :3, :3])
    pair = bodies[:, 1] >= 0
    np.add.at(diag, bodies[pair, 1], cliques[pair, 3:, 3:])
    edge = cliques[: len(edges), :3, 3:]
    prob = dict(diag=diag, edge=edge, cliques=cliques, bodies=bodies, mass=mass)
    if dense:
        prob["dense"] = dense_matrix(nb, edges, diag, edge)
    return prob


def dense_matrix(nb, edges, diag, edge):
    """Dense A from ``A_ii = diag[i]``, ``A_ab += edge[e]``, ``A_ba += edge[e]^T``."""
    a = np.zeros((nb, 3, nb, 3))
    a[np.arange(nb), :, np.arange(nb), :] = diag
    for (i, j), blk in zip(edges, edge):
        a[i, :, j, :] += blk
        a[j, :, i, :] += blk.T
    return a.reshape(3 * nb, 3 * nb)


KINDS = ("generic", "redundant", "badly_scaled")


@functools.lru_cache(maxsize=None)
def symbolic(family: str, ordering: str) -> sc.SymbolicCholesky:
    nb, edges, _ = FAMILIES[family]
    return sc.analyse(nb, edges, ordering)


@functools.lru_cache(maxsize=None)
def problems(family: str):
    """All value kinds of a family, stacked (for vmap)."""
    probs = [make_problem(family, kind) for kind in KINDS]
    return {k: np.stack([p[k] for p in probs]) for k in ("diag", "edge", "dense")}


@functools.partial(jax.jit, static_argnums=0)
def pipeline(sym, diag, edge, b):
    """assemble -> cholesky -> solve -> matvec, one value set."""
    values = sc.assemble(sym, diag, edge)
    factor = sc.cholesky(sym, values)
    return dict(
        dense=sc.to_dense(sym, values),
        ok=sc.factor_ok(factor),
        x=sc.solve(sym, factor, b),
        ax=sc.matvec(sym, values, b),
    )


def scaled_cond(a: np.ndarray) -> float:
    d = 1 / np.sqrt(np.diag(a))
    return np.linalg.cond(d[:, None] * a * d[None, :])


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("ordering", ORDERINGS)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_solve_matches_dense(family, ordering):
    """vmapped pipeline over the value kinds vs numpy / scipy dense.

    Both solvers are backward stable, so they agree to about
    cond(D A D) * eps with D = diag(A)^(-1/2) (Cholesky is invariant to that
    scaling, van der Sluis); the tolerance is max(1e-12, 20 cond eps).  The
    scaled residual is checked against 1e-13 independently of conditioning.
    """
    sym = symbolic(family, ordering)
    p = problems(family)
    nb = FAMILIES[family][0]
    b = np.random.default_rng(3).normal(size=3 * nb)
    out = jax.vmap(functools.partial(pipeline, sym), (0, 0, None))(p["diag"], p["edge"], b)
    for k, kind in enumerate(KINDS):
        a = p["dense"][k]
        np.testing.assert_allclose(out["dense"][k], a, rtol=0, atol=1e-12 * np.abs(a).max())
        np.testing.assert_allclose(
            out["ax"][k], a @ b, rtol=0, atol=1e-12 * np.abs(a).max() * np.abs(b).max()
        )
        ref = scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b)
        x = np.asarray(out["x"][k])
        tol = max(1e-12, 20 * scaled_cond(a) * np.finfo(float).eps)
        err = np.linalg.norm(x - ref) / np.linalg.norm(ref)
        assert err <= tol, (kind, err, tol)
        d = 1 / np.sqrt(np.diag(a))
        res = np.linalg.norm(d * (a @ x - b)) / (
            np.linalg.norm(d[:, None] * a * d) * np.linalg.norm(x / d)
        )
        assert res <= 1e-13, (kind, res)
        assert bool(out["ok"][k])


def chain_loss(diag, edge, b):
    sym = symbolic("chain", "auto")
    return jnp.sum(jnp.sin(sc.spd_solve(sym, sc.assemble(sym, diag, edge), b)))


@functools.lru_cache(maxsize=None)
def batched_value_and_grad():
    """Compiled jit(vmap(value_and_grad(chain_loss))) and its arguments."""
    p = problems("chain")
    bs = np.random.default_rng(4).normal(size=(3, 3 * FAMILIES["chain"][0]))
    args = (p["diag"], p["edge"], bs)
    return jax.jit(jax.vmap(jax.value_and_grad(chain_loss, argnums=(0, 1, 2)))).lower(
        *args
    ).compile(), args


def test_vmap_equals_loop_and_jit_equals_eager():
    """vmap(value_and_grad) == loop of jitted calls; jit == eager. The members are the
    generic, redundant and badly scaled matrices (cond up to 1e14): the batched and the single
    program may sum in another order (XLA fuses differently), so they agree to round-off
    amplified by the member's condition number, 100 eps cond(A) relative, floored at 1e-12."""
    compiled, args = batched_value_and_grad()
    batched = compiled(*args)
    single = jax.jit(jax.value_and_grad(chain_loss, argnums=(0, 1, 2)))
    dense = problems("chain")["dense"]
    for k in range(3):
        looped = single(*(a[k] for a in args))
        tol = max(1e-12, 100 * np.finfo(float).eps * np.linalg.cond(dense[k]))
        for got, ref in zip(jax.tree.leaves(batched), jax.tree.leaves(looped)):
            np.testing.assert_allclose(got[k], ref, rtol=tol, atol=tol * np.abs(ref).max())
    eager = chain_loss(*(a[0] for a in args))
    np.testing.assert_allclose(eager, batched[0][0], rtol=1e-12)


def test_assemble_cliques_with_ground_and_three_body_cliques():
    """Clique form with ground (-1) and 3-body cliques against a dense numpy
    assembly (the edge form, with duplicated and reversed edges, is checked in
    test_solve_matches_dense)."""
    family = "random_disconnected"
    nb, edges, _ = FAMILIES[family]
    prob = make_problem(family, "generic")
    rng = np.random.default_rng(5)
    tri = np.array([[2, 4, -1], [4, 5, 7]])
    tri_blocks = rng.normal(size=(2, 9, 9))
    tri_blocks = tri_blocks @ tri_blocks.transpose(0, 2, 1)
    sym = sc.analyse(nb, np.concatenate([edges, sc.clique_edges(tri)]))

    @jax.jit
    def dense_of(mass, cliques, tri_blocks):
        return sc.to_dense(
            sym,
            sc.assemble(sym, mass)
            + sc.assemble_cliques(sym, cliques, prob["bodies"])
            + sc.assemble_cliques(sym, tri_blocks, tri),
        )

    dense = prob["dense"].copy()
    for blk, bodies in zip(tri_blocks, tri):
        idx = np.concatenate([np.arange(3 * u, 3 * u + 3) for u in bodies if u >= 0])
        keep = np.concatenate([np.arange(3 * k, 3 * k + 3) for k, u in enumerate(bodies) if u >= 0])
        dense[np.ix_(idx, idx)] += blk[np.ix_(keep, keep)]
    np.testing.assert_allclose(
        dense_of(prob["mass"], prob["cliques"], tri_blocks),
        dense,
        rtol=0,
        atol=1e-12 * np.abs(dense).max(),
    )
    with pytest.raises(ValueError):  # nodes 0, 3, 6 are isolated: not in the pattern
        sc.assemble_cliques(symbolic(family, "auto"), tri_blocks[:1], np.array([[0, 3, 6]]))


def test_gradients_match_finite_differences_and_dense():
    """d/d(params) of a scalar of spd_solve (params: mass and constraint
    scalings, b) vs central differences (rel 1e-6) and vs the gradient of a
    dense jnp.linalg.solve (rel 1e-10); also grad w.r.t. values and a jvp."""
    family = "grid"
    nb = FAMILIES[family][0]
    sym = symbolic(family, "auto")
    prob = make_problem(family, "generic")
    rng = np.random.default_rng(6)
    weights = rng.normal(size=3 * nb)

    def build(scale):  # masses and constraint stiffnesses scaled: A stays SPD
        return sc.assemble(sym, prob["mass"] * scale[:nb, None, None]) + sc.assemble_cliques(
            sym, prob["cliques"] * scale[nb:, None, None], prob["bodies"]
        )

    def loss(scale, b, solver):
        return jnp.dot(weights, solver(build(scale), b) ** 2)

    def sparse(values, b):
        return sc.spd_solve(sym, values, b)

    def dense(values, b):
        return jnp.linalg.solve(sc.to_dense(sym, values), b)

    scale = jnp.asarray(rng.uniform(0.5, 1.5, nb + len(prob["bodies"])))
    b = jnp.asarray(rng.normal(size=3 * nb))
    value_and_grad = jax.jit(
        jax.value_and_grad(functools.partial(loss, solver=sparse), argnums=(0, 1))
    )
    _, (g_scale, g_b) = value_and_grad(scale, b)
    d_scale, d_b = jax.jit(jax.grad(functools.partial(loss, solver=dense), argnums=(0, 1)))(
        scale, b
    )
    np.testing.assert_allclose(g_scale, d_scale, rtol=1e-10, atol=1e-10 * np.abs(d_scale).max())
    np.testing.assert_allclose(g_b, d_b, rtol=1e-10, atol=1e-10 * np.abs(d_b).max())

    ds, db, h = rng.normal(size=scale.shape), rng.normal(size=b.shape), 1e-5
    fd = (
        value_and_grad(scale + h * ds, b + h * db)[0]
        - value_and_grad(scale - h * ds, b - h * db)[0]
    ) / (2 * h)
    exact = jnp.dot(g_scale, ds) + jnp.dot(g_b, db)
    assert abs(fd - exact) <= 1e-6 * abs(exact)

    def grad_and_jvp(solver, values, dv):
        g = jax.grad(lambda v: jnp.dot(weights, solver(v, b)))(values)
        return g, jax.jvp(lambda v: solver(v, b), (values,), (dv,))[1]

    values = build(scale)
    dv = jnp.asarray(rng.normal(size=values.shape))
    for got, ref in zip(
        *(
            jax.jit(functools.partial(grad_and_jvp, solver))(values, dv)
            for solver in (sparse, dense)
        )
    ):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


def test_factorization_module_many_rhs():
    """Factor once (eqx.Module through jit), solve (3 nb, k) right-hand sides, differentiably."""
    family = "chain"
    nb = FAMILIES[family][0]
    sym = symbolic(family, "auto")
    prob = make_problem(family, "generic")
    values = sc.assemble(sym, prob["diag"], prob["edge"])
    fac = jax.jit(sc.factorize, static_argnums=0)(sym, values)
    assert bool(fac.ok)
    rhs = np.random.default_rng(7).normal(size=(3 * nb, 4))

    @jax.jit
    def solve_and_grad(f, r):
        return f.solve(r), jax.grad(lambda r: f.solve(r).sum())(r)

    x, g = solve_and_grad(fac, rhs)
    np.testing.assert_allclose(x, np.linalg.solve(prob["dense"], rhs), rtol=1e-11, atol=1e-12)
    ones = np.linalg.solve(prob["dense"], np.ones(3 * nb))
    np.testing.assert_allclose(g, np.broadcast_to(ones[:, None], g.shape), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("how", ["negative_diagonal", "indefinite", "nan_input"])
def test_non_spd_is_signalled(how):
    family = "chain"
    nb = FAMILIES[family][0]
    sym = symbolic(family, "auto")
    p = problems(family)
    diag, edge = p["diag"][0].copy(), p["edge"][0].copy()
    if how == "negative_diagonal":
        diag[nb // 3, 1, 1] = -1.0
    elif how == "indefinite":  # positive diagonal, but a dominant off-diagonal block
        edge[4] = 1e3 * np.eye(3)
    else:
        diag[2, 0, 0] = np.nan
    out = pipeline(sym, diag, edge, np.ones(3 * nb))
    assert not bool(out["ok"])
    assert np.isnan(out["x"]).any()
    assert bool(pipeline(sym, p["diag"][0], p["edge"][0], np.ones(3 * nb))["ok"])


def test_no_lapack_in_compiled_program():
    """No LAPACK / cuSOLVER custom call in the vmapped value-and-grad program
    (on CPU there is no custom call at all)."""
    import re

    text = batched_value_and_grad()[0].as_text()
    targets = set(re.findall(r'custom_call_target="([^"]+)"', text))
    assert not any(
        k in t.lower() for t in targets for k in ("lapack", "cusolver", "potrf", "getrf", "trsm")
    ), targets
    if jax.default_backend() == "cpu":
        assert not targets and "custom-call" not in text


def test_symbolic_is_static_and_hashable_by_content():
    nb, edges, _ = FAMILIES["grid"]
    s1, s2 = (
        sc.analyse(nb, edges),
        sc.analyse(nb, edges[::-1, ::-1].copy()),
    )  # same pattern, other listing
    assert s1.num_l_blocks == s2.num_l_blocks
    s3 = sc.analyse(nb, edges)
    assert s1 == s3 and hash(s1) == hash(s3) and s1 is not s3
    traces = []

    @functools.partial(jax.jit, static_argnums=0)
    def f(sym, v):
        traces.append(1)
        return sc.cholesky(sym, v)

    v = sc.assemble(s1, problems("grid")["diag"][0], problems("grid")["edge"][0])
    f(s1, v)
    f(s3, v)
    assert len(traces) == 1


def test_analyse_orderings_and_inputs():
    for family in FAMILIES:
        nb, edges, _ = FAMILIES[family]
        for ordering in ORDERINGS:
            sym = symbolic(family, ordering)
            assert np.array_equal(np.sort(sym.perm), np.arange(nb))
            assert np.all(sym.rows >= sym.cols)
    with pytest.raises(ValueError):
        sc.analyse(3, [[0, 0]])
    with pytest.raises(ValueError):
        sc.analyse(3, [[0, 3]])
    with pytest.raises(ValueError):
        sc.analyse(3, [[0, 1]], ordering="amd")


@pytest.mark.parametrize("ordering", ["min_degree", "nested_dissection"])
def test_orderings_of_a_few_thousand_blocks_are_permutations(ordering):
    """Both orderings handle 2500 (grid) and 3001 (chain) blocks and return a permutation
    (their speed is measured in benchmarks/bench_sparse_cholesky.py, not timed here)."""
    for nb, edges, _ in (grid(50), chain(3000)):
        perm = sc._ordering(sc._adjacency(nb, edges), ordering)
        assert np.array_equal(np.sort(perm), np.arange(nb))
