"""Independent oracle for the jaxmb element catalogue.

jaxmb defines each constraint pair by its residual only and derives C, b and gamma by automatic
differentiation. This file checks those derived quantities against formulas written out by hand in
plain numpy (never by calling jax on the same residuals):

- C: the Jacobian rows of seed 001 (Appendix, eq. 40, 42, 43; eq. 30 for the knife edge) and of
  seed 003 (revolute, rev-rev distance, parallel vectors, pin-in-slot, relative angle driver, gear,
  gear on a rotating link), rederived in jaxmb's convention A(phi) = [[c, -s], [s, c]],
  Omega = [[0, -1], [1, 0]], so dA/dphi = Omega A;
- gamma (C qdd = gamma): closed forms (seed 001 Appendix for revolute, translational and the
  translational driver, seed 001 after eq. 30 for the knife edge, the others derived below), and a
  central finite difference along a motion q(tau) = q + qd tau + qdd tau^2 / 2, which needs no
  formula at all;
- drive functions against their documented formulas and scipy's natural cubic spline;
- generalized forces of the force elements against virtual-work formulas;
- the mass matrix diag(m, m, J).

The hand formulas live in the shared numpy oracle, `tests/oracle/pairs.py` (one function per
element type, with its derivation), also used by the numpy reference models. The element types
are read from the library itself (every concrete `AbstractElement` subclass in jaxmb.elements),
so a new element type fails `test_every_element_type_has_a_hand_oracle` until it has a case here.
"""

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle import pairs as hand
from oracle.planar import GROUND as G
from scipy.interpolate import CubicSpline

import jaxmb as mb
from jaxmb import drive
from jaxmb.elements import AbstractElement, AbstractForceElement, AbstractPair

NUM_BODIES = 3
N = 3 * NUM_BODIES
NUM_CONFIGS = 5
MODEL_SEEDS = (11, 12)  # two independent draws of all local vectors and parameters
FD_STEP = 1e-5
ALGEBRA_TOL = 1e-12
# Central difference of g(tau) = C(q(tau), t + tau) qd(tau) + b(t + tau): the truncation error is
# h^2/6 |g'''| ~ 1e-10 |g'''| and the round-off error is ~ eps |g| / h ~ 2e-11 |g| for h = 1e-5.
# With all quantities O(1-10) the achievable accuracy is ~1e-9 relative; 1e-7 leaves two orders
# of margin while still catching any wrong term (those are O(1)).
FD_RTOL = 1e-7


# ------------------------------------------------------------------------------------------------
# the element types: read from the library, so none can be left out
# ------------------------------------------------------------------------------------------------
def element_registry():
    """Every concrete element class of jaxmb by name: the subclasses of AbstractElement, through
    the abstract bases, after importing every module of jaxmb.elements (an element whose module
    is not yet exported is found too)."""
    for info in pkgutil.iter_modules(mb.elements.__path__):
        importlib.import_module(f"jaxmb.elements.{info.name}")
    found, todo = {}, [AbstractElement]
    while todo:
        for cls in todo.pop().__subclasses__():
            todo.append(cls)
            planar = "spatial" not in cls.__module__  # spatial: tests/test_spatial_elements.py
            if cls.__module__.startswith("jaxmb.") and not cls.__name__.startswith("Abstract"):
                if planar:
                    found[cls.__name__] = cls
    return found


REGISTRY = element_registry()
KINDS = sorted(k for k, cls in REGISTRY.items() if issubclass(cls, AbstractPair))
HOLONOMIC_KINDS = [k for k in KINDS if REGISTRY[k].holonomic]
FORCE_KINDS = sorted(k for k, cls in REGISTRY.items() if issubclass(cls, AbstractForceElement))


def vec(rng, scale=1.0):
    return rng.uniform(-scale, scale, 2)


# ------------------------------------------------------------------------------------------------
# drive functions with hand-written value / first / second time derivative
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Drv:
    module: object
    f: Callable
    df: Callable
    ddf: Callable

    def __call__(self, t):
        """(value, rate, acceleration): the form `oracle.pairs` takes drive functions in."""
        return self.f(t), self.df(t), self.ddf(t)


def harmonic(rng):
    a, w, ph, off = (
        rng.uniform(0.2, 1.0),
        rng.uniform(0.5, 3.0),
        rng.uniform(-3, 3),
        rng.uniform(-1, 1),
    )
    return Drv(
        drive.Harmonic(amplitude=a, omega=w, phase=ph, offset=off),
        lambda t: off + a * np.cos(w * t + ph),
        lambda t: -a * w * np.sin(w * t + ph),
        lambda t: -a * w**2 * np.cos(w * t + ph),
    )


def polynomial(rng):
    c = rng.uniform(-1, 1, 4)
    p = np.polynomial.Polynomial(c)  # numpy's Polynomial is also lowest order first
    return Drv(drive.Polynomial(c), p, p.deriv(1), p.deriv(2))


def linear(rng):
    k, c = rng.uniform(-1, 1, 2)
    return Drv(drive.Linear(slope=k, offset=c), lambda t: c + k * t, lambda t: k, lambda t: 0.0)


