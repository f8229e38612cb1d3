"""Every check on a value holds traced as well as eager.

For each element class of jaxmb (found from the library, so a new one cannot be left out) and
each of its array parameters (drive functions' included), three bad values (nan, -1 and 0 in
every entry) are tried two ways: eagerly, where the constructor or `Mechanism.build` refuses
with a ValueError, and inside `jax.jit`, where the value is traced and the same check must
fail at run time naming the element. The reference is the eager verdict: the traced one must
equal it, value by value (neither a check missing under jit, as a Bushing's negative stiffness
was, nor a false refusal). The same holds for the parameters of the formulations, the
stabilization and the rigid-limit helpers (`with_slip`, `with_bushings`).
"""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_elements import element_registry

import jaxmb as mb
import jaxmb.rigid_limit as rigid_limit
from jaxmb import drive
from jaxmb.elements import AbstractElement
from jaxmb.elements.drive import AbstractDrive
from jaxmb.models import mobile_robot, parallelogram, slider_crank


def _pair(m, a, b):
    m.add(mb.Revolute("R", a, b, s_i=(0.1, 0.0), s_j=(-0.2, 0.0)))


SAMPLES = {
    # name: make(m, a, b) -> the element (and any element it needs added first)
    "AbsoluteDriver": lambda m, a, b: mb.AbsoluteDriver(
        "E", a, 2, drive.Harmonic(0.2, 3.0, 0.1, 0.4)
    ),
    "Bushing": lambda m, a, b: mb.Bushing(
        "E",
        a,
        b,
        (0.1, 0.0),
        (0.0, 0.2),
        stiffness=(1e3, 2e3, 5.0),
        damping=(1.0, 1.0, 0.1),
        free_angle=0.2,
    ),
    "Distance": lambda m, a, b: mb.Distance("E", a, b, (0.1, 0.0), (0.0, 0.2), length=0.5),
    "Force": lambda m, a, b: mb.Force("E", a, (0.1, 0.0), drive.Constant((1.0, 2.0))),
    "Gear": lambda m, a, b: mb.Gear("E", a, b, ratio=2.0, offset=0.1),
    "GearOnLink": lambda m, a, b: mb.GearOnLink("E", a, b, m.ground, ratio=2.0, offset=0.1),
    "Gravity": lambda m, a, b: mb.Gravity((0.0, -9.81), name="E"),
    "KnifeEdge": lambda m, a, b: mb.KnifeEdge("E", a, s=(0.1, 0.0), n=(0.0, 1.0)),
    "LateralDamper": lambda m, a, b: rigid_limit.LateralDamper(
        "E", a, jnp.asarray((0.1, 0.0)), jnp.asarray((0.0, 1.0)), jnp.asarray(3.0)
    ),
    "Parallel": lambda m, a, b: mb.Parallel("E", a, b, a_i=(1.0, 0.0), a_j=(0.0, 1.0)),
    "PinInSlot": lambda m, a, b: mb.PinInSlot("E", a, b, (0.1, 0.0), (0.0, 0.2), a_i=(1.0, 0.5)),
    "RelativeAngleDriver": lambda m, a, b: mb.RelativeAngleDriver(
        "E",
        a,
        b,
        f=drive.Spline(jnp.asarray([0.0, 1.0, 2.0]), jnp.asarray([0.0, 0.5, 0.2])),
        offset=0.1,
    ),
    "Revolute": lambda m, a, b: mb.Revolute("E", a, b, s_i=(0.1, 0.0), s_j=(0.0, 0.2)),
    "RevoluteFriction": lambda m, a, b: (
        _pair(m, a, b),
        mb.RevoluteFriction("E", "R", mu=0.2, radius=0.01, velocity_scale=1e-3),
    )[1],
    "RotationalSpringDamper": lambda m, a, b: mb.RotationalSpringDamper(
        "E", a, b, stiffness=10.0, damping=0.5, free_angle=0.1
    ),
    "SpringDamper": lambda m, a, b: mb.SpringDamper(
        "E", a, b, (0.1, 0.0), (0.0, 0.2), stiffness=100.0, damping=2.0, free_length=0.3
    ),
    "Torque": lambda m, a, b: mb.Torque("E", a, drive.Linear(1.0, 0.5)),
    "Translational": lambda m, a, b: mb.Translational(
        "E", a, b, (0.1, 0.0), (0.0, 0.2), v=(1.0, 0.0), angle=0.1
    ),
    "TranslationalDriver": lambda m, a, b: mb.TranslationalDriver(
        "E",
        a,
        b,
        (0.1, 0.0),
        (0.0, 0.2),
        u=(1.0, 0.0),
        d=drive.Offset(
            0.3, drive.SmoothSteps(jnp.asarray([0.5]), jnp.asarray([1.0]), jnp.asarray([0.2]))
        ),
    ),
    "TranslationalFriction": lambda m, a, b: (
        m.add(mb.Translational("R", a, b, (0.1, 0.0), (0.0, 0.2), v=(1.0, 0.0))),
        mb.TranslationalFriction("E", "R", mu=0.2, length=0.05, velocity_scale=1e-3),
    )[1],
    "Weld": lambda m, a, b: mb.Weld("E", a, b, (0.1, 0.0), (0.0, 0.2), angle=0.1),
}

