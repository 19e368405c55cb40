"""Targets: which database to drive, and how to show it without its password.

A target is a URL (``sqlite:///relative.db``, ``postgresql://user@host:port/dbname``, …) and the
backend that parsed it (:mod:`wannabet.backends`; each backend documents its URLs and where a
password may come from, so passwords can stay out of experiment files and command lines).

This module holds what every target shares (:class:`Target`, :func:`redact`); parsing a URL is
the business of the backend its scheme selects (:func:`wannabet.backends.parse_target`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from wannabet.backends import Backend
    from wannabet.model import PlaceholderStyle

# user:password@host: the password runs to the LAST "@" before a host without one, so a raw "@"
# in a password is scrubbed too (over-redacting is the safe direction).
_PASSWORD_IN_URL = re.compile(r"(://[^:/@\s]*:)(\S*)(@[^@\s]*)")
_PASSWORD_KV = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Target:
    """A database to drive, as its backend parsed it (:func:`wannabet.backends.parse_target`).

    The target carries its :class:`~wannabet.backends.Backend`, so what differs between
    databases (placeholders, where a password comes from) is asked of the backend that parsed
    it, and this module needs no registry.
    """

    backend: Backend
    url: str  # what the engine connects to; may hold a password: never print it
    path: Path | None = None  # a file-based database's file

    @property
    def kind(self) -> str:
        """The backend's kind (``"sqlite"``, ``"postgresql"``), stored with every run."""
        return self.backend.kind

    @property
    def display(self) -> str:
        """The URL with any password replaced by ``***``."""
        if self.path is not None:
            return f"{self.url.split(':', 1)[0]}:///{self.path}"
        # The backend knows where its URLs carry a password (a DB-API URL's conninfo, encoded).
        return redact(self.url, self.password)

    @property
    def placeholder_style(self) -> PlaceholderStyle:
        return self.backend.placeholder_style

    @property
    def password(self) -> str | None:
        return self.backend.password(self.url)


def url_password(url: str) -> str | None:
    """The password written in a URL's ``user:password@``, decoded; None when there is none."""
    m = _PASSWORD_IN_URL.search(url)
    return unquote(m.group(2)) if m and m.group(2) else None


def redact(text: str, *secrets: str | None) -> str:
    """Replace passwords in URLs, ``password=`` pairs and the given secrets with ``***``."""
    out = _PASSWORD_IN_URL.sub(r"\1***\3", text)
    out = _PASSWORD_KV.sub(r"\1***", out)
    for secret in secrets:
        if secret:
            out = out.replace(secret, "***")
            encoded = quote(secret, safe="")
            if encoded != secret:
                out = out.replace(encoded, "***")
    return out