def constant(rng):
    c = rng.uniform(-1, 1)
    return Drv(drive.Constant(c), lambda t: c, lambda t: 0.0, lambda t: 0.0)


def spline(rng):
    knots = np.concatenate([[-0.5], np.sort(rng.uniform(0.0, 3.0, 4)), [3.5]])
    vals = rng.uniform(-1, 1, knots.size)
    cs = CubicSpline(knots, vals, bc_type="natural")
    return Drv(drive.Spline(knots, vals), cs, cs.derivative(1), cs.derivative(2))


# ------------------------------------------------------------------------------------------------
# constraint cases: library element + hand-derived Phi, C, gamma, b
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    """One element in the test mechanism: its library constructor and its hand rows."""

    kind: str
    name: str
    element: Callable  # handle(index) -> element
    rows: Callable  # (q, qd, t) -> (Phi, C, b, gamma) from oracle.pairs

    def phi(self, q, t):
        return self.rows(q, np.zeros_like(q), t)[0]

    def C(self, q, t):
        return self.rows(q, np.zeros_like(q), t)[1]

    def b(self, t):  # b = -f'(t) for drivers, 0 otherwise: independent of q
        return self.rows(np.zeros(N), np.zeros(N), t)[2]

    def gamma(self, q, qd, t):
        return self.rows(q, qd, t)[3]

    @property
    def holonomic(self):
        return REGISTRY[self.kind].holonomic


def revolute_case(rng, name, i, j):
    si, sj = vec(rng), vec(rng)
    return Case(
        "Revolute",
        name,
        lambda H: mb.Revolute(name, H(i), H(j), s_i=si, s_j=sj),
        lambda q, qd, t: hand.revolute(q, qd, i, si, j, sj),
    )


def weld_case(rng, name, i, j):
    si, sj, angle = vec(rng), vec(rng), rng.uniform(-1, 1)
    return Case(
        "Weld",
        name,
        lambda H: mb.Weld(name, H(i), H(j), s_i=si, s_j=sj, angle=angle),
        lambda q, qd, t: hand.weld(q, qd, i, si, j, sj, angle),
    )


def translational_case(rng, name, i, j):
    si, sj, v, angle = vec(rng), vec(rng), vec(rng, 2.0), rng.uniform(-1, 1)
    return Case(
        "Translational",
        name,
        lambda H: mb.Translational(name, H(i), H(j), s_i=si, s_j=sj, v=v, angle=angle),
        lambda q, qd, t: hand.translational(q, qd, i, si, j, sj, v, angle),
    )


def translational_driver_case(rng, name, i, j, make_drive):
    si, sj, u = vec(rng), vec(rng), vec(rng, 2.0)
    dr = make_drive(rng)
    return Case(
        "TranslationalDriver",
        name,
        lambda H: mb.TranslationalDriver(name, H(i), H(j), s_i=si, s_j=sj, u=u, d=dr.module),
        lambda q, qd, t: hand.translational_driver(q, qd, t, i, si, j, sj, u, dr),
    )


def distance_case(rng, name, i, j):
    si, sj, L = vec(rng), vec(rng), rng.uniform(0.5, 2.0)
    return Case(
        "Distance",
        name,
        lambda H: mb.Distance(name, H(i), H(j), s_i=si, s_j=sj, length=L),
        lambda q, qd, t: hand.distance(q, qd, i, si, j, sj, L),
    )


def parallel_case(rng, name, i, j):
    ai, aj = vec(rng, 2.0), vec(rng, 2.0)
    return Case(
        "Parallel",
        name,
        lambda H: mb.Parallel(name, H(i), H(j), a_i=ai, a_j=aj),
        lambda q, qd, t: hand.parallel(q, qd, i, ai, j, aj),
    )


def pin_in_slot_case(rng, name, i, j):
    si, sj, ai = vec(rng), vec(rng), vec(rng, 2.0)
    return Case(
        "PinInSlot",
        name,
        lambda H: mb.PinInSlot(name, H(i), H(j), s_i=si, s_j=sj, a_i=ai),
        lambda q, qd, t: hand.pin_in_slot(q, qd, i, si, j, sj, ai),
    )


def gear_case(rng, name, i, j):
    K, off = rng.uniform(-3, 3), rng.uniform(-1, 1)
    return Case(
        "Gear",
        name,
        lambda H: mb.Gear(name, H(i), H(j), ratio=K, offset=off),
        lambda q, qd, t: hand.gear(q, qd, i, j, K, off),
    )


def gear_on_link_case(rng, name, i, j, k):
    K, off = rng.uniform(-3, 3), rng.uniform(-1, 1)
    return Case(
        "GearOnLink",
        name,
        lambda H: mb.GearOnLink(name, H(i), H(j), H(k), ratio=K, offset=off),
        lambda q, qd, t: hand.gear_on_link(q, qd, i, j, k, K, off),
    )


