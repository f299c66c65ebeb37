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


_EXTERNAL = re.compile(
    r"""<(?:script|img|iframe|link|source|audio|video|embed|object)\b[^>]*?"""
    r"""\b(?:src|href|data)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]+"""
    r"""|@import\s+(?:url\()?\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""",
    re.IGNORECASE,
)


def external_references(page: str) -> list[str]:
    """Every reference in ``page`` that a browser would fetch from the network (should be none)."""
    return [m.group(0)[:120] for m in _EXTERNAL.finditer(page)]


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
            f"report.html would load {len(outside)} outside resource(s), e.g. {outside[0]!r}"
        )
    html_path = out / "report.html"
    html_path.write_text(page, encoding="utf-8")
    return {"notebook": nb_path, "html": html_path}


