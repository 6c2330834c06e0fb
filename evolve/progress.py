"""Progress lines for long commands: memevo's own messages at INFO, library chatter kept out."""

from __future__ import annotations

import logging

QUIET_LIBRARIES = ("httpx", "httpcore", "openai", "LiteLLM", "litellm", "dspy", "mlflow", "optuna", "alembic")


def show_progress() -> None:
    """Print memevo's progress with timestamps; third-party request logs would bury it."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
