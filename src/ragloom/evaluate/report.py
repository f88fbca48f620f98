"""Suite results: JSON, a Markdown table, PNG charts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any


@dataclass
class SuiteResult:
    suite: str
    columns: list[str]  # the table's columns; the first names the row
    rows: Sequence[Mapping[str, object]]  # a suite's typed rows (TypedDicts or plain dicts), keyed by column
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def table(self) -> str:
        return markdown_table(self.columns, [[_cell(row.get(c)) for c in self.columns] for row in self.rows])

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "table": self.table(), "written": datetime.now(UTC).isoformat(timespec="seconds")}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table: a header row, a separator, then one line per row (cells as ``str``)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 1 or value == 0 else f"{value:.3f}"
    return "" if value is None else str(value)


def write(result: SuiteResult, out: Path) -> dict[str, Path]:
    """``<out>/<suite>.json`` and ``<out>/<suite>.md`` (the plots were written by the suite)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / f"{result.suite}.json", "markdown": out / f"{result.suite}.md"}
    paths["json"].write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    md = [f"# `ragloom eval {result.suite}`", "", result.table(), ""]
    md += [f"- {n}" for n in result.notes]
    md += ["", *(f"![{Path(p).stem}]({Path(p).name})" for p in result.plots)]
    paths["markdown"].write_text("\n".join(md).rstrip() + "\n", encoding="utf-8")
    return paths


def bar_chart(path: Path, labels: Sequence[str], series: Mapping[str, Sequence[float]], *, title: str,
              ylabel: str) -> str:
    """Grouped bars, one group per label, one bar per series."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(labels) * max(1, len(series))), 4.5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(labels))], values, width=width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def _pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (matplotlib ships no type information)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        from ragloom.errors import MissingExtraError

        raise MissingExtraError("matplotlib", "eval", "the evaluation charts") from exc
    return plt
