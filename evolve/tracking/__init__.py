"""MLflow tracking of evolutions and ablations.

``store``: the ``Tracker`` that writes runs, metrics, artifacts and prompt versions exactly once;
``payloads``: names, tags and metric sets as MLflow and Optuna show them; ``entries``: what each candidate's
and generation's run holds, built from the evaluations. An evolution reaches them through its MLflow observer
(``memevo.evolve.observers.mlflow_runs``), fed by the loop's events.
"""
