"""Memory systems from other projects (Mem0, A-Mem) as memevo agent kinds whose prompts evolve.

Each kind lives in its own module; a library a kind needs is an optional extra, imported when an agent of
that kind is built, so listing the kinds never needs it.
"""
