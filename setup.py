"""Maps the design's top-level folders onto the ``memevo.*`` import names.

The folders ``agents/``, ``environments/`` and ``evolve/`` are fixed by the design, but their bare names
collide with other distributions (the OpenAI Agents SDK installs ``agents``), so each is installed as a
subpackage of the ``memevo`` namespace. The shared base every layer may import (errors, the pydantic base,
config reading, atomic and damaged files) is its own package, ``memevo.core``; with the top-level folders
fixed, its folder sits under the lowest layer's, ``agents/core/``, but it is not part of ``memevo.agents``.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ("agents", "environments", "evolve")
CORE = "agents/core"

setup(
    packages=["memevo.core", *(f"memevo.{name}" for name in find_packages(
        include=[f"{top}*" for top in TOP_LEVEL], exclude=["agents.core", "agents.core.*"]))],
    package_dir={"memevo.core": CORE, **{f"memevo.{top}": top for top in TOP_LEVEL}},
)
