"""The report's document model (headings, paragraphs, tables, figures) and its two renderers.

The report is built once as a list of blocks and rendered twice, so report.md and report.html
cannot drift apart. The HTML embeds its figures as base64 data URIs and its CSS inline: it opens
anywhere, offline, as a single file.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.figures import FigureFile

# --- Document model ------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A relative link (to a run dir or a table) inside a cell or a list item."""

    text: str
    href: str


@dataclass(frozen=True)
class Tag:
    """A short emphasized text with a kind (e.g. a verdict): bold in Markdown, a styled span in HTML."""

    text: str
    kind: str


Inline = str | Link | Tag | list[str | Link | Tag]


@dataclass(frozen=True)
class Heading:
    """A section heading."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph; kind 'banner' or 'note' is rendered prominently."""

    text: str
    kind: str = ""


@dataclass(frozen=True)
class Table:
    """A table with a header row; cells are text or links. css_class marks it in the HTML (e.g. 'claims')."""

    headers: list[str]
    rows: list[list[Inline]]
    css_class: str = ""


@dataclass(frozen=True)
class Bullets:
    """A bulleted list."""

    items: list[Inline]


@dataclass(frozen=True)
class Image:
    """A figure: its PNG (relative to the report for Markdown; embedded in HTML)."""

    figure: FigureFile
    rel: str


Block = Heading | Para | Table | Bullets | Image



def slug(text: str) -> str:
    """A lower-case, dash-separated id for a heading or a CSS class ('What reproduced' -> 'what-reproduced')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --- Rendering: Markdown -------------------------------------------------------------------

def _md_inline(item: Inline, in_table: bool = False) -> str:
    if isinstance(item, Link):
        return f"[{_md_text(item.text, in_table)}](<{item.href}>)"
    if isinstance(item, Tag):
        return f"**{_md_text(item.text, in_table)}**"
    if isinstance(item, list):
        return " ".join(_md_inline(i, in_table) for i in item)
    return _md_text(item, in_table)


def _md_text(text: str, in_table: bool) -> str:
    # "<" escaped so paths like ".../<fw>/log.txt" are not swallowed as HTML tags by renderers.
    text = str(text).replace("<", "\\<")
    return " ".join(text.split()).replace("|", "\\|") if in_table else text


def render_markdown(blocks: Sequence[Block]) -> str:
    """The report as GitHub-flavoured Markdown."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"{'#' * b.level} {b.text}")
        elif isinstance(b, Para):
            prefix = {"banner": "> **", "note": "> "}.get(b.kind, "")
            out.append(prefix + b.text + ("**" if b.kind == "banner" else ""))
        elif isinstance(b, Table):
            lines = ["| " + " | ".join(b.headers) + " |", "|" + "---|" * len(b.headers)]
            lines += ["| " + " | ".join(_md_inline(c, True) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {_md_inline(i)}" for i in b.items))
        elif isinstance(b, Image):
            out.append(f"![{b.figure.title}](<{b.rel}>)\n\n*{b.figure.caption}*")
    return "\n\n".join(out) + "\n"


# --- Rendering: HTML -----------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em;
       color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; } h3 { margin-top: 1.2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 12.5px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td { overflow-wrap: anywhere; max-width: 32em; }
.banner { background: #b00020; color: #fff; font-weight: bold; padding: .8em 1em; border-radius: 4px; }
.note { background: #fff5d6; border-left: 4px solid #e0a800; padding: .6em 1em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 12.5px; color: #555; } code { background: #f4f4f4; padding: 0 .2em; }
.tag { font-weight: bold; padding: 0 .3em; border-radius: 3px; white-space: nowrap; }
.reproduced { background: #d4f4dd; color: #0b5d1e; } .not-reproduced { background: #fbd9d9; color: #8a1010; }
.insufficient-data { background: #eee; color: #555; } .contended { background: #ffe1b3; color: #7a4100; }
.within { color: #0b5d1e; } .outside { color: #8a1010; }
"""


def _html_inline(item: Inline) -> str:
    if isinstance(item, Link):
        return f'<a href="{html.escape(item.href, quote=True)}">{html.escape(item.text)}</a>'
    if isinstance(item, Tag):
        return f'<span class="tag {html.escape(slug(item.kind), quote=True)}">{html.escape(item.text)}</span>'
    if isinstance(item, list):
        return " ".join(_html_inline(i) for i in item)
    return _html_code(str(item))


def _html_code(text: str) -> str:
    # `code` spans are the only Markdown the paragraphs use; render them as <code>.
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def render_html(blocks: Sequence[Block], title: str) -> str:
    """The report as one HTML file: inline CSS, figures embedded as data URIs, no external resource."""
    body: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            body.append(f'<h{b.level} id="{slug(b.text)}">{html.escape(b.text)}</h{b.level}>')
        elif isinstance(b, Para):
            cls = f' class="{b.kind}"' if b.kind else ""
            body.append(f"<p{cls}>{_html_code(b.text)}</p>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
            rows = "".join("<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in row) + "</tr>"
                           for row in b.rows)
            cls = f' class="{html.escape(b.css_class, quote=True)}"' if b.css_class else ""
            body.append(f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Image):
            body.append(f'<figure><img alt="{html.escape(b.figure.title, quote=True)}" '
                        f'src="{_data_uri(b.figure.path)}"><figcaption>{html.escape(b.figure.caption)}'
                        "</figcaption></figure>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


