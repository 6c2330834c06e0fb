"""The base of memevo's pydantic models: each builds its validator and serializer when first used.

A pydantic model builds them when its class is made unless told to defer. Commands import far more models than a
run uses (a ``memevo eval`` ~55, of which it validates or dumps ~20), and building them all cost ~70 ms of the
~0.45 s before an eval's first request (measured). Deferred, a model that is never used costs nothing, and a
nested one is built once, inside the model that holds it. The first use of a model pays its build; pydantic
(2.14 and later) makes concurrent first uses from several threads safe.

Mutable defaults are written as values (``= []``, ``Field({}, ...)``), which pydantic copies for each instance, not as
``default_factory=list``: building a model, pydantic reads a default factory's signature, and for a builtin Python
parses its text signature with ``tokenize``, whose patterns compile once per process, ~20 ms (measured) paid by the
first model built, in the middle of a run. ``tests/test_code_rules.py`` holds the rule.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    """``BaseModel`` whose schema is built on first use; subclasses add their own settings as usual."""

    model_config = ConfigDict(defer_build=True)
