"""Formulations are objects of one base (`mb.AbstractFormulation`): the string spellings name
them, a spelling and its object share one compiled program, and a user-defined formulation
plugs into simulate.

Reference: a second formulation written here, the augmented system of seed 001 eq. 11,

    [M  C^T] [qdd   ]   [F    ]
    [C   0 ] [lambda] = [gamma],

solved by a dense least-squares pseudo-inverse (`jnp.linalg.pinv`, not jaxmb's pivoted QR):
its qdd is unique although lambda is not, so it integrates the same motion as the null-space
formulation.
"""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb._analyses import simulate as _simulate
from jaxmb._formulations import state_ode
from jaxmb._runtime import errors
from jaxmb.models import slider_crank

T1 = 0.5
TOL = dict(rtol=1e-10, atol=1e-12)


TRACED = []


class DenseAugmented(mb.AbstractAccelerationFormulation):
    """qdd from the augmented system (seed 001 eq. 11) by a dense pseudo-inverse."""

    def accelerations(self, model, terms):
        TRACED.append(errors.function_name())  # at trace time: simulate really calls it
        n, rows = terms.M.shape[0], terms.C.shape[0]
        K = jnp.block([[terms.M, terms.C.T], [terms.C, jnp.zeros((rows, rows))]])
        return (jnp.linalg.pinv(K) @ jnp.concatenate([terms.F, terms.gamma]))[:n]


@pytest.fixture(scope="module")
def crank():
    model = slider_crank.build()
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n).at[2].set(3.0))
    return model, qd0, jnp.linspace(0.0, T1, 6)


def test_spellings_name_formulation_objects():
    expected = {
        "null_space": mb.NullSpace,
        "auto": mb.Auto,
        "projection": mb.Projection,
        "independent": mb.IndependentCoordinates,
        "augmented_lagrangian": mb.AugmentedLagrangian,
        "default": mb.AugmentedLagrangian,
    }
    assert {k: type(_simulate.as_formulation(k)) for k in expected} == expected
    for cls in expected.values():
        assert issubclass(cls, mb.AbstractFormulation)
    # the eliminations are reaction methods as well: one object chooses both
    assert isinstance(mb.Eliminate((0,)), mb.AbstractReactionMethod)
    assert isinstance(mb.Auto(), mb.AbstractStateFormulation)
    with pytest.raises(
        ValueError, match="formulation must be 'default', 'augmented_lagrangian'.*got 'bogus'"
    ):
        _simulate.as_formulation("bogus")


def test_spelling_and_object_share_one_program(crank, count_calls):
    """simulate(formulation="null_space") and simulate(formulation=mb.NullSpace()) trace the
    integration once (counted where the program checks the initial state) and give the same
    numbers bit for bit; so do the default and mb.AugmentedLagrangian()."""
    model, qd0, ts = crank
    traces = count_calls(state_ode, "check_initial_state")
    spelled = mb.simulate(model, model.q0, qd0, T1, ts=ts, formulation="null_space", **TOL)
    obj = mb.simulate(model, model.q0, qd0, T1, ts=ts, formulation=mb.NullSpace(), **TOL)
    assert len(traces) <= 1  # 0 when an earlier test in this process compiled it already
    np.testing.assert_array_equal(spelled.q, obj.q)
    default = mb.simulate(model, model.q0, qd0, T1, ts=ts, **TOL)
    al = mb.simulate(model, model.q0, qd0, T1, ts=ts, formulation=mb.AugmentedLagrangian(), **TOL)
    assert len(traces) <= 2
    np.testing.assert_array_equal(default.q, al.q)


def test_user_defined_formulation_integrates_the_same_motion(crank):
    """A formulation written outside jaxmb (`DenseAugmented`) plugs into simulate and follows
    the null-space motion to 1e-8 (both at rtol 1e-10: the difference is the integration
    error of two step sequences), with Baumgarte on by default and the passage monitor."""
    model, qd0, ts = crank
    reference = mb.simulate(model, model.q0, qd0, T1, ts=ts, **TOL)
    dense = mb.simulate(model, model.q0, qd0, T1, ts=ts, formulation=DenseAugmented(), **TOL)
    assert bool(dense.success)
    assert TRACED and all(
        label.startswith("simulate(formulation=DenseAugmented(") for label in TRACED
    )
    np.testing.assert_allclose(dense.q, reference.q, rtol=0, atol=1e-8)
    np.testing.assert_allclose(dense.qd, reference.qd, rtol=0, atol=1e-7)
    assert float(jnp.max(jnp.abs(dense.q[-1, :2]))) > 0.01  # it moved
    assert not np.isfinite(float(dense.t_passage))  # monitored: no singular passage here


def test_default_solver_follows_the_tolerance(crank):
    """simulate's default solver (jaxmb/_formulations/solvers.py): Tsit5, Dopri8 where rtol is
    a number at most TIGHT_RTOL; a traced rtol keeps Tsit5. Reference: the run with the solver
    given explicitly is the same program, so its states are bitwise those of the default run."""
    import diffrax
    import jax

    from jaxmb._formulations.solvers import TIGHT_RTOL, default_solver

    assert isinstance(default_solver(jnp.asarray(TIGHT_RTOL)), diffrax.Dopri8)
    assert isinstance(default_solver(jnp.asarray(10 * TIGHT_RTOL)), diffrax.Tsit5)
    kinds = []
    jax.jit(lambda r: kinds.append(type(default_solver(r))) or r)(jnp.asarray(TIGHT_RTOL))
    assert kinds == [diffrax.Tsit5]
    model, qd0, ts = crank
    tight = mb.simulate(model, model.q0, qd0, T1, ts=ts, **TOL)
    given = mb.simulate(model, model.q0, qd0, T1, ts=ts, solver=diffrax.Dopri8(), **TOL)
    np.testing.assert_array_equal(np.asarray(tight.q), np.asarray(given.q))
    assert int(tight.num_steps) == int(given.num_steps)
