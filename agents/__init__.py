"""Memory agents and the one LLM gateway every part of memevo calls (``memevo.agents``)."""
