"""The LLM gateway: one async client for OpenAI-compatible endpoints, shared by every role."""
