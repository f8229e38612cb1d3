"""Property tests on seeded random mechanisms (issue #7, item 6; generator: random_mechanisms.py).

Cases: open chains and closed loops of revolute / translational pairs, with and without knife
edges, driven or free, with and without an exactly redundant companion pair. Each property is
checked against an independent reference:

- solvability under a rigid motion of the whole mechanism, and under a renumbering of bodies
  and pairs: the reference is the report of the untouched mechanism (C becomes P C T with P a
  pair-blockwise orthogonal row transform and T orthogonal / a permutation, which leaves ranks,
  verdicts and |B_X|_F unchanged);
- the total generalized reaction -C^T lambda: identical for every reaction method, and equal to
  M qdd - F with qdd from the null-space accelerations (seed 001, eq. 15), a second formulation;
  solvable pairs' own reactions agree across methods too;
- energy T + V over a short free run under gravity: constant (ideal constraints do no work);
- assemble: a projection, so assembling an assembled q moves it by less than 1e-12.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.pairs import mechanical_energy
from random_mechanisms import (
    build,
    permute_bodies,
    random_spec,
    transform_coordinates,
    transformed,
)

import jaxmb as mb

CASES = {  # pair types drawn: R revolute, T translational, P parallel, K knife edge, D driver
    "open-knife-driven": dict(seed=1, knife_edges=1, driver=True),  # R T T K D; p = 0, dof 1
    "loop-redundant-driven": dict(seed=2, loop=True, redundant=True, driver=True),  # T R R R P D
    "open-redundant-knife-free": dict(seed=3, redundant=True, knife_edges=1),  # R R T P K
}
REDUNDANT = ("loop-redundant-driven", "open-redundant-knife-free")  # p = 1: lambda not unique
FREE = "open-redundant-knife-free"  # gravity only, no drivers; dof 2
ALG_TOL = 1e-9  # algebra on O(1) matrices (float64)
ASSEMBLE_TOL = 1e-12
ENERGY_RTOL = 1e-6  # integrated motion, rtol 1e-10
RIGID_MOTION = (0.7, (1.3, -0.4))  # theta, shift

_assemble = eqx.filter_jit(mb.assemble)
_phi = eqx.filter_jit(lambda model, q: model.phi(q))
_solvability = eqx.filter_jit(mb.solvability)
_velocity = eqx.filter_jit(mb.consistent_velocity)


@eqx.filter_jit
def _reactions_all(model, q, qd, rows):
    """Reactions by every method of mb.reactions, and the null-space accelerations."""
    methods = ("min_norm", "auto", mb.Eliminate(rows))
    return [mb.reactions(model, q, qd, method=m) for m in methods], mb.accelerations(model, q, qd)


@eqx.filter_jit
def _free_run(model, q0, qd0):
    ts = jnp.linspace(0.0, 0.5, 11)
    return mb.simulate(model, q0, qd0, 0.5, ts=ts, rtol=1e-10, atol=1e-12)


_built = {}


def _case(name):
    """(name, spec, model, assembled q0, solvability report), built once per case."""
    if name not in _built:
        spec = random_spec(**CASES[name])
        model, start = build(spec)
        q0 = _assemble(model, jnp.asarray(start))
        _built[name] = (name, spec, model, q0, _solvability(model, q0))
    return _built[name]


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    return _case(request.param)


def _random_velocity(name, model, q0):
    """A consistent velocity: a seeded random qd projected onto C qd + b = 0."""
    rng = np.random.default_rng(CASES[name]["seed"])
    return _velocity(model, q0, jnp.asarray(rng.standard_normal(model.n)))


def _same_report(a, b, names_a=None, names_b=None):
    """Ranks, verdicts and |B_X|_F of two reports agree (pairs matched by name)."""
    for field in ("rank", "rank_holonomic", "rank_nonholonomic", "redundancy", "dof"):
        assert int(getattr(a, field)) == int(getattr(b, field)), field
    sa = dict(zip(a.pair_names, np.asarray(a.solvable)))
    sb = dict(zip(b.pair_names, np.asarray(b.solvable)))
    assert sa == sb
    ba = dict(zip(a.pair_names, np.asarray(a.b_norm)))
    bb = dict(zip(b.pair_names, np.asarray(b.b_norm)))
    for nm in ba:
        np.testing.assert_allclose(ba[nm], bb[nm], atol=ALG_TOL, err_msg=nm)


def test_generated_mechanism_is_assembled_and_regular(case):
    """Sanity of the generator: q0 satisfies Phi = 0 to 1e-12, it stays within the 1e-2 start
    noise of the drawn configuration, and the configuration is regular (no rank warning)."""
    _, spec, model, q0, report = case
    np.testing.assert_allclose(_phi(model, q0), 0.0, atol=ASSEMBLE_TOL)
    true = np.concatenate(list(spec.poses.values()))
    assert np.max(np.abs(np.asarray(q0) - true)) < 0.1
    assert not bool(report.warning)


def test_assemble_is_idempotent(case):
    """Reference: assemble is the projection onto Phi = 0, so an assembled q is a fixed point:
    assembling it again moves it by less than 1e-12."""
    _, _, model, q0, _ = case
    np.testing.assert_allclose(_assemble(model, q0), q0, rtol=0, atol=ASSEMBLE_TOL)


def test_solvability_invariant_under_rigid_motion(case):
    """Reference: the report of the untouched mechanism. Rotating and translating everything
    (bodies, ground points and axes, gravity) maps q0 to a configuration of the moved model
    (its Phi is 0 to 1e-12) with the same ranks, verdicts and |B_X|_F (to 1e-9)."""
    _, spec, _, q0, report = case
    moved, _ = build(transformed(spec, *RIGID_MOTION))
    q_moved = jnp.asarray(transform_coordinates(q0, *RIGID_MOTION))
    np.testing.assert_allclose(_phi(moved, q_moved), 0.0, atol=ASSEMBLE_TOL)
    _same_report(report, _solvability(moved, q_moved))


def test_solvability_invariant_under_renumbering(case):
    """Reference: the report in the drawn order. Adding the bodies and the pairs in reversed /
    rotated orders permutes the columns and rows of C: same ranks, and per pair name the same
    verdict and |B_X|_F (to 1e-9)."""
    _, spec, _, q0, report = case
    bodies = list(reversed(range(len(spec.poses))))
    pairs = list(np.roll(np.arange(len(spec.pairs)), 2))
    renumbered, _ = build(spec, body_order=bodies, pair_order=pairs)
    q_renumbered = jnp.asarray(permute_bodies(q0, bodies))
    assert renumbered.pair_names != report.pair_names
    _same_report(report, _solvability(renumbered, q_renumbered))


@pytest.mark.parametrize("name", REDUNDANT)
def test_total_reaction_identical_across_methods(name):
    """In the redundant cases (p = 1: lambda not unique), the total generalized reaction
    -C^T lambda of "min_norm", "auto" and Eliminate(redundant_rows) agree to 1e-9 and equal
    M qdd - F with qdd from the null-space accelerations (reference, seed 001 eq. 15); the
    reactions of the pairs flagged solvable agree across methods too (those of unsolvable
    pairs may differ)."""
    _, _, model, q0, report = _case(name)
    assert int(report.redundancy) == 1
    qd = _random_velocity(name, model, q0)
    results, qdd = _reactions_all(model, q0, qd, report.redundant_rows)
    F = model.forces(q0, qd, 0.0)
    reference = np.asarray(model.mass_matrix() @ qdd - F)
    scale = 1.0 + np.max(np.abs(F))
    for rx in results:
        total = np.sum(np.asarray(rx.generalized_array), axis=0)
        np.testing.assert_allclose(
            total, reference, rtol=0, atol=ALG_TOL * scale, err_msg=rx.method
        )
    solvable = np.asarray(report.solvable)
    first = np.asarray(results[0].generalized_array)[solvable]
    for rx in results[1:]:
        np.testing.assert_allclose(
            np.asarray(rx.generalized_array)[solvable],
            first,
            rtol=0,
            atol=ALG_TOL * scale,
            err_msg=rx.method,
        )


def _energy(model, q, qd, g):
    """T + V = 1/2 qd^T M qd - sum_k m_k g . r_k per saved instant (`oracle.pairs`)."""
    return mechanical_energy(model.masses, model.inertias, q, qd, g)


def test_energy_conserved_without_dissipation():
    """Reference: conservation of T + V (gravity only, no drivers, no dampers; revolute,
    translational, parallel and knife-edge constraints do no work). Over 0.5 s from a random
    consistent velocity, max |E(t) - E(0)| stays below 1e-6 of the largest kinetic energy."""
    _, spec, model, q0, _ = _case(FREE)
    qd0 = _random_velocity(FREE, model, q0)
    traj = _free_run(model, q0, qd0)
    assert bool(traj.success)
    E = _energy(model, traj.q, traj.qd, spec.gravity)
    kinetic = 0.5 * np.sum(np.asarray(model.mass_diagonal()) * np.asarray(traj.qd) ** 2, axis=1)
    assert np.min(kinetic) > 1e-3  # the mechanism moves
    assert np.max(np.abs(E - E[0])) < ENERGY_RTOL * np.max(kinetic)