def relative_angle_driver_case(rng, name, i, j, make_drive):
    off = rng.uniform(-1, 1)
    dr = make_drive(rng)
    return Case(
        "RelativeAngleDriver",
        name,
        lambda H: mb.RelativeAngleDriver(name, H(i), H(j), f=dr.module, offset=off),
        lambda q, qd, t: hand.relative_angle_driver(q, qd, t, i, j, dr, off),
    )


def absolute_driver_case(rng, name, k, coord, make_drive):
    dr = make_drive(rng)
    return Case(
        "AbsoluteDriver",
        name,
        lambda H: mb.AbsoluteDriver(name, H(k), coord, dr.module),
        lambda q, qd, t: hand.absolute_driver(q, qd, t, k, coord, dr),
    )


def knife_edge_case(rng, name, k):
    s, n = vec(rng), vec(rng, 3.0)
    return Case(
        "KnifeEdge",
        name,
        lambda H: mb.KnifeEdge(name, H(k), s=s, n=n),
        lambda q, qd, t: hand.knife_edge(q, qd, k, s, n),
    )


def make_cases(rng):
    """All element types, each between two bodies and with ground on one side (where allowed).
    Pfaffian pairs last, so that Phi's rows are the first m rows of C."""
    return [
        revolute_case(rng, "rev01", 0, 1),
        revolute_case(rng, "revG2", G, 2),
        revolute_case(rng, "rev1G", 1, G),
        weld_case(rng, "weld02", 0, 2),
        weld_case(rng, "weldG1", G, 1),
        translational_case(rng, "tra10", 1, 0),
        translational_case(rng, "tra2G", 2, G),
        translational_case(rng, "traG1", G, 1),
        distance_case(rng, "dist01", 0, 1),
        distance_case(rng, "distG2", G, 2),
        parallel_case(rng, "par02", 0, 2),
        parallel_case(rng, "par1G", 1, G),
        pin_in_slot_case(rng, "pin01", 0, 1),
        pin_in_slot_case(rng, "pinG2", G, 2),
        pin_in_slot_case(rng, "pin2G", 2, G),
        gear_case(rng, "gear01", 0, 1),
        gear_case(rng, "gearG2", G, 2),
        gear_on_link_case(rng, "gol012", 0, 1, 2),
        gear_on_link_case(rng, "gol20G", 2, 0, G),
        gear_on_link_case(rng, "golG10", G, 1, 0),
        translational_driver_case(rng, "td01", 0, 1, harmonic),
        translational_driver_case(rng, "tdG2", G, 2, polynomial),
        translational_driver_case(rng, "td1G", 1, G, linear),
        relative_angle_driver_case(rng, "rad02", 0, 2, polynomial),
        relative_angle_driver_case(rng, "radG1", G, 1, harmonic),
        relative_angle_driver_case(rng, "rad2G", 2, G, spline),
        absolute_driver_case(rng, "abs0x", 0, 0, harmonic),
        absolute_driver_case(rng, "abs1y", 1, 1, spline),
        absolute_driver_case(rng, "abs2p", 2, 2, polynomial),
        absolute_driver_case(rng, "abs0p", 0, 2, constant),
        absolute_driver_case(rng, "abs1x", 1, 0, linear),
        knife_edge_case(rng, "ke0", 0),
        knife_edge_case(rng, "ke2", 2),
    ]


def build(cases, rng):
    m = mb.Mechanism()
    bodies = [
        m.body(
            f"b{k}",
            mass=rng.uniform(0.5, 3.0),
            inertia=rng.uniform(0.01, 0.5),
            q=rng.uniform(-1, 1, 3),
        )
        for k in range(NUM_BODIES)
    ]

    def handle(k):
        return m.ground if k is None else bodies[k]

    for case in cases:
        m.add(case.element(handle))
    return m.build()


def random_state(rng):
    q = np.concatenate(
        [[*rng.uniform(-1.5, 1.5, 2), rng.uniform(-np.pi, np.pi)] for _ in range(NUM_BODIES)]
    )
    qd, qdd = rng.uniform(-1.5, 1.5, N), rng.uniform(-1.5, 1.5, N)
    t = rng.uniform(0.2, 2.8)
    return q, qd, qdd, t


def hand_b(cases, t):
    return np.concatenate([c.b(t) for c in cases])


def fd_gamma(C_fn, b_fn, q, qd, qdd, t, h=FD_STEP):
    """gamma = C qdd - d/dtau [C(q(tau), t + tau) qd(tau) + b(t + tau)] at tau = 0, along
    q(tau) = q + qd tau + qdd tau^2 / 2 (so qd(tau) = qd + qdd tau): differentiating
    g = C qd + b along any motion gives dg/dtau = C qdd + (dC/dq qd + dC/dt) qd + db/dt = C qdd - gamma.
    Central difference with step h."""

    def g(tau):
        qt = q + qd * tau + 0.5 * qdd * tau**2
        return np.asarray(C_fn(qt, t + tau)) @ (qd + qdd * tau) + b_fn(t + tau)

    return np.asarray(C_fn(q, t)) @ qdd - (g(h) - g(-h)) / (2 * h)


