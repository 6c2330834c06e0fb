"""Maps the design's top-level folders onto the ``memevo.*`` import names.

The folders ``agents/``, ``environments/`` and ``evolve/`` are fixed by the design, but their bare names
collide with other distributions (the OpenAI Agents SDK installs ``agents``), so each is installed as a
subpackage of the ``memevo`` namespace.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ("agents", "environments", "evolve")

setup(
    packages=[f"memevo.{name}" for name in find_packages(include=[f"{top}*" for top in TOP_LEVEL])],
    package_dir={f"memevo.{top}": top for top in TOP_LEVEL},
)
