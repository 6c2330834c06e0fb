"""Remove anything that looks like a credential from text an endpoint sent, before a user sees it.

Endpoint error bodies are shown in messages, and some endpoints echo the request's key back (a 401 that
quotes the "invalid key" it got). ``redact`` replaces, with ``[redacted]``:

- the value of every environment variable whose name says it holds a secret (``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``), when it is long enough to be one: an echoed key is caught whatever its form;
- bearer tokens, ``key=value`` / ``"api_key": "value"`` pairs, and the shapes of well-known keys (OpenAI
  ``sk-...``, Hugging Face ``hf_...``, GitHub ``ghp_...``, AWS ``AKIA...``, Google ``AIza...``, Slack ``xox.-...``);
- any other run of 32 or more letters, digits, ``_`` and ``-`` that mixes letters and digits (a key of unknown
  shape; a request id in an error body is lost with it, which costs nothing).
"""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values of secret variables (``test``, ``none``) are not replaced: they match ordinary words."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"),
    re.compile(r"""(?i)\b([a-z_-]*(?:api[_-]?key|[a-z]+[_-]key|token|secret|password))(["']?\s*[:=]\s*["']?)[^\s"',;}]+"""),
    re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}"
               r"|AIza[0-9A-Za-z_-]{30,}|xox[abposr]-[A-Za-z0-9-]{8,})"),
    re.compile(r"\b(?=[A-Za-z0-9_-]*[A-Za-z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{32,}"),
)


def _keep_label(match: re.Match[str]) -> str:
    """A pattern's match with its label (``Bearer``, ``api_key":"``) kept and the secret replaced."""
    groups = [group for group in match.groups() if group is not None]
    if not groups:
        return REDACTED
    label = match.group(1)
    if label.lower() in ("bearer", "basic"):
        return f"{label} {REDACTED}"
    return f"{label}{match.group(2)}{REDACTED}"


def secret_values() -> list[str]:
    """Values of the environment's secret-looking variables, longest first (so a key inside another goes too)."""
    values = {value for name, value in os.environ.items()
              if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every credential-like part replaced by ``[redacted]``."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(_keep_label, text)
    return text
