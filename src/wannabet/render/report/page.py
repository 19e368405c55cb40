"""The HTML page: a Jinja2 template with autoescape, chart specs as inert JSON, one runtime.

Escaping has two layers, because text reaches the page in two ways:

* text in HTML (names, descriptions, SQL, notes, settings) goes through Jinja2's autoescape;
* chart specifications (which carry condition labels) are JSON inside
  ``<script type="application/json">`` elements, read with ``JSON.parse``. :func:`json_for_html`
  writes ``<``, ``>``, ``&`` and U+2028/U+2029 as ``\\uXXXX`` escapes, so no ``</script>`` or
  ``<!--`` can end the element, whatever a label contains. The charts draw labels as SVG text.

The Vega runtime (vega, vega-lite and vega-embed, bundled by vl-convert) is inlined once per
page; a Content-Security-Policy forbids every network request.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from wannabet.cache import cache_dir, is_private, private_cache_dir
from wannabet.render.format import MISSING, one_line, p_value

if TYPE_CHECKING:
    import altair as alt

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("wannabet.render", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_TEMPLATES.filters["clean"] = lambda v: one_line(str(v))
# A missing figure reads on the page as in every other output.
_TEMPLATES.globals["MISSING"] = MISSING
# p-values round as in every other output (compare's table and sentences).
_TEMPLATES.filters["p_value"] = p_value


def breakable(value: Any) -> Markup:
    """A label, cleaned and escaped, that may break after each comma (between the factors of
    ``synchronous=OFF,cache=2000``) so a table column of labels can be narrow."""
    return Markup(",<wbr>").join(Markup.escape(one_line(str(value))).split(","))


_TEMPLATES.filters["breakable"] = breakable


def svg_data_url(svg: str) -> str:
    """An SVG document as a ``data:`` URL: a flame graph is shown in an iframe of its own, as
    the SVG document it is (its script expects one), and nothing is fetched."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")


_TEMPLATES.filters["svg_data_url"] = svg_data_url


@dataclass(frozen=True, slots=True)
class Chart:
    """One plot of the page: its element id, a stable key, a title, its Vega-Lite spec as the
    page embeds it, and the Altair chart it was made from (to show, change or save in a
    notebook; its labels are as stored, where the spec's are cleaned to one line)."""

    element_id: str
    key: str
    title: str
    spec: Mapping[str, Any]
    altair: alt.TopLevelMixin
    note: str = ""


_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def json_for_html(value: Any) -> Markup:
    """JSON that is inert inside any HTML ``<script>`` element and valid for ``JSON.parse``."""
    text = json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    return Markup(_UNSAFE_RE.sub(lambda m: _UNSAFE[m.group()], text))


def vega_lite_version() -> str:
    """The Vega-Lite version of Altair's schema in vl-convert's spelling (``"v6_4"``)."""
    import altair

    return "_".join(altair.SCHEMA_VERSION.split(".")[:2])


@functools.cache
def vega_runtime() -> Markup:
    """vega-embed with Vega and Vega-Lite, as one script exposing ``window.vegaEmbed``.

    Built by vl-convert (about 0.9 MB, 1.5 s of bundling) and kept in the user's cache
    directory, keyed by vl-convert's and Vega-Lite's versions, so only the first report after
    an upgrade pays for it. The bundle never contains ``</script``; the check keeps it so if a
    future version did.
    """
    name = f"vega-runtime-{version('vl-convert-python')}-{vega_lite_version()}.js"
    bundle = _read_cached(name)
    if bundle is None:
        import vl_convert

        # The runtime's Vega-Lite must be the one Altair writes its specs for (vl-convert's
        # default is its newest), as Altair's own inline renderer chooses it.
        bundle = vl_convert.javascript_bundle(vl_version=vega_lite_version())  # type: ignore[call-arg]
        _write_cached(name, bundle)
    if re.search(r"</script", bundle, re.IGNORECASE):
        bundle = re.sub(r"</(script)", r"<\\/\1", bundle, flags=re.IGNORECASE)
    return Markup(bundle)


def _read_cached(name: str) -> str | None:
    """The cached text, or None if absent, unreadable or not what was written (its first line
    holds the SHA-256 of the rest, so a damaged file is rebuilt, never inlined)."""
    try:
        directory = cache_dir()
        if not is_private(directory):
            return None
        with (directory / name).open(encoding="utf-8", newline="") as handle:
            head, _, text = handle.read().partition("\n")
    except (OSError, RuntimeError, UnicodeDecodeError):  # RuntimeError: no home directory
        return None
    return text if head == _digest_line(text) else None


def _digest_line(text: str) -> str:
    return "// sha256 " + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_cached(name: str, text: str) -> None:
    """Write atomically (a reader sees the whole file or none); a cache that cannot be
    written is no error, the next report just bundles again."""
    directory = private_cache_dir()
    if directory is None:
        return
    try:
        for stale in directory.glob(".vega-runtime-*"):  # left by a process killed mid-write
            if time.time() - stale.stat().st_mtime > 3600:
                stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(_digest_line(text) + "\n" + text)
            os.replace(tmp, directory / name)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, RuntimeError):
        pass


def render_page(context: Mapping[str, Any], charts: Sequence[Chart]) -> str:
    """The complete HTML document."""
    template = _TEMPLATES.get_template("report.html.j2")
    return template.render(
        **context,
        chart_specs=[(c.element_id, json_for_html(c.spec)) for c in charts],
        runtime=vega_runtime(),
    )