BAD = (np.nan, -1.0, 0.0)


def _mechanism():
    m = mb.Mechanism()
    a = m.body("a", mass=1.0, inertia=0.1, q=(0.0, 0.0, 0.0))
    b = m.body("b", mass=2.0, inertia=0.2, q=(0.3, 0.1, 0.2))
    return m, a, b


def _rebuilt(x):
    """x constructed again through the constructors (so their eager checks run): the element,
    and the drive functions it holds."""
    if isinstance(x, (AbstractElement, AbstractDrive)):
        kwargs = {f.name: _rebuilt(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init}
        return type(x)(**kwargs)
    return x


def _build_with(kind, k, value):
    """The model of SAMPLES[kind] with the k-th array leaf of the element set to `value`
    (every entry), through the constructors and `Mechanism.build`."""
    m, a, b = _mechanism()
    element = SAMPLES[kind](m, a, b)
    leaves, treedef = jax.tree_util.tree_flatten(element)
    leaves[k] = jnp.full(jnp.shape(leaves[k]), value, jnp.float64)
    m.add(_rebuilt(jax.tree_util.tree_unflatten(treedef, leaves)))
    return m.build()


def _array_leaves(kind):
    m, a, b = _mechanism()
    return [
        k
        for k, leaf in enumerate(jax.tree_util.tree_leaves(SAMPLES[kind](m, a, b)))
        if eqx.is_inexact_array(leaf)
    ]


def test_every_element_class_has_a_sample():
    """A new element class needs an entry in SAMPLES, so its checks are tried both ways."""
    import jaxmb.rigid_limit  # noqa: F401  (LateralDamper)

    assert sorted(element_registry()) == sorted(SAMPLES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_element_checks_hold_traced_as_eager(kind):
    """For every array parameter and bad value: refused inside jit exactly when refused
    eagerly, and the run-time message names the element."""
    refused_eagerly = 0
    for k in _array_leaves(kind):
        traced = eqx.filter_jit(
            lambda v, k=k: jax.tree.leaves(
                eqx.filter(_build_with(kind, k, v), eqx.is_inexact_array)
            )
        )
        for value in BAD:
            try:
                _build_with(kind, k, value)
                eager = None
            except ValueError as err:
                eager = str(err)
            try:
                traced(jnp.asarray(value))
                late = None
            except Exception as err:  # the run-time error of eqx.error_if
                late = str(err)
            where = f"{kind} leaf {k} = {value}: eager {eager!r}, traced {late!r}"
            assert (eager is None) == (late is None), where
            if late is not None:
                refused_eagerly += 1
                assert f"{kind} 'E'" in late and "traced value" in late, where
                # eagerly a drive function refuses itself, before the element exists
                assert kind in eager or eager.split(":")[0] in dir(drive), where
    assert refused_eagerly >= 1  # nan at least: every array parameter must be finite


def test_with_slip_and_with_bushings_check_traced_values():
    """The rigid-limit helpers replace pairs after the model was built: a negative damping
    of `with_slip` or stiffness of `with_bushings` is refused eagerly and inside jit."""
    robot = mobile_robot.build()
    knife = next(p.name for p in robot.pairs if not p.holonomic)
    crank = slider_crank.build()
    pin = crank.pair_names[0]
    makers = [
        lambda d: rigid_limit.with_slip(robot, {knife: d}),
        lambda k: rigid_limit.with_bushings(crank, {pin: k}),
    ]
    for make, what in zip(makers, ("LateralDamper", "Bushing")):
        with pytest.raises(ValueError, match=f"{what} .*must be non-negative"):
            make(-2.0)
        traced = eqx.filter_jit(
            lambda v, make=make: make(v).forces(make(v).q0, jnp.zeros(make(v).n), 0.0)
        )
        with pytest.raises(Exception, match=f"{what} .*must be non-negative \\(traced value\\)"):
            traced(jnp.asarray(-2.0))
        assert np.all(np.isfinite(np.asarray(traced(jnp.asarray(2.0)))))


def test_baumgarte_parameters_are_checked_both_ways():
    """A negative alpha makes constraint violations grow like exp(2 |alpha| t) instead of
    decaying (Baumgarte's equation, `mb.Baumgarte`); nan poisons the run. Refused eagerly and
    inside jit (one compiled program, each bad value in turn)."""
    model = slider_crank.build()
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
    run = eqx.filter_jit(
        lambda a, b: (
            mb.simulate(
                model,
                model.q0,
                qd0,
                0.05,
                formulation="null_space",
                stabilization=mb.Baumgarte(alpha=a, beta=b),
            ).q
        )
    )
    good = {"alpha": 10.0, "beta": 10.0}
    for name, value in (("alpha", -1.0), ("beta", np.nan)):
        with pytest.raises(ValueError, match=f"Baumgarte: {name} must be a finite number >= 0"):
            mb.Baumgarte(**{name: value})
        args = {**good, name: value}
        with pytest.raises(Exception, match=f"Baumgarte: {name} .*\\(traced value\\)"):
            run(jnp.asarray(args["alpha"]), jnp.asarray(args["beta"]))
    assert np.all(np.isfinite(np.asarray(run(jnp.asarray(10.0), jnp.asarray(10.0)))))


def test_augmented_lagrangian_parameters_are_checked_both_ways():
    """Traced penalty, tol and projection_tol were unchecked: a negative penalty made S
    indefinite. Refused eagerly and inside jit (one compiled program, each in turn)."""
    model = slider_crank.build()
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
    names = ("penalty", "tol", "projection_tol")
    run = eqx.filter_jit(
        lambda *v: (
            mb.simulate(
                model,
                model.q0,
                qd0,
                0.05,
                formulation=mb.AugmentedLagrangian(**dict(zip(names, v))),
            ).q
        )
    )
    good = (1e8, 1e-3, 1e-10)
    for k, name in enumerate(names):
        with pytest.raises(ValueError, match=f"AugmentedLagrangian: {name} must be a positive"):
            mb.AugmentedLagrangian(**{name: -1.0})
        values = [jnp.asarray(v) for v in good]
        values[k] = jnp.asarray(-1.0)
        with pytest.raises(Exception, match=f"AugmentedLagrangian: {name} .*\\(traced value\\)"):
            run(*values)
    assert np.all(np.isfinite(np.asarray(run(*(jnp.asarray(v) for v in good)))))


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda m, v: mb.solvability(m, m.q0, rtol=v).rank,
            "solvability: rtol must be a finite "
            r"number in \(0, 1\)",
        ),
        (
            lambda m, v: mb.solvability(m, m.q0, btol=v).rank,
            "solvability: btol must be a finite "
            r"number in \(0, 1\)",
        ),
        (lambda m, v: mb.assemble(m, m.q0, tol=v), "assemble: tol must be a positive finite"),
        (
            lambda m, v: mb.kinematics(m, jnp.zeros(1), tol=v).q,
            "kinematics: tol must be a positive finite",
        ),
    ],
)
def test_analysis_tolerances_are_checked_both_ways(call, message):
    """A nan rank tolerance gave rank 0 and a negative one every singular value; a negative
    assembly tolerance was reported as "no configuration satisfies the constraints". Each
    tolerance is refused eagerly (with its value, or as text) and inside jit."""
    model = slider_crank.build()
    for value in (np.nan, -1.0):
        with pytest.raises(ValueError, match=message):
            call(model, value)
    with pytest.raises(ValueError, match="must be a number, got 'a'"):
        call(model, "a")
    traced = eqx.filter_jit(lambda v: call(model, v))
    with pytest.raises(Exception, match=message + r".*\(traced value\)"):
        traced(jnp.asarray(-1.0))


