"""AMemGym, one environment among the others: its data model and loaders, generators, procedural worlds, user
simulators, figures and live evaluation; ``environment.AMemGymEnvironment`` is its ``Environment``."""
