"""memevo's own default prompt texts, one module per concern, each declared as a ``ComponentSpec``.

Every component lists the placeholders it must keep and, where the agent parses the reply, a clause
that tells the LLM the output format; a proposed replacement is checked against both
(``memevo.agents.templates.prompt_problems``).
"""
