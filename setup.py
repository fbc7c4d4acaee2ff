"""The one thing pyproject.toml cannot say: protocol/_record_walk.c, a C extension (issue 28).

Metadata, dependencies and packages stay in pyproject.toml. The extension is optional:
where it does not build (no compiler, no Python headers) the install goes on and
protocol/record_validation.py walks records in pure Python (``record_validation.NATIVE``
says which). ``pip install -e .`` builds it in place, beside its source, where
``import protocol._record_walk`` finds it from the repo root.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("protocol._record_walk", ["protocol/_record_walk.c"], optional=True),
])
