"""Exporting the executed notebook to one self-contained, offline ``report.html``.

Offline by construction: figures are embedded as ``data:`` PNGs, Vega-Lite specs are inlined
as JSON, the Vega bundle comes from ``vl-convert-python`` and is inlined once, and the page
template (``assets/report.html.j2``) has no ``<script src>``, ``<link>`` or ``@import``;
:func:`external_references` checks the page after export and :func:`render` refuses to write
one that has any.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import WorkbenchError
from .assets import _EMBED_JS, _TEMPLATE, CSS
from .kernel import execute
from .markup import esc


def _inline_script(code: str) -> str:
    return (
        "<script>" + code.replace("</script", "<\\/script").replace("<!--", "<\\!--") + "</script>"
    )


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert-python (no network).

    Building it takes seconds, so it is kept in ``$XDG_CACHE_HOME/workbench`` (default
    ``~/.cache/workbench``) per vl-convert version; an unwritable cache only costs the time.
    """
    import vl_convert

    version = metadata.version("vl-convert-python")
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workbench"
    cached = folder / f"vega-bundle-{version}.js"
    try:
        text = cached.read_text(encoding="utf-8")
        if "window.vegaEmbed" in text:
            return text
    except OSError:
        pass
    text = str(vl_convert.javascript_bundle())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(cached)
    except OSError:
        pass
    return text


# Elements and attributes a browser fetches on its own (links a reader clicks are not loads).
_LOADS: dict[str, tuple[str, ...]] = {
    "script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "frame": ("src",),
    "link": ("href",), "source": ("src", "srcset"), "audio": ("src",),
    "video": ("src", "poster"), "track": ("src",), "embed": ("src",), "object": ("data",),
    "input": ("src",), "image": ("href", "xlink:href"), "use": ("href", "xlink:href"),
    "feimage": ("href", "xlink:href"),
}
_REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"""url\(\s*(["']?)([^"')]*)\1\s*\)|@import\s+(["'])([^"']*)\3""",
                      re.IGNORECASE)


def _css_remote(css: str) -> list[str]:
    found = []
    for m in _CSS_URL.finditer(css):
        url = m.group(2) if m.group(2) is not None else m.group(4)
        if url and _REMOTE.match(url):
            found.append(url)
    return found


def external_references(page: str) -> list[str]:
    """Every resource in ``page`` a browser would fetch from the network (should be none).

    The page is parsed as HTML, so only what loads counts: a ``src``/``href``/``data``/
    ``srcset``/``poster`` attribute of an element that fetches it (script, img, link, iframe,
    source, media, embed, object, SVG image/use), ``url()``/``@import`` in a ``style``
    attribute or ``<style>`` element, and a ``<meta http-equiv=refresh>`` target. Text (even
    ``url(http://...)`` written in a verdict, which the report escapes) is never a load. Each
    entry reads ``<img src> http://x/a.png (page line 12)``.
    """
    from html.parser import HTMLParser

    found: list[str] = []

    class Finder(HTMLParser):
        in_style = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            line = self.getpos()[0]
            tag = tag.lower()
            for name, value in attrs:
                if value is None:
                    continue
                name = name.lower()
                urls: list[str] = []
                if name in _LOADS.get(tag, ()):
                    parts = [p.strip().split(" ")[0] for p in value.split(",")] if name == "srcset" else [value]
                    urls = [u for u in parts if _REMOTE.match(u)]
                elif name == "style":
                    urls = _css_remote(value)
                elif tag == "meta" and name == "content" and any(
                        (k or "").lower() == "http-equiv" and (v or "").lower() == "refresh"
                        for k, v in attrs):
                    target = value.split("url=", 1)[-1] if "url=" in value.lower() else ""
                    urls = [target] if _REMOTE.match(target) else []
                found.extend(f"<{tag} {name}> {u[:100]} (page line {line})" for u in urls)
            if tag == "style":
                self.in_style = True

        def handle_endtag(self, tag: str) -> None:
            if tag.lower() == "style":
                self.in_style = False

        def handle_data(self, data: str) -> None:
            if self.in_style:
                line = self.getpos()[0]
                found.extend(f"<style> {u[:100]} (page line {line})" for u in _css_remote(data))

    finder = Finder(convert_charrefs=True)
    finder.feed(page)
    finder.close()
    return found


def _origin(ref: str, executed: Path) -> str:
    """Which notebook cell's output holds the resource of ``ref`` (for the refusal message)."""
    import nbformat

    url = ref.split("> ", 1)[-1].rsplit(" (page line", 1)[0]
    try:
        nb = nbformat.read(str(executed), as_version=4)
    except Exception:  # noqa: BLE001 - only improves the message
        return "the page template"
    for i, cell in enumerate(nb.cells, start=1):
        if url and url in json.dumps(cell.get("outputs", [])):
            return f"the output of notebook cell {i} ({executed.name})"
    return "the page template"


def export_html(executed: str | Path, title: str = "workbench report") -> str:
    """The reviewer's page from an executed notebook: code hidden, nothing fetched from anywhere."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = nbformat.read(str(executed), as_version=4)
    exporter = HTMLExporter(
        template_name="lab",
        template_file="workbench_report.html.j2",
        extra_loaders=[DictLoader({"workbench_report.html.j2": _TEMPLATE})],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        anchor_link_text="",
    )
    exporter.register_preprocessor(
        TagRemovePreprocessor(
            remove_cell_tags={"parameters", "injected-parameters", "notebook-only"}
        ),
        enabled=True,
    )
    body_probe = json.dumps([c.get("outputs", []) for c in nb.cells])
    scripts = ""
    if "wb-vega-spec" in body_probe:
        scripts = _inline_script(vega_bundle()) + _inline_script(_EMBED_JS)
    resources = {"wb": {"title": esc(title), "css": CSS, "scripts": scripts}}
    page, _ = exporter.from_notebook_node(nb, resources=resources)
    return str(page)


def render(
    out_dir: str | Path,
    parameters: Mapping[str, Any],
    notebook: str | Path | None = None,
    progress: bool = False,
    cwd: str | Path | None = None,
) -> dict[str, Path]:
    """Execute the notebook (papermill) and export ``report.html``; returns both paths.

    Raises :class:`WorkbenchError` when a cell fails or when the page would reference anything
    outside itself.
    """
    out = Path(out_dir)
    nb_path = execute(out, parameters, notebook, progress=progress, cwd=cwd)
    inputs = parameters.get("inputs") or []
    names = [Path(str(p)).name for p in inputs]
    title = "Reanalysis: " + (names[0] if len(names) == 1 else f"{len(names)} input files")
    page = export_html(nb_path, title)
    outside = external_references(page)
    if outside:
        raise WorkbenchError(
            f"report.html would load {len(outside)} outside resource(s), e.g. {outside[0]}, "
            f"from {_origin(outside[0], Path(nb_path))}; the report was not written"
        )
    html_path = out / "report.html"
    tmp = out / f".wb-tmp-{os.getpid()}-report.html"
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, html_path)
    finally:
        tmp.unlink(missing_ok=True)
    return {"notebook": nb_path, "html": html_path}


