"""Observers of a run's events, each in a module of its own: the score plot, the terminal, and the trackers'
(``tracker.Tracker``; MLflow's is ``mlflow_tracker``). ``memevo.evolve.plugins`` names them and opens a run's."""