@dataclasses.dataclass
class Sample:
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    t: float
    C: np.ndarray
    gamma: np.ndarray
    phi: np.ndarray
    b: np.ndarray
    gamma_fd: np.ndarray  # finite difference of the library's own C (plus the hand b)


@dataclasses.dataclass
class World:
    model: object
    cases: list
    samples: list


def _jitted(fn):
    """fn(model, *arrays) compiled once for all draws of the case table (same structure, the
    parameters are array leaves); the numeric arguments go in as arrays, never as static
    Python floats. (Eager evaluation of the autodiffed C would run op by op.)"""
    compiled = eqx.filter_jit(fn)
    return lambda m, *args: compiled(m, *(jnp.asarray(a) for a in args))


_C_jit = _jitted(lambda m, q, t: m.C(q, t))
_gamma_jit = _jitted(lambda m, q, qd, t: m.gamma(q, qd, t))
_phi_jit = _jitted(lambda m, q, t: m.phi(q, t))
_b_jit = _jitted(lambda m, q, t: m.b(q, t))
_g_jit = _jitted(lambda m, q, qd, t: m.velocity_residual(q, qd, t))


@pytest.fixture(scope="module")
def worlds():
    """Per model seed: one mechanism holding every case, evaluated at NUM_CONFIGS random states
    (states need not satisfy the constraints: C, gamma, b are defined everywhere)."""
    out = []
    for seed in MODEL_SEEDS:
        rng = np.random.default_rng(seed)
        cases = make_cases(rng)
        model = build(cases, rng)

        # the model is an argument: both draws share one structure, so one compilation
        C_jit = functools.partial(_C_jit, model)
        gamma_jit = functools.partial(_gamma_jit, model)
        phi_jit = functools.partial(_phi_jit, model)
        b_jit = functools.partial(_b_jit, model)

        def C_lib(q, t, C_jit=C_jit):
            return np.asarray(C_jit(jnp.asarray(q), t))

        samples = []
        for _ in range(NUM_CONFIGS):
            q, qd, qdd, t = random_state(rng)
            qj, qdj = jnp.asarray(q), jnp.asarray(qd)
            samples.append(
                Sample(
                    q,
                    qd,
                    qdd,
                    t,
                    C=C_lib(q, t),
                    gamma=np.asarray(gamma_jit(qj, qdj, t)),
                    phi=np.asarray(phi_jit(qj, t)),
                    b=np.asarray(b_jit(qj, t)),
                    gamma_fd=fd_gamma(C_lib, lambda tt, c=cases: hand_b(c, tt), q, qd, qdd, t),
                )
            )
        out.append(World(model, cases, samples))
    return out


def _of_kind(world, kind):
    cases = [c for c in world.cases if c.kind == kind]
    assert cases, f"no hand-oracle case for the element type {kind}: add one to make_cases"
    return cases


def test_every_element_type_has_a_hand_oracle(worlds):
    """The case tables hold every constraint and force element type jaxmb defines (read from
    the library: `element_registry`), each case builds an element of the type it claims, and
    the registry is not vacuous (the 12 pair types and 5 force types of API.md are in it)."""
    w = worlds[0]
    assert sorted({c.kind for c in w.cases}) == KINDS
    assert [type(p).__name__ for p in w.model.pairs] == [c.kind for c in w.cases]
    rng, masses, inertias, cases = _force_world(5)
    forces = _force_model(masses, inertias, [fac for _, fac, _ in cases]).force_elements
    assert sorted({type(f).__name__ for f in forces}) == FORCE_KINDS
    assert {
        "Revolute",
        "Translational",
        "Distance",
        "Parallel",
        "PinInSlot",
        "Gear",
        "GearOnLink",
        "Weld",
        "TranslationalDriver",
        "RelativeAngleDriver",
        "AbsoluteDriver",
        "KnifeEdge",
    } <= set(KINDS)
    assert {"Gravity", "SpringDamper", "RotationalSpringDamper", "Force", "Torque"} <= set(
        FORCE_KINDS
    )


def test_case_table_layout(worlds):
    model = worlds[0].model
    assert model.pair_names == tuple(c.name for c in worlds[0].cases)
    assert model.n == N
    rows = sum(len(c.gamma(np.zeros(N), np.zeros(N), 0.0)) for c in worlds[0].cases)
    assert worlds[0].samples[0].C.shape == (rows, N)


@pytest.mark.parametrize("kind", KINDS)
def test_C_matches_hand_jacobian(worlds, kind):
    """model.C rows of each element vs the hand-written Jacobian (seed 001 eq. 40, 42, 43, 30;
    seed 003 pair formulas; see each *_case docstring), whole rows (zeros elsewhere), 1e-12."""
    for w in worlds:
        for s in w.samples:
            for case in _of_kind(w, kind):
                got = s.C[w.model.rows(case.name)]
                np.testing.assert_allclose(
                    got,
                    case.C(s.q, s.t),
                    rtol=0,
                    atol=ALGEBRA_TOL,
                    err_msg=f"{case.name} C at q={s.q}",
                )


