"""`enable_compilation_cache`: keep compiled programs on disk for later processes.

jaxmb's eager entry points (simulate, reactions, inverse_dynamics, statics, solvability,
assemble, consistent_velocity and their gradients) compile programs without host callbacks
(`jaxmb._runtime.errors`), so JAX's persistent compilation cache stores them and a second process
that runs the same calls loads them instead of compiling.
"""

import os
import warnings

from .config import jax_setting

DEFAULT_SUBDIR = os.path.join("jaxmb", "jax")


def default_cache_dir() -> str:
    """`$JAX_COMPILATION_CACHE_DIR` if set, else `$XDG_CACHE_HOME/jaxmb/jax` (default
    ~/.cache/jaxmb/jax)."""
    explicit = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, DEFAULT_SUBDIR)


def enable_compilation_cache(
    path: str | os.PathLike | None = None,
    *,
    min_compile_time_secs: float = 0.0,
    store_programs: bool = True,
) -> str | None:
    """Switch on JAX's persistent compilation cache for this process, in `path` (default
    `default_cache_dir()`: ~/.cache/jaxmb/jax). Every program taking at least
    `min_compile_time_secs` to compile is stored (0: all, so a second run compiles nothing).

    jaxmb's own programs, called eagerly, are also kept traced (`jax.export`) in
    `<path>/jaxmb-programs`, so a later process does not trace them either
    (`store_programs=False` or the environment variable `JAXMB_PROGRAM_STORE=0` leaves that
    off).

    The folder (and `jaxmb-programs` in it) is created where missing, readable and writable by
    you only. Whoever can write to it chooses the programs later processes run (the cache
    holds compiled machine code), so a folder that is a file, cannot be created, belongs to
    another user or is writable by group or others (POSIX) is refused: an explicit `path`
    raises ValueError naming the folder and the problem; the default folder
    (`$JAX_COMPILATION_CACHE_DIR` or ~/.cache/jaxmb/jax) gives a one-line warning instead and
    the cache stays off, JAX's own use of `$JAX_COMPILATION_CACHE_DIR` included, so that the
    program (or the `jaxmb` command) runs, only without the cache.

    Does nothing when the environment sets `JAXMB_NO_CACHE=1`. Returns the folder used, or
    None when switched off. Call it before the first computation, e.g. after `import jaxmb`.

    ```python
    import jaxmb as mb
    mb.enable_compilation_cache()
    ```
    """
    if os.environ.get("JAXMB_NO_CACHE") == "1":
        return None
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    from . import program_store as _program_store

    explicit = path is not None
    path = os.fspath(default_cache_dir() if path is None else path)
    store = store_programs and os.environ.get("JAXMB_PROGRAM_STORE") != "0"
    for folder in [path] + ([os.path.join(path, _program_store.SUBFOLDER)] if store else []):
        problem = _program_store.folder_problem(folder)
        if problem is None:
            continue
        if explicit:
            raise ValueError(f"enable_compilation_cache: {folder} {problem}")
        source = (
            "from JAX_COMPILATION_CACHE_DIR"
            if os.environ.get("JAX_COMPILATION_CACHE_DIR")
            else "the default cache folder"
        )
        warnings.warn(f"the compilation cache is off: {folder} ({source}) {problem}", stacklevel=2)
        if jax_setting("jax_compilation_cache_dir") is not None and jax_setting(
            "jax_compilation_cache_dir"
        ) in (path, os.environ.get("JAX_COMPILATION_CACHE_DIR")):
            jax.config.update("jax_compilation_cache_dir", None)  # JAX read it from there
            compilation_cache.reset_cache()
        _program_store.disable()
        return None
    if jax_setting("jax_compilation_cache_dir") != path:
        jax.config.update("jax_compilation_cache_dir", path)
        compilation_cache.reset_cache()  # a process that already compiled re-reads the setting
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_secs))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    if store:
        _program_store.enable(path)
    else:
        _program_store.disable()
    return path
