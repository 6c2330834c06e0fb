"""The proxy variables users set, checked before any request: a malformed one is a ``UserInputError`` naming it.

httpx reads ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``ALL_PROXY`` (or their lower-case spellings) when a client is
made. Left to it, ``http://[::1`` ends in a traceback (``httpx.InvalidURL``) and ``junk`` becomes the proxy
``http://junk``, which fails each request later as a connection error, after its retries. Checked here first, each
ends in one line naming the variable. A value without a scheme is read as httpx reads it (``http://`` before it),
and must then name a port (``proxy.corp:3128``): a bare word is no proxy address.
"""

from __future__ import annotations

import importlib.util
import os
import re

import httpx

from memevo.core.errors import UserInputError

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
EXAMPLE = "http://proxy.example.com:3128"
_CREDENTIALS = re.compile(r"(//)[^/@]*@")


def set_proxy_variables() -> list[tuple[str, str]]:
    """The proxy variables set in the environment (either spelling), with their values."""
    named = [spelling for name in PROXY_VARIABLES for spelling in (name, name.lower())]
    return [(name, os.environ[name].strip()) for name in named if os.environ.get(name, "").strip()]


def check_proxies() -> None:
    """``UserInputError`` naming the first proxy variable httpx could not use, or would read as no proxy address."""
    for name, value in set_proxy_variables():
        problem = _problem(value)
        if problem is not None:
            shown = _CREDENTIALS.sub(r"\1***@", value)
            raise UserInputError(f"{problem} in {shown!r}; expected a proxy URL such as {EXAMPLE}, or unset it",
                                 field=name)


def _problem(value: str) -> str | None:
    """What is wrong with one proxy value, None when httpx can use it."""
    if "://" not in value and not re.fullmatch(r"[^/:]+:\d+|\[[0-9A-Fa-f:.]+\]:\d+", value):
        return "no scheme and no port"
    try:
        url = httpx.URL(value if "://" in value else f"http://{value}")
    except httpx.InvalidURL as error:
        return f"not a URL ({error})"
    if url.scheme not in PROXY_SCHEMES:
        return f"the scheme {url.scheme!r} is none of {', '.join(PROXY_SCHEMES)}"
    if not url.host:
        return "no host"
    if url.port is not None and not 0 < url.port < 65536:
        return f"the port {url.port} is out of range"
    if url.scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        return "a SOCKS proxy needs pip install 'httpx[socks]'"
    return None