@pytest.mark.parametrize("kind", HOLONOMIC_KINDS)
def test_phi_matches_hand_residual(worlds, kind):
    """model.phi vs the residuals written out from seeds 001/003 (fixes the sign convention that
    the Jacobian rows above rely on)."""
    for w in worlds:
        for s in w.samples:
            for case in _of_kind(w, kind):
                got = s.phi[w.model.rows(case.name)]
                np.testing.assert_allclose(
                    got, case.phi(s.q, s.t), rtol=0, atol=ALGEBRA_TOL, err_msg=case.name
                )


@pytest.mark.parametrize("kind", KINDS)
def test_gamma_matches_hand_formula(worlds, kind):
    """model.gamma vs the closed-form gamma of each *_case docstring (seed 001 Appendix for
    revolute / translational / translational driver, seed 001 eq. 30 ff. for the knife edge,
    rederived formulas for the others, f''(t) for drivers), 1e-12 absolute (all terms O(1-10))."""
    for w in worlds:
        for s in w.samples:
            for case in _of_kind(w, kind):
                got = s.gamma[w.model.rows(case.name)]
                np.testing.assert_allclose(
                    got, case.gamma(s.q, s.qd, s.t), rtol=0, atol=ALGEBRA_TOL, err_msg=case.name
                )


def _fd_scale(s):
    return max(1.0, np.max(np.abs(s.C @ s.qdd)), np.max(np.abs(s.gamma)))


@pytest.mark.parametrize("kind", KINDS)
def test_gamma_matches_finite_difference(worlds, kind):
    """model.gamma vs a central finite difference of C(q(tau), t+tau) qd(tau) + b(t+tau) along
    q(tau) = q + qd tau + qdd tau^2/2 (see fd_gamma; b from the drive derivatives by hand).
    Formula-free reference. Tolerance FD_RTOL relative to the size of C qdd and gamma."""
    for w in worlds:
        for s in w.samples:
            tol = FD_RTOL * _fd_scale(s)
            for case in _of_kind(w, kind):
                rows = w.model.rows(case.name)
                np.testing.assert_allclose(
                    s.gamma[rows], s.gamma_fd[rows], rtol=0, atol=tol, err_msg=case.name
                )


@pytest.mark.parametrize("kind", KINDS)
def test_hand_oracle_is_self_consistent(worlds, kind):
    """Validates the oracle itself, without the library: the hand gamma equals the finite
    difference of the hand C (as in fd_gamma), and the hand C equals a central difference of the
    hand Phi (step 1e-6, error ~1e-10)."""
    w = worlds[0]
    for s in w.samples:
        for case in _of_kind(w, kind):
            ref = fd_gamma(case.C, case.b, s.q, s.qd, s.qdd, s.t)
            scale = max(1.0, np.max(np.abs(case.C(s.q, s.t) @ s.qdd)))
            np.testing.assert_allclose(
                case.gamma(s.q, s.qd, s.t), ref, rtol=0, atol=FD_RTOL * scale, err_msg=case.name
            )
            if not case.holonomic:
                continue
            h = 1e-6
            jac = np.stack(
                [
                    (case.phi(s.q + h * e, s.t) - case.phi(s.q - h * e, s.t)) / (2 * h)
                    for e in np.eye(N)
                ],
                axis=1,
            )
            np.testing.assert_allclose(case.C(s.q, s.t), jac, rtol=0, atol=1e-8, err_msg=case.name)
            # b = Phi_t (velocity residual g = Phi_q qd + Phi_t at qd = 0)
            phit = (case.phi(s.q, s.t + h) - case.phi(s.q, s.t - h)) / (2 * h)
            np.testing.assert_allclose(case.b(s.t), phit, rtol=0, atol=1e-8, err_msg=case.name)


def test_b_is_minus_drive_rate(worlds):
    """b = g(q, 0, t) = Phi_t: zero for scleronomic pairs and knife edges, -f'(t) for drivers
    (drive derivatives written by hand / scipy)."""
    for w in worlds:
        for s in w.samples:
            np.testing.assert_allclose(s.b, hand_b(w.cases, s.t), rtol=0, atol=ALGEBRA_TOL)


def test_velocity_residual_is_C_qd_plus_b(worlds):
    """g(q, qd, t) is linear in qd: g = C qd + b, with C and b checked above."""
    for w in worlds:
        for s in w.samples:
            g = np.asarray(_g_jit(w.model, s.q, s.qd, s.t))
            np.testing.assert_allclose(g, s.C @ s.qd + s.b, rtol=0, atol=ALGEBRA_TOL)


# ------------------------------------------------------------------------------------------------
# drive functions
# ------------------------------------------------------------------------------------------------
def _derivs(fn, ts):
    """Value, d/dt and d2/dt2 by jax.grad at each t (no vmap, so no batching assumptions;
    compiled, since op by op the loops took seconds per drive)."""
    d1, d2 = jax.jit(jax.grad(fn)), jax.jit(jax.grad(jax.grad(fn)))
    value = jax.jit(lambda t: fn(t))  # a drive module is not a hashable static function
    vals = np.array([float(value(jnp.float64(t))) for t in ts])
    der1 = np.array([float(d1(jnp.float64(t))) for t in ts])
    der2 = np.array([float(d2(jnp.float64(t))) for t in ts])
    return vals, der1, der2