# ------------------------------------------------------------------------------------------
# every traced refusal under jit, vmap, grad and jit(grad)
# ------------------------------------------------------------------------------------------
def _parallelogram_statics(method):
    model = parallelogram.build()
    return mb.statics(model, model.q0, method=method).lam[0]


def _bushing_forces(value):
    """The generalized force of a Bushing of stiffness (value, 1e3, 5): linear in the
    stiffness, so its derivative needs no primal stiffness (the case jit(grad) dropped)."""
    m, a, b = _mechanism()
    m.add(mb.Bushing("E", a, b, (0.1, 0.0), (0.0, 0.2), stiffness=jnp.stack([value, 1e3, 5.0])))
    model = m.build()
    return jnp.sum(model.forces(model.q0, jnp.zeros(model.n), 0.0))


def _distance_accelerations(length):
    """The length enters Phi only (not C nor gamma): the derivative is exactly zero, which
    jit(grad) computed without the check."""
    m, a, b = _mechanism()
    m.add(mb.Distance("E", a, b, (0.1, 0.0), (0.0, 0.2), length=length))
    model = m.build()
    return mb.accelerations(model, model.q0, jnp.zeros(model.n))[0]


def _augmented_lagrangian(tol):
    """A pendulum run with the AugmentedLagrangian formulation: the final angle does not
    depend on `tol` (structurally zero derivative)."""
    m = mb.Mechanism()
    a = m.body("a", mass=1.0, inertia=0.1, q=(0.1, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, a, s_i=(0.0, 0.0), s_j=(-0.1, 0.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    model = m.build()
    run = mb.simulate(
        model, model.q0, jnp.zeros(3), 0.01, formulation=mb.AugmentedLagrangian(tol=tol)
    )
    return run.q[-1, 2]


TRACED_REFUSALS = {
    # name: (f: scalar -> scalar, a good value, a bad value, the error (regex))
    "Compliance ratio": (
        lambda k: _parallelogram_statics(mb.Compliance({"O3": k}, default=1.0)),
        1e6,
        1e13,  # wrong beyond 3e15, where statics' own balance check may fire first
        r"Compliance.*(stiffness ratio 1e\+13|ratio of the largest to the smallest stiffness)"
        r" .*exceeds 1e\+12",
    ),
    "Compliance default sign": (
        lambda k: _parallelogram_statics(mb.Compliance({"O3": 1e3}, default=k)),
        1e2,
        -1.0,
        r"Compliance: the stiffness of pair 'O1' .*must be positive",
    ),
    "Bushing sign": (
        _bushing_forces,
        1e3,
        -1.0,
        r"Bushing 'E': stiffness must be non-negative \(traced value\)",
    ),
    "Distance nan": (
        _distance_accelerations,
        0.4,
        np.nan,
        r"Distance 'E': length is not finite \(traced value\)",
    ),
    "Distance sign": (
        _distance_accelerations,
        0.4,
        -0.4,
        r"Distance 'E': length must be positive \(traced value\)",
    ),
    "model builder nan": (
        lambda L: _parallelogram_accelerations(parallelogram.build(L=L)),
        0.2,
        np.nan,
        r"parallelogram.build: L .*(traced value)",
    ),
    "model builder mass": (
        lambda mass: _parallelogram_accelerations(
            parallelogram.build(masses=(mass, 0.5, 0.5, 1.0))
        ),
        0.5,
        -0.5,
        r"parallelogram.build: masses.*(traced value)",
    ),
    "AugmentedLagrangian tol": (
        _augmented_lagrangian,
        1e-3,
        -1.0,
        r"AugmentedLagrangian: tol must be a positive finite number"
        r"(, got -1.0| \(traced value\))",
    ),
}


def _parallelogram_accelerations(model):
    return mb.accelerations(model, model.q0, jnp.zeros(model.n))[2]


TRANSFORMS = {  # f -> the transformed function of a value (vmap: of [good, value])
    "jit": lambda f, good: jax.jit(f),
    "vmap": lambda f, good: lambda v: jax.vmap(f)(jnp.stack([jnp.asarray(good), v])),
    "grad": lambda f, good: jax.grad(f),
    "jit(grad)": lambda f, good: jax.jit(jax.grad(f)),
}


@pytest.mark.parametrize("case", sorted(TRACED_REFUSALS))
def test_traced_refusals_hold_under_every_transform(case):
    """Each traced check refuses its bad value under jit, vmap, grad and jit(grad), with the
    message naming the element (or method) and the problem. Before, jit(grad) returned a
    number (the parallelogram's d lam / d k at a 1e15 stiffness ratio: 5.6e-22): equinox's
    check rides on the primal value only, which a backward pass need not compute. The good
    value passes under each (no false refusal), with a finite result."""
    f, good, bad, message = TRACED_REFUSALS[case]
    for name, transform in TRANSFORMS.items():
        g = transform(f, good)
        with pytest.raises(Exception, match="(?s)" + message):
            g(jnp.asarray(bad, jnp.float64))
        assert np.all(np.isfinite(np.asarray(g(jnp.asarray(good, jnp.float64))))), name
