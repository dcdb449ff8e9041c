"""``diffflow profile FILE --html OUT.html``: the profile's tables as one self-contained page.

No script, no font, no style sheet is fetched: the page is the tables
(:mod:`.profile_tables`) and a bar chart of the rules' time drawn as inline SVG.

>>> from diffflow.datalog.cli.profile_file import new_profile
>>> from diffflow.datalog.cli.profile_tables import summary_tables
>>> p = new_profile("a.dl", 1, [{"step": 0, "wall_ns": 10, "sizes": {}}],
...     [{"id": 1, "location": "a.dl:3", "text": "r(x) :- e(x) , x < 2.", "relation": "r",
...       "stratum": None}], [], [[0, "rule", 1, -1, 7, 2, 2, 1]], [])
>>> text = page(p, summary_tables(p), "summary", "p.json")
>>> text.startswith("<!DOCTYPE html>"), "x &lt; 2" in text, "http" in text
(True, True, False)
"""
from __future__ import annotations

from html import escape

from diffflow.dataflow.origin import one_line

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 0.3em; }
th, td { padding: 0.2em 0.7em; border-bottom: 1px solid #ddd; }
th { background: #f0f0f0; text-align: left; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
td.l { text-align: left; }
p.note { color: #666; font-size: 0.9em; margin-top: 0; }
h2 { font-size: 1.1em; margin-top: 1.6em; }
"""


def page(profile: dict, tables: list, title: str, source: str) -> str:
    """The HTML page of ``tables`` (``title``: what they show; ``source``: the profile's path)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>diffflow profile: {escape(str(profile.get('program')))} ({escape(title)})"
             "</title>", f"<style>{_STYLE}</style></head><body>",
             f"<h1>diffflow profile of {escape(str(profile.get('program')))}</h1>",
             f"<p class=\"note\">{escape(title)}, from {escape(source)}</p>"]
    if title == "summary":
        parts.append(_chart(profile))
    for table in tables:
        parts.append(f"<h2>{escape(table.title)}</h2><table><tr>"
                     + "".join(f"<th>{escape(h)}</th>" for h in table.headers) + "</tr>")
        for row in table.rows:
            parts.append("<tr>" + "".join(f'<td class="{a}">{escape(c)}</td>'
                                          for c, a in zip(row, table.align)) + "</tr>")
        parts.append("</table>")
        if table.note:
            parts.append(f'<p class="note">{escape(table.note)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def _chart(profile: dict, bars: int = 15) -> str:
    """An inline SVG bar chart of the rules' time (the top ``bars``)."""
    at = {c: i for i, c in enumerate(profile["activity"]["columns"])}
    time = {}
    for row in profile["activity"]["rows"]:
        if row[at["kind"]] == "rule":
            time[row[at["key"]]] = time.get(row[at["key"]], 0) + row[at["time_ns"]]
    rules = {r["id"]: r for r in profile["rules"]}
    top = sorted(time.items(), key=lambda item: -item[1])[:bars]
    if not top or top[0][1] <= 0:
        return ""
    most = top[0][1]
    height, label_width, bar_width = 22, 420, 360
    svg = [f'<svg width="{label_width + bar_width + 90}" '
           f'height="{height * len(top) + 10}" role="img" aria-label="time per rule">']
    for i, (rule, ns) in enumerate(top):
        y = 5 + i * height
        r = rules.get(rule, {"location": "?", "text": ""})
        label = f"R{rule} {r['location']}: {one_line(r['text'], 48)}"
        width = max(1, int(bar_width * ns / most))
        svg.append(f'<text x="0" y="{y + 15}" font-size="12">{escape(label)}</text>'
                   f'<rect x="{label_width}" y="{y + 3}" width="{width}" height="{height - 6}" '
                   f'fill="#4a7fb5"><title>{escape(label)}: {ns / 1e6:.3f} ms</title></rect>'
                   f'<text x="{label_width + width + 4}" y="{y + 15}" font-size="12">'
                   f'{ns / 1e6:.2f} ms</text>')
    svg.append("</svg>")
    return "<h2>Time per rule</h2>" + "".join(svg)