@pytest.mark.parametrize("make", [constant, linear, harmonic, polynomial])
def test_closed_form_drives(rng, make):
    """Constant, Linear (offset + slope t), Harmonic (offset + amplitude cos(omega t + phase)) and
    Polynomial (lowest order first, numpy.polynomial.Polynomial) against their hand-written
    value, first and second derivative, 1e-12."""
    for _ in range(3):
        dr = make(rng)
        ts = rng.uniform(-3, 3, 7)
        vals, d1, d2 = _derivs(dr.module, ts)
        np.testing.assert_allclose(vals, [dr.f(t) for t in ts], rtol=0, atol=ALGEBRA_TOL)
        np.testing.assert_allclose(d1, [dr.df(t) for t in ts], rtol=0, atol=ALGEBRA_TOL)
        np.testing.assert_allclose(d2, [dr.ddf(t) for t in ts], rtol=0, atol=ALGEBRA_TOL)


def test_harmonic_convention_explicit():
    """API.md: offset + amplitude cos(omega t + phase), literal numbers."""
    f = drive.Harmonic(amplitude=2.0, omega=3.0, phase=0.5, offset=-1.0)
    assert float(f(0.7)) == pytest.approx(-1.0 + 2.0 * np.cos(3.0 * 0.7 + 0.5), abs=1e-14)
    p = drive.Polynomial([1.0, -2.0, 3.0])
    assert float(p(2.0)) == pytest.approx(1.0 - 4.0 + 12.0, abs=1e-14)


@pytest.mark.parametrize("num_knots", [2, 3, 4, 7])
def test_spline_matches_scipy_natural(rng, num_knots):
    """Spline vs scipy.interpolate.CubicSpline(bc_type='natural'): value, first and second
    derivative (jax.grad) inside the knot range, 1e-12; constant (zero derivatives) outside."""
    knots = np.cumsum(rng.uniform(0.2, 1.0, num_knots)) - 0.5
    vals = rng.uniform(-2, 2, num_knots)
    f = drive.Spline(knots, vals)
    if num_knots == 2:  # natural spline through two points is the straight line
        ref = lambda t, nu=0: (
            np.polyval(np.polyfit(knots, vals, 1), t)
            if nu == 0
            else ((vals[1] - vals[0]) / (knots[1] - knots[0]) if nu == 1 else 0.0)
        )
    else:
        cs = CubicSpline(knots, vals, bc_type="natural")
        ref = lambda t, nu=0: cs(t, nu)
    ts = np.concatenate([rng.uniform(knots[0], knots[-1], 15), knots[1:-1] + 1e-3])
    left = knots[0] - rng.uniform(0.01, 5.0, 4)
    right = knots[-1] + rng.uniform(0.01, 5.0, 4)
    # one call: each _derivs compiles the value and both derivatives once
    v_all, d1_all, d2_all = _derivs(f, np.concatenate([ts, knots, left, right]))
    inside = slice(0, len(ts))
    v, d1, d2 = v_all[inside], d1_all[inside], d2_all[inside]
    np.testing.assert_allclose(v, [ref(t) for t in ts], rtol=0, atol=ALGEBRA_TOL)
    np.testing.assert_allclose(d1, [ref(t, 1) for t in ts], rtol=0, atol=1e-11)
    np.testing.assert_allclose(d2, [ref(t, 2) for t in ts], rtol=0, atol=1e-10)
    # the knots themselves are interpolated exactly
    at_knots = slice(len(ts), len(ts) + num_knots)
    np.testing.assert_allclose(v_all[at_knots], vals, rtol=0, atol=ALGEBRA_TOL)
    # outside: constant at the end values, zero rate and acceleration
    start = len(ts) + num_knots
    for side, end in ((slice(start, start + 4), vals[0]), (slice(start + 4, None), vals[-1])):
        np.testing.assert_allclose(v_all[side], end, rtol=0, atol=ALGEBRA_TOL)
        np.testing.assert_allclose(d1_all[side], 0.0, rtol=0, atol=ALGEBRA_TOL)
        np.testing.assert_allclose(d2_all[side], 0.0, rtol=0, atol=ALGEBRA_TOL)


def test_spline_gradient_wrt_knot_values(rng):
    """d f(t) / d values: the natural spline is linear in the values, so the exact reference is
    the scipy natural spline through the unit vector e_k; also a central finite difference."""
    knots = np.array([0.0, 0.4, 1.1, 1.5, 2.6, 3.0])
    vals = rng.uniform(-1, 1, knots.size)
    ts = rng.uniform(0.0, 3.0, 5)
    for t in ts:
        grad = np.asarray(jax.grad(lambda y: drive.Spline(knots, y)(t))(jnp.asarray(vals)))
        basis = np.array([CubicSpline(knots, e, bc_type="natural")(t) for e in np.eye(knots.size)])
        np.testing.assert_allclose(grad, basis, rtol=0, atol=ALGEBRA_TOL)
        h = 1e-6
        fd = np.array(
            [
                (
                    float(drive.Spline(knots, vals + h * e)(t))
                    - float(drive.Spline(knots, vals - h * e)(t))
                )
                / (2 * h)
                for e in np.eye(knots.size)
            ]
        )
        np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-8)


