"""Layer 0, linear algebra: every factorization and rank decision of jaxmb.

`dense` (pivoted QR, SVD, solves, rank decisions; one matrix to LAPACK at a time under vmap),
`vmap_rules` (the pieces of every custom vmap rule), `native` (the compiled batched kernels,
C++ through XLA FFI) and `sparse_cholesky` (the static-pattern block Cholesky of
M + C^T A C)."""
