"""Turn benchmark results into the charts and tables of ``docs/performance.md``.

Everything here works on plain data: the dictionaries that
`benchmarks.bench_peers.summary` and `benchmarks.bench_scale.summary` return, and
a list of target rows (``{"measure", "result", "target", "met"}``) from the
runner, and the restated targets' rows from `benchmarks.targets`. `render` draws
the two charts into ``docs/img/`` and returns the per-call table;
`results_markdown` builds the whole generated part (run date, Python, machine,
the restated targets, tables, charts, the earlier targets); `update_results` puts it between the
``<!-- results:start -->`` and ``<!-- results:end -->`` markers of the page and
leaves everything outside them alone. matplotlib is imported only when a chart
is drawn, with the Agg backend, so nothing needs a display.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
"""The page whose results part this module rewrites."""

IMG_DIR = ROOT / "docs" / "img"
"""Where the charts go."""

PER_CALL_CHART = "per-call-cost.png"
SIZE_CHART = "cost-by-input-size.png"

START = "<!-- results:start -->"
END = "<!-- results:end -->"

_NEW_PAGE = f"""# Performance

{START}
{END}
"""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def per_call_chart(peers: dict[str, Any], path: Path) -> Path:
    """Draw the best microseconds per call of every contestant as horizontal bars."""
    plt = _pyplot()
    from matplotlib import ticker
    from matplotlib.patches import Patch

    rows = peers["rows"]
    labels = list(rows)
    values = [rows[label]["best_us"] for label in labels]
    colours = ["tab:orange" if label.startswith("toolcycle") else "tab:blue" for label in labels]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.2))
    bars = ax.barh(labels, values, color=colours)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("microseconds per call (best repeat, log scale)")
    ax.set_title("One small tool call, by contestant")
    ax.bar_label(bars, labels=[f"{value:.1f}" for value in values], padding=3, fontsize=8)
    ax.set_xlim(min(values) / 2, max(values) * 4)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.legend(
        handles=[
            Patch(color="tab:orange", label="toolcycle"),
            Patch(color="tab:blue", label="others"),
        ],
        loc="lower right",
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def size_chart(scale: dict[str, Any], path: Path) -> Path:
    """Draw microseconds per object against the number of objects, one line per backend."""
    plt = _pyplot()
    from matplotlib import ticker

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for backend, by_size in scale["backends"].items():
        sizes = sorted(by_size)
        ax.plot(
            sizes,
            [by_size[size]["best_us_per_object"] for size in sizes],
            marker="o",
            label=backend,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("objects in the input (log scale)")
    ax.set_ylabel("microseconds per object (log scale)")
    ax.set_title("runtime.execute cost by input size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="validator")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def peers_table(peers: dict[str, Any]) -> str:
    """The per-call results as a Markdown table, with each row's ratio to the reference."""
    reference = peers["reference"]
    rows = peers["rows"]
    base = rows[reference]["best_us"] if reference in rows else None
    lines = [
        f"| contestant | version | best us | median us | ratio to {reference} |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for label, row in rows.items():
        ratio = f"{row['best_us'] / base:.2f}x" if base else "n/a"
        lines.append(
            f"| {label} | {row['version'] or 'n/a'} | {row['best_us']:.2f} "
            f"| {row['median_us']:.2f} | {ratio} |"
        )
    lines.extend(f"| {label} | not run: {why} | | | |" for label, why in peers["skipped"].items())
    return "\n".join(lines)


def scale_table(scale: dict[str, Any]) -> str:
    """Microseconds per object (and milliseconds per call) by size and backend, in Markdown."""
    backends = list(scale["backends"])
    header = " | ".join(f"{backend}: us per object (ms per call)" for backend in backends)
    lines = [f"| objects | {header} |", "| ---: |" + " ---: |" * len(backends)]
    for size in scale["sizes"]:
        cells = []
        for backend in backends:
            found = scale["backends"][backend].get(size)
            cells.append(
                f"{found['best_us_per_object']:.2f} ({found['best_ms_per_call']:.1f})"
                if found
                else "not run"
            )
        lines.append(f"| {size:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets_table(targets: list[dict[str, Any]]) -> str:
    """The runner's earlier target rows as a Markdown table, with what replaced each."""
    lines = [
        "| measure | result | target | met | replaced by restated target |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    lines.extend(
        f"| {row['measure']} | {row['result']} | {row['target']} | "
        f"{'yes' if row['met'] else 'no'} | {row.get('replaced_by') or '(still in force)'} |"
        for row in targets
    )
    return "\n".join(lines)


def restated_table(rows: list[dict[str, Any]]) -> str:
    """The restated targets (`benchmarks.targets`) as a Markdown table."""
    from benchmarks.targets import verdict

    lines = [
        "| # | measure | measured | target | verdict | replaces |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines.extend(
        f"| {row['number']} | {row['measure']} | {row['result']} | {row['target']} | "
        f"{verdict(row['met'])} | {row['replaces']} |"
        for row in rows
    )
    return "\n".join(lines)


def render(peers: dict[str, Any], scale: dict[str, Any], img_dir: Path = IMG_DIR) -> str:
    """Write both charts into ``img_dir`` and return the per-call Markdown table."""
    per_call_chart(peers, img_dir / PER_CALL_CHART)
    size_chart(scale, img_dir / SIZE_CHART)
    return peers_table(peers)


def environment() -> str:
    """The run's date, Python and machine, as one Markdown paragraph."""
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Run on {today} with {platform.python_implementation()} "
        f"{platform.python_version()} on {platform.platform()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs)."
    )


def results_markdown(
    peers: dict[str, Any],
    scale: dict[str, Any],
    targets: list[dict[str, Any]] | None = None,
    restated: list[dict[str, Any]] | None = None,
    img_dir: Path = IMG_DIR,
) -> str:
    """The generated part of the page: environment, tables and charts (which it writes)."""
    table = render(peers, scale, img_dir)
    parts = [
        "<!-- Generated by `python -m benchmarks --write-docs`; edits here are overwritten. -->",
        environment(),
    ]
    if restated:
        parts += ["### The restated targets", restated_table(restated)]
    parts += [
        "### Per call",
        table,
        f"![Microseconds per call by contestant](img/{PER_CALL_CHART})",
        "### By input size",
        scale_table(scale),
        f"![Microseconds per object by input size](img/{SIZE_CHART})",
    ]
    if targets:
        parts += ["### Against the earlier targets", targets_table(targets)]
    return "\n\n".join(parts)


def update_results(markdown: str, doc: Path = DOC) -> Path:
    """Replace what lies between the page's result markers with ``markdown``.

    The page is created, with a heading and the markers, if it does not exist; a
    page without the markers gets them appended at its end. Nothing outside the
    markers changes.

    Raises:
        ValueError: the page has a start marker without an end marker after it.
    """
    text = doc.read_text(encoding="utf-8") if doc.exists() else _NEW_PAGE
    if START not in text:
        text = text.rstrip("\n") + f"\n\n{START}\n{END}\n"
    head, _, rest = text.partition(START)
    if END not in rest:
        raise ValueError(f"{doc} has {START} but no {END} after it")
    _, _, tail = rest.partition(END)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(f"{head}{START}\n{markdown.strip()}\n{END}{tail}", encoding="utf-8")
    return doc
