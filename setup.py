"""Maps the design's top-level folders onto the ``memevo.*`` import names.

The folders ``agents/``, ``environments/`` and ``evolve/`` are fixed by the design, but their bare names
collide with other distributions (the OpenAI Agents SDK installs ``agents``), so each is installed as a
subpackage of the ``memevo`` namespace. The shared base every layer may import (errors, the pydantic base,
config reading, atomic and damaged files) is its own package, ``memevo.core``; with the top-level folders
fixed, its folder sits under the lowest layer's, ``agents/core/``, but it is not part of ``memevo.agents``.
The ``memevo`` package itself (``memevo.optimize``, ``__version__``, ``py.typed``) is ``evolve/package_root/``, as
the API it opens is the last layer's.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ("agents", "environments", "evolve")
CORE = "agents/core"
ROOT = "evolve/package_root"

setup(
    packages=["memevo", "memevo.core", *(f"memevo.{name}" for name in find_packages(
        include=[f"{top}*" for top in TOP_LEVEL], exclude=["agents.core", "agents.core.*", "evolve.package_root"]))],
    package_dir={"memevo": ROOT, "memevo.core": CORE, **{f"memevo.{top}": top for top in TOP_LEVEL}},
    package_data={"memevo": ["py.typed"]},
)
