"""Shared test setup: importing jaxmb switches on float64 before any test builds arrays."""

import numpy as np
import pytest

import jaxmb  # noqa: F401  (side effect: jax_enable_x64)


@pytest.fixture
def rng():
    """A seeded numpy generator, fresh for every test."""
    return np.random.default_rng(20240613)
