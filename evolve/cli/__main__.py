"""``python -m memevo.evolve.cli``: the ``memevo`` command."""

from memevo.evolve.cli.main import main

main()
