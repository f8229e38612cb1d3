"""Layer 1, the runtime machinery: checked jit with errors as data (`errors`), traced programs
kept on disk (`program_store`) and the compilation cache (`cache`). The only place that
touches private JAX or equinox APIs."""
