"""AMemGym's LLM generation pipeline (stages C.0-C.13), resumable per user and stage."""
