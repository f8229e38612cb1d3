"""Independent numpy references for the tests (and the benchmarks' baseline): no jax, no jaxmb.

- `planar`: rotation matrices, body poses in stacked coordinates, rigid motions;
- `pairs`: the constraint rows (Phi, C, b, gamma) of every pair type and the generalized forces
  of the force elements, derived by hand from seeds 001 and 003;
- `linalg`: ranks, null spaces and the pivoted-QR solvability test of seed 001, section 3.3;
- `reference_numpy`: the benchmark models with hand-coded rows, integrated by scipy.

Import as `from oracle import pairs` (pytest puts tests/ on sys.path; the benchmarks add it).
"""
