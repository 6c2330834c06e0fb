"""What a person sees on the run's pages: the ``memevo ui`` prompt links, the parent run's outcome."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from memevo.evolve.observers.mlflow_ui import prompt_pages


def test_a_prompt_with_one_version_is_not_offered_a_compare(tmp_path: Path) -> None:
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    client.register_prompt("run-write_prompt", "seed {{q}}")
    assert prompt_pages(client, "run") == [("prompt run-write_prompt (one version: the seed's, never changed)",
                                            "#/prompts/run-write_prompt?promptVersion=1")]
    client.register_prompt("run-write_prompt", "best {{q}}")
    assert prompt_pages(client, "run")[0][0] == "prompt run-write_prompt (press Compare: seed -> best)"
