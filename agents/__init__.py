"""Memory agents and the one LLM gateway every part of memevo calls (``memevo.agents``)."""

import os

# memevo reads the price table litellm installs (llm/pricing.py); without this, importing DSPy (litellm) tries to
# download litellm's price list at start-up, which stalls for ~30 s on a machine without internet.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
