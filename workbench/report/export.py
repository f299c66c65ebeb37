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
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench.common.errors import WorkbenchError
from workbench.common.text import gate_summary
from workbench.report.assets import _EMBED_JS, _TEMPLATE, CSS, TABLES_JS
from workbench.report.kernel import execute
from workbench.report.markup import FRAGMENT_MIME, esc


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


#: Cells whose outputs are not part of the page (papermill's and the hand-work instructions).
REMOVED_TAGS = frozenset({"parameters", "injected-parameters", "notebook-only"})


def title_for(inputs: Any) -> str:
    """The page title for a list of input paths."""
    names = [Path(str(p)).name for p in inputs or []]
    return "Reanalysis: " + (names[0] if len(names) == 1 else f"{len(names)} input files")


def page(fragments: Sequence[str], title: str = "workbench report") -> str:
    """The reviewer's page: the report's HTML fragments, in order, in one offline document.

    The fragments are what the notebook's cells display (each a :class:`Html`); the Vega
    bundle is inlined only when a chart needs it. Both ways to the page use this function:
    :func:`finish` in the kernel and :class:`WorkbenchExporter` (``jupyter nbconvert --to
    workbench``) on an executed notebook, so they give the same bytes.
    """
    body = "\n".join(str(f) for f in fragments)
    scripts = _inline_script(TABLES_JS)
    if "wb-vega-spec" in body:
        scripts += _inline_script(vega_bundle()) + _inline_script(_EMBED_JS)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        '<meta name="generator" content="workbench report">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n"
        f'<body class="wb-body"><main class="wb-page">\n{body}\n</main>\n{scripts}\n</body>\n</html>\n'
    )


def notebook_fragments(nb: Any) -> list[str]:
    """The ``text/html`` outputs of an executed notebook's report cells, in order."""
    out = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        if REMOVED_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        for o in cell.get("outputs", []):
            data = o.get("data") or {}
            if o.get("output_type") not in ("execute_result", "display_data"):
                continue
            # the class-based copy the page is built from; text/html is the inline-styled one
            h = data.get(FRAGMENT_MIME, data.get("text/html"))
            if h is not None:
                out.append("".join(h) if isinstance(h, list) else str(h))
    return out


def _kernel_fragments(start: int | None) -> list[str]:
    """What this IPython session displayed as :class:`Html` since cell ``start`` (the build)."""
    from IPython import get_ipython

    from workbench.report.markup import Html

    shell = get_ipython()
    if shell is None:
        raise WorkbenchError("finish() collects the cells' outputs: run it in the notebook")
    outs = shell.user_ns.get("Out", {})
    # IPython numbers a cell's output one below the execution_count seen while it runs; the
    # page starts at the header the build cell shows (the last one, if build ran twice)
    first = (start or 1) - 1
    shown = [str(v) for k, v in sorted(outs.items()) if k >= first and isinstance(v, Html)]
    heads = [i for i, v in enumerate(shown) if 'class="wb-header"' in v]
    return shown[heads[-1]:] if heads else shown


class GateFailed(WorkbenchError):
    """The preregistered gate failed (the report is written first, so the reader sees why).

    A user's verdict, not a bug: in the notebook's kernel (papermill) it shows as its one
    message line, not as a traceback through the workbench's own code.
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's traceback
        return [f"{type(self).__name__} in the last cell, wr.finish(R): {self}"]


def finish(r: Any, fragments: Sequence[str] | None = None) -> None:
    """The notebook's last cell: write ``report.html`` and raise if the gate failed.

    The page is :func:`page` over what the report cells displayed since :func:`build` (run
    the notebook top to bottom: a cell run twice by hand shows twice). Raises
    :class:`GateFailed` when the preregistered gate failed, unless ``no_gate``, so
    ``papermill`` exits non-zero as ``workbench report`` does.
    """
    parts = list(fragments) if fragments is not None else _kernel_fragments(r.kernel_start)
    text = page(parts, title_for(r.parameters.get("inputs")))
    outside = external_references(text)
    if outside:
        url = outside[0].split("> ", 1)[-1].rsplit(" (page line", 1)[0]
        cell = next((i for i, part in enumerate(parts, start=1) if url and url in part), None)
        origin = f"report output {cell} of {len(parts)}" if cell else "the page template"
        raise WorkbenchError(
            f"report.html would load {len(outside)} outside resource(s), e.g. {outside[0]}, "
            f"from {origin}; the report was not written"
        )
    r.out_dir.mkdir(parents=True, exist_ok=True)
    tmp = r.out_dir / f".wb-tmp-{os.getpid()}-report.html"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, r.out_dir / "report.html")
    finally:
        tmp.unlink(missing_ok=True)
    gate = r.doc.get("gate") or {}
    if not gate.get("passed", True) and not r.no_gate:
        raise GateFailed(
            f"the preregistered gate failed: {gate_summary(gate)}; {r.out_dir / 'report.html'} "
            "shows why (set no_gate to run through)"
        )


def _exporter_class() -> type:
    from nbconvert.exporters import Exporter

    class WorkbenchExporter(Exporter):  # type: ignore[misc]
        """``jupyter nbconvert --to workbench NB.ipynb``: the same offline page as the report."""

        export_from_notebook = "workbench report"
        output_mimetype = "text/html"

        def _file_extension_default(self) -> str:
            return ".html"

        def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
            nb_copy, resources = super().from_notebook_node(nb, resources, **kw)
            params = (nb.get("metadata", {}).get("papermill") or {}).get("parameters") or {}
            return page(notebook_fragments(nb_copy), title_for(params.get("inputs"))), resources

    return WorkbenchExporter


def __getattr__(name: str) -> Any:
    # nbconvert is imported only when the exporter is asked for (entry point
    # ``nbconvert.exporters: workbench``), not for every report import
    if name == "WorkbenchExporter":
        return _exporter_class()
    raise AttributeError(name)


def render(
    out_dir: str | Path,
    parameters: Mapping[str, Any],
    notebook: str | Path | None = None,
    progress: bool = False,
    cwd: str | Path | None = None,
) -> dict[str, Path]:
    """Execute the notebook (papermill); its last cell writes ``report.html``.

    Raises :class:`WorkbenchError` when a cell fails or when the page would reference anything
    outside itself. The gate never fails the notebook here (``no_gate``): the caller decides
    the exit code.
    """
    out = Path(out_dir)
    params = {**parameters, "no_gate": True}
    nb_path = execute(out, params, notebook, progress=progress, cwd=cwd)
    html_path = out / "report.html"
    if not html_path.is_file():
        raise WorkbenchError(f"the report notebook wrote no {html_path}")
    return {"notebook": nb_path, "html": html_path}
