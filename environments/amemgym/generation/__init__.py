"""AMemGym's LLM generation pipeline (reference section C), resumable per user and stage.

Stage → module: C.0-C.1 ``personas``; C.2-C.4 ``schema``; C.5-C.7 ``evolution``; C.8-C.9 ``answers``;
C.10-C.11 plus the exposure and leakage checks ``queries``; C.12 ``timing``; C.13 ``convert``.
``pipeline`` runs them per user with the on-disk ``cache``; ``command`` is ``memevo env generate``.
Every LLM stage goes through ``ask.ask_json`` (explicit JSON schema, validation, multi-turn repair).
"""
