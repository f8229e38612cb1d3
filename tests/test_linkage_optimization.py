"""Four-bar dimension optimization (examples/linkage_optimization.py) at reduced size.

- The gradient of the loss (through the implicit derivative of assemble, the kinematics and
  the inverse-dynamics multipliers) equals central finite differences in every parameter.
  Step h = 1e-6 m on parameters of 0.01-0.4 m: the truncation error (h^2 / 6) L''' is about
  1e-12 relative, the round-off eps |L| / h about 1e-10 relative (assemble converges to
  round-off: Newton's last step is below 1e-11, its residual quadratically smaller), both far
  under the 1e-5 tolerance; measured agreement is about 1e-9.
- The reduced optimization lowers the loss at least 100x and the final linkage assembles over
  the whole revolution (max |Phi| < 1e-10 at every sample, positive Grashof margins, the open
  branch everywhere); the before/after figures are written.

One compilation of the loss gradient (about 20-30 s on 2 cores) serves every test: the finite
differences read the values of the same compiled function.
"""

import os
import sys

import jax
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FD_STEP = 1e-6
FD_RTOL = 1e-5
FD_ATOL = 1e-8  # for derivatives that vanish (d/du, d/dv at the reference): round-off level
LOSS_REDUCTION = 100.0
PHI_TOL = 1e-10


@pytest.fixture(scope="module")
def example():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import linkage_optimization
    finally:
        sys.path.pop(0)
    return linkage_optimization


@pytest.fixture(scope="module", autouse=True)
def standard_dtype_promotion():
    """optax's schedules mix their int32 step count with floats, which the suite's strict
    dtype promotion (tests/conftest.py) refuses; jaxmb's own code is checked strictly by the
    other test files."""
    with jax.numpy_dtype_promotion("standard"):
        yield


@pytest.fixture(scope="module")
def problem(example):
    s, _ = example.settings_for(quick=True)
    return s, example.targets(s)


@pytest.fixture(scope="module")
def quick_run(example, tmp_path_factory):
    out = tmp_path_factory.mktemp("linkage")
    return example.main(["--quick", "--out", str(out)]), out


@pytest.mark.parametrize("design", ["INITIAL", "REFERENCE"])
def test_gradient_matches_central_differences(example, problem, design):
    """At the poor start (the path error dominates) and at the reference linkage (path error
    and its gradient vanish: what is left is the gradient of the peak torque and reaction,
    and d/du = d/dv = 0 since the coupler point carries no mass: hence FD_ATOL)."""
    import jax.numpy as jnp

    s, target_points = problem
    p = jnp.asarray(getattr(example, design))

    def value(x):
        return float(example.value_and_grad(x, target_points, s)[0][0])

    (_, terms), grad = example.value_and_grad(p, target_points, s)
    grad = np.asarray(grad)
    assert np.all(np.isfinite(grad))
    if design == "REFERENCE":
        assert float(terms["path"]) < 1e-20
        # translating both ground pivots translates the whole linkage: same torque, forces
        names = example.PARAM_NAMES
        for axis in "xy":
            g2, g4 = grad[names.index(f"O2{axis}")], grad[names.index(f"O4{axis}")]
            assert abs(g2 + g4) <= 1e-9 * abs(g2)
    fd = np.array(
        [
            (value(p.at[k].add(FD_STEP)) - value(p.at[k].add(-FD_STEP))) / (2 * FD_STEP)
            for k in range(p.shape[0])
        ]
    )
    for name, g, f in zip(example.PARAM_NAMES, grad, fd):
        assert abs(g - f) <= FD_RTOL * abs(f) + FD_ATOL, (
            f"dL/d{name}: grad {g:.10g}, finite differences {f:.10g}"
        )


def test_quick_optimization_reduces_loss_and_assembles(quick_run):
    result, _ = quick_run
    assert np.all(np.isfinite(result["history"]))
    assert result["loss_initial"] / result["loss_final"] >= LOSS_REDUCTION
    check = result["assembly"]
    assert check["max_phi"] < PHI_TOL
    assert check["min_margin"] > 0.0
    assert check["branch_deviation"] < 1e-8


def test_quick_optimization_writes_figures(quick_run):
    result, out = quick_run
    for name in ("coupler_curve.png", "torque.png", "reactions.png"):
        path = out / name
        assert path.exists() and path.stat().st_size > 10_000, name
        assert str(path) in result["figures"].values()
