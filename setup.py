"""Build of jaxmb's compiled batched kernels (everything else is in pyproject.toml).

The extension is optional: without a C++17 compiler `pip install` still succeeds and jaxmb
uses its pure-jnp kernels (jaxmb._linalg.native.available() is then False)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "jaxmb._linalg.native.batched_linalg",
            sources=["jaxmb/_linalg/native/batched_linalg.cc"],
            include_dirs=["third_party/xla_ffi/include"],  # vendored XLA FFI headers
            language="c++",
            extra_compile_args=[
                "-std=c++17",
                "-O3",
                "-fopenmp-simd",
                "-Wno-attributes",
                "-Wno-return-type",
            ],
            optional=True,
        )
    ]
)