def _smoothstep_ref(t, starts, ends, levels, initial):
    """Documented formula: initial + sum_k (levels_k - levels_{k-1}) S(x_k), levels_{-1} = initial,
    x_k = clip((t - starts_k)/(ends_k - starts_k), 0, 1), S = 10x^3 - 15x^4 + 6x^5;
    S' = 30 x^2 (1-x)^2 / dt_k, S'' = 60 x (1-x)(1-2x) / dt_k^2."""
    jumps = np.diff(np.concatenate([[initial], levels]))
    f, df, ddf = initial, 0.0, 0.0
    for a, b, J in zip(starts, ends, jumps):
        dt = b - a
        x = min(max((t - a) / dt, 0.0), 1.0)
        f += J * (10 * x**3 - 15 * x**4 + 6 * x**5)
        if 0.0 < x < 1.0:
            df += J * 30 * x**2 * (1 - x) ** 2 / dt
            ddf += J * 60 * x * (1 - x) * (1 - 2 * x) / dt**2
    return f, df, ddf


def test_smooth_steps_formula(rng):
    """SmoothSteps value, rate and acceleration vs the quintic formula of its docstring; levels are
    held between and after the transitions."""
    starts, ends = np.array([0.0, 1.5, 2.0]), np.array([1.0, 2.5, 3.2])  # 2nd and 3rd overlap
    levels, initial = np.array([1.0, -0.5, 2.0]), 0.3
    f = drive.SmoothSteps(starts, ends, levels, initial)
    ts = np.concatenate([rng.uniform(-1.0, 4.0, 20), [-0.5, 1.25, 4.0]])
    v, d1, d2 = _derivs(f, ts)
    ref = np.array([_smoothstep_ref(t, starts, ends, levels, initial) for t in ts])
    np.testing.assert_allclose(v, ref[:, 0], rtol=0, atol=ALGEBRA_TOL)
    np.testing.assert_allclose(d1, ref[:, 1], rtol=0, atol=ALGEBRA_TOL)
    np.testing.assert_allclose(d2, ref[:, 2], rtol=0, atol=1e-11)
    assert float(f(-0.5)) == pytest.approx(initial, abs=1e-15)
    assert float(f(1.25)) == pytest.approx(levels[0], abs=1e-15)
    assert float(f(4.0)) == pytest.approx(levels[-1], abs=1e-15)


# ------------------------------------------------------------------------------------------------
# force elements and mass matrix
# ------------------------------------------------------------------------------------------------
def _force_cases(rng, masses):
    """(element factory, hand Q(q, qd, t)) pairs."""
    g = vec(rng, 10.0)
    out = []

    out.append(("gravity", lambda H: mb.Gravity(g), lambda q, qd, t: hand.gravity(masses, g)))
    for i, j in ((0, 1), (G, 2), (2, G)):
        si, sj = vec(rng), vec(rng)
        k, c, l0 = rng.uniform(1, 100), rng.uniform(0, 5), rng.uniform(0.1, 1.0)
        out.append(
            (
                f"spring{i}{j}",
                lambda H, i=i, j=j, si=si, sj=sj, k=k, c=c, l0=l0: mb.SpringDamper(
                    f"sd{i}{j}", H(i), H(j), s_i=si, s_j=sj, stiffness=k, damping=c, free_length=l0
                ),
                lambda q, qd, t, i=i, j=j, si=si, sj=sj, k=k, c=c, l0=l0: hand.spring_damper(
                    q, qd, i, si, j, sj, k, c, l0
                ),
            )
        )
    for i, j in ((0, 2), (G, 1)):
        k, c, th0 = rng.uniform(1, 100), rng.uniform(0, 5), rng.uniform(-1, 1)
        out.append(
            (
                f"rotspring{i}{j}",
                lambda H, i=i, j=j, k=k, c=c, th0=th0: mb.RotationalSpringDamper(
                    f"rsd{i}{j}", H(i), H(j), stiffness=k, damping=c, free_angle=th0
                ),
                lambda q, qd, t, i=i, j=j, k=k, c=c, th0=th0: hand.rotational_spring_damper(
                    q, qd, i, j, k, c, th0
                ),
            )
        )
    # constant global force
    s, f = vec(rng), vec(rng, 5.0)
    out.append(
        (
            "force_const",
            lambda H: mb.Force("F1", H(1), s=s, f=f),
            lambda q, qd, t: hand.point_force(q, 1, s, f),
        )
    )
    # time-dependent force: 2-vector harmonic amplitude, and a 2-vector linear drive
    s2, amp, off = vec(rng), vec(rng, 5.0), vec(rng, 2.0)
    w, ph = rng.uniform(0.5, 3), rng.uniform(-3, 3)
    out.append(
        (
            "force_harmonic",
            lambda H: mb.Force(
                "F2", H(2), s=s2, f=drive.Harmonic(amplitude=amp, omega=w, phase=ph, offset=off)
            ),
            lambda q, qd, t: hand.point_force(q, 2, s2, off + amp * np.cos(w * t + ph)),
        )
    )
    s3, slope, off3 = vec(rng), vec(rng, 5.0), vec(rng, 2.0)
    out.append(
        (
            "force_linear",
            lambda H: mb.Force("F0", H(0), s=s3, f=drive.Linear(slope=slope, offset=off3)),
            lambda q, qd, t: hand.point_force(q, 0, s3, off3 + slope * t),
        )
    )
    # torques: constant and polynomial in t
    tau0 = rng.uniform(-5, 5)

    out.append(
        (
            "torque_const",
            lambda H: mb.Torque("T0", H(0), tau0),
            lambda q, qd, t: hand.torque(q, 0, tau0),
        )
    )
    coeffs = rng.uniform(-2, 2, 3)
    out.append(
        (
            "torque_poly",
            lambda H: mb.Torque("T2", H(2), drive.Polynomial(coeffs)),
            lambda q, qd, t: hand.torque(q, 2, np.polynomial.polynomial.polyval(t, coeffs)),
        )
    )
    for i, j in ((0, 1), (G, 2)):
        si, sj = vec(rng), vec(rng)
        k, c, th0 = rng.uniform(1, 100, 3), rng.uniform(0, 5, 3), rng.uniform(-1, 1)
        out.append(
            (
                f"bushing{i}{j}",
                lambda H, i=i, j=j, si=si, sj=sj, k=k, c=c, th0=th0: mb.Bushing(
                    f"bu{i}{j}", H(i), H(j), s_i=si, s_j=sj, stiffness=k, damping=c, free_angle=th0
                ),
                lambda q, qd, t, i=i, j=j, si=si, sj=sj, k=k, c=c, th0=th0: hand.bushing(
                    q, qd, i, si, j, sj, k, c, th0
                ),
            )
        )
    return out


