"""The one thing pyproject.toml cannot say: the C extensions of issue 28.

protocol/_record_walk.c (record_validation's record walk), protocol/_gzip_members.c
(compression's bounded gzip reader, on zlib) and protocol/_frame_body.c (framing's
large frame bodies received into their own bytes). Metadata, dependencies and packages stay in
pyproject.toml. Each extension is optional: where one does not build (no compiler, no
Python headers, no zlib headers) the install goes on and its pure-Python reference runs
instead (``record_validation.NATIVE``, ``compression.NATIVE_GZIP``,
``framing.NATIVE_FRAME_BODY`` say which).
``pip install -e .`` builds them in place, beside their sources, where ``import
protocol._record_walk`` finds them from the repo root.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("protocol._record_walk", ["protocol/_record_walk.c"], optional=True),
    Extension("protocol._gzip_members", ["protocol/_gzip_members.c"], libraries=["z"],
              optional=True),
    Extension("protocol._frame_body", ["protocol/_frame_body.c"], optional=True),
])