def _force_world(seed):
    rng = np.random.default_rng(seed)
    masses = rng.uniform(0.5, 3.0, NUM_BODIES)
    inertias = rng.uniform(0.01, 0.5, NUM_BODIES)
    cases = _force_cases(rng, masses)
    return rng, masses, inertias, cases


def _force_model(masses, inertias, factories):
    m = mb.Mechanism()
    bodies = [m.body(f"b{k}", mass=masses[k], inertia=inertias[k]) for k in range(NUM_BODIES)]
    for fac in factories:
        m.add(fac(lambda k: m.ground if k is None else bodies[k]))
    return m.build()


FORCE_NAMES = [c[0] for c in _force_world(5)[3]]


@pytest.mark.parametrize("which", FORCE_NAMES)
def test_force_element_generalized_force(which):
    """model.forces of a model holding one force element vs the hand generalized force
    (point force [f, (Omega A s)^T f]; spring tension along the unit vector; torsion spring
    +tau on i, -tau on j; bushing force -lambda at P_i, +lambda at P_j, torque +-lambda_phi;
    gravity [m g, 0]) at 5 random states, 1e-12 relative to |Q|."""
    rng, masses, inertias, cases = _force_world(5)
    name, fac, ref = next(c for c in cases if c[0] == which)
    model = _force_model(masses, inertias, [fac])
    for _ in range(NUM_CONFIGS):
        q, qd, _, t = random_state(rng)
        got = np.asarray(model.forces(jnp.asarray(q), jnp.asarray(qd), t))
        want = ref(q, qd, t)
        np.testing.assert_allclose(
            got, want, rtol=0, atol=ALGEBRA_TOL * max(1.0, np.abs(want).max())
        )


def test_forces_of_several_elements_add_up():
    """F(q, qd, t) is the sum of the element forces (gravity + springs + loads together)."""
    rng, masses, inertias, cases = _force_world(6)
    chosen = [(fac, ref) for _, fac, ref in cases]
    model = _force_model(masses, inertias, [fac for fac, _ in chosen])
    for _ in range(3):
        q, qd, _, t = random_state(rng)
        got = np.asarray(model.forces(jnp.asarray(q), jnp.asarray(qd), t))
        want = sum(ref(q, qd, t) for _, ref in chosen)
        np.testing.assert_allclose(
            got, want, rtol=0, atol=ALGEBRA_TOL * max(1.0, np.abs(want).max())
        )


def test_mass_matrix_is_diag_m_m_J():
    """Seed 003 (centroidal frames): M = blockdiag(diag(m_k, m_k, J_k))."""
    rng = np.random.default_rng(3)
    masses, inertias = rng.uniform(0.5, 3.0, NUM_BODIES), rng.uniform(0.01, 0.5, NUM_BODIES)
    model = _force_model(masses, inertias, [])
    want = np.diag(np.stack([masses, masses, inertias], axis=1).reshape(-1))
    np.testing.assert_allclose(np.asarray(model.mass_matrix()), want, rtol=0, atol=0)
