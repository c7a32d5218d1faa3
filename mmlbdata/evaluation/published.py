"""The five papers' result tables, as data: ``papers/<paper>.yaml`` read into :class:`Table` objects.

Why: a score from this library is read against the published ones (``mmlb eval --compare-paper``,
the figures of ``--plot``, the card). The numbers are transcribed from the papers' text
(``../shared/papers``), each table with its caption, location, page (where the text prints one)
and the lines of the text its rows come from; cells the paper leaves without a number keep the
paper's own wording ("N/A", "-", "s.a.", "Context Length Exceeded") beside ``None``.
tests/test_published_data.py checks every table against the paper's own arithmetic (averages,
totals, cross-table agreement) and, where the text is there, line by line.

Nothing here knows a run; :mod:`mmlbdata.evaluation.compare_paper` puts a run beside these tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

#: the package data folder: one YAML file per paper
DATA_DIR = Path(__file__).with_name("papers")
PAPERS = ("mmlongbench", "mmlongbench_doc", "mmneedle", "longvideobench", "readbench")
#: the paper each file transcribes, as a reader names it
PAPER_NAMES = {"mmlongbench": "MMLongBench", "mmlongbench_doc": "MMLongBench-Doc", "mmneedle": "MMNeedle",
               "longvideobench": "LongVideoBench", "readbench": "ReadBench"}


@dataclass(frozen=True)
class Row:
    """One published model: its values (None where the paper prints no number) and the cells as
    printed (numbers, or the paper's wording for the missing ones)."""

    model: str
    values: tuple[Optional[float], ...]
    printed: tuple
    group: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Table:
    """A published table (or one panel of a figure): models x columns."""

    paper: str  # the key in PAPERS
    key: str  # "figure_22/VRAG", "table_3" ...
    title: str  # "MMLongBench Figure 22: VRAG"
    caption: str
    location: str
    page: Optional[int]
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    not_available: dict = field(default_factory=dict, compare=False, hash=False)  # wording -> meaning
    digits: int = 1  # decimals the paper prints
    text_lines: Optional[tuple[int, int]] = None
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def row(self, model: str) -> Row:
        for row in self.rows:
            if row.model == model:
                return row
        raise KeyError(f"{self.title} has no row {model!r}; rows: {', '.join(r.model for r in self.rows)}")

    def column(self, name: str) -> list[tuple[str, Optional[float]]]:
        """(model, value) down one column."""
        index = self.columns.index(name)
        return [(row.model, row.values[index]) for row in self.rows]

    @property
    def source(self) -> dict:
        """Where the numbers come from, for reports and cards."""
        return {"paper": PAPER_NAMES[self.paper], "reference": load(self.paper)["reference"],
                "table": self.title, "location": self.location, "page": self.page}


@lru_cache(maxsize=None)
def load(paper: str) -> dict:
    """The raw YAML of one paper (cached; treat as read-only)."""
    import yaml

    if paper not in PAPERS:
        raise KeyError(f"no published results for {paper!r}; papers: {', '.join(PAPERS)}")
    with open(DATA_DIR / f"{paper}.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _value(cell) -> Optional[float]:
    """A printed cell as a number; None for the paper's wording of a missing one."""
    return float(cell) if isinstance(cell, (int, float)) and not isinstance(cell, bool) else None


def _row(model: str, cells, group: str = "", **extra) -> Row:
    return Row(model, tuple(_value(c) for c in cells), tuple(cells), group, extra)


def _lines(spec) -> Optional[tuple[int, int]]:
    return tuple(spec["text_lines"]) if spec.get("text_lines") else None


# --- MMLongBench ---------------------------------------------------------------------------------

FIGURE_NUMBERS = {"figure_1": "Figure 1", "figure_22": "Figure 22", "figure_23": "Figure 23",
                  "figure_24": "Figure 24", "figure_25": "Figure 25", "figure_26": "Figure 26"}


@lru_cache(maxsize=None)
def mmlongbench_tables() -> dict[str, Table]:
    """Every panel of Figures 1 and 22-26 ("figure_22/VRAG", "figure_24/VH-Single" ...):
    models x the five lengths."""
    data = load("mmlongbench")
    wording = {data["not_available"]["wording"]: data["not_available"]["why"]}
    out = {}
    for figure, spec in data["figures"].items():
        for panel, body in spec["panels"].items():
            rows = tuple(_row(model, cells) for model, cells in body["rows"].items())
            out[f"{figure}/{panel}"] = Table(
                "mmlongbench", f"{figure}/{panel}", f"MMLongBench {FIGURE_NUMBERS[figure]}: {panel}",
                spec["caption"], spec["location"], spec["page"], tuple(data["lengths"]), rows, wording,
                digits=1, text_lines=tuple(body["text_lines"]))
    return out


def mmlongbench_panel(panel: str, figure: Optional[str] = None) -> Table:
    """A category of Figure 22 ("VRAG" .. "Avg.") or a dataset panel of Figures 23-26 ("VH-Single")."""
    tables = mmlongbench_tables()
    if figure:
        return tables[f"{figure}/{panel}"]
    for key, table in tables.items():
        if key.split("/", 1)[1] == panel and not key.startswith("figure_1/"):
            return table
    raise KeyError(f"MMLongBench has no panel {panel!r}")


def mmlongbench_datasets() -> dict[str, str]:
    """Figures 23-26's panel titles -> this library's dataset names."""
    return dict(load("mmlongbench")["datasets"])


# --- MMLongBench-Doc -------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def mmlongbench_doc_table() -> Table:
    """Table 3: 24 models (OCR + LLMs, then LVLMs) and the human baseline."""
    data = load("mmlongbench_doc")
    spec = data["tables"]["table_3"]
    rows = tuple(_row(r["model"], r["scores"], r["group"], section=r["section"], param=r["param"],
                      context=r["context"], ref=r.get("ref", ""), reference=r["section"] == "Human Baseline")
                 for r in spec["rows"])
    wording = {data["not_available"]["wording"]: data["not_available"]["why"]}
    return Table("mmlongbench_doc", "table_3", "MMLongBench-Doc Table 3", spec["caption"], spec["location"],
                 spec["page"], tuple(spec["columns"]), rows, wording, digits=1, text_lines=_lines(spec),
                 meta={"question_counts": spec["question_counts"], "column_groups": spec["column_groups"]})


# --- MMNeedle ----------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def mmneedle_tables() -> dict[str, Table]:
    """Tables 2-5 and 8-12: positives (existence / index / exact per stitching size N) for one
    (M, K), or negatives (existence per N and M) for one K."""
    data = load("mmneedle")
    wording = {data["not_available"]["wording"]: data["not_available"]["why"]}
    out = {}
    for key, spec in data["tables"].items():
        rows = tuple(_row(model, cells, group) for model, group, cells in spec["rows"])
        meta = {"samples": spec["samples"], "k": spec["needles"]}
        if spec["samples"] == "positive":
            meta.update(m=spec["images"], stitching=spec["stitching"])
        number = key.split("_")[1]
        out[key] = Table("mmneedle", key, f"MMNeedle Table {number}", spec["caption"], "", spec["page"],
                         tuple(spec["columns"]), rows, wording, digits=2, text_lines=_lines(spec), meta=meta)
    return out


# --- LongVideoBench ------------------------------------------------------------------------------

SAME_AS_ABOVE = "s.a."


@lru_cache(maxsize=None)
def lvb_table5_panels() -> dict[str, tuple[str, dict[int, tuple]]]:
    """Table 5 as printed: panel label -> (model, {max_frames: cells or the wording})."""
    spec = load("longvideobench")["tables"]["table_5"]
    return {label: (panel["model"], {int(f): (tuple(c) if isinstance(c, list) else c)
                                     for f, c in panel["rows"].items()})
            for label, panel in spec["panels"].items()}


def lvb_table5_resolved() -> dict[str, dict[int, tuple[Optional[float], ...]]]:
    """Table 5 with every "s.a." replaced by the value above it; a row the model cannot run
    ("Context Length Exceeded") as all None. model -> {max_frames: values}."""
    out = {}
    for model, rows in lvb_table5_panels().values():
        resolved, above = {}, None
        for frames, cells in sorted(rows.items()):
            if isinstance(cells, str):
                resolved[frames] = (None,) * 5
                continue
            values = tuple(above[i] if c == SAME_AS_ABOVE else float(c) for i, c in enumerate(cells))
            resolved[frames] = above = values
        out[model] = resolved
    return out


def lvb_table5_at(frames: int) -> Table:
    """Table 5's rows for one max_frames, a row per model that has it (values resolved)."""
    data = load("longvideobench")
    spec = data["tables"]["table_5"]
    rows = []
    for label, (model, printed) in lvb_table5_panels().items():
        if frames in printed:
            cells = printed[frames]
            cells = (cells,) * 5 if isinstance(cells, str) else cells
            rows.append(Row(model, lvb_table5_resolved()[model][frames], tuple(cells), label))
    return Table("longvideobench", f"table_5/{frames}", f"LongVideoBench Table 5 (max_frames {frames})",
                 " ".join(spec["caption"].split()), spec["location"], spec["page"], tuple(spec["columns"]),
                 tuple(rows), dict(data["not_available"]["wordings"]), digits=1, text_lines=_lines(spec),
                 meta={"split": "validation", "max_frames": frames})


@lru_cache(maxsize=None)
def lvb_tables() -> dict[str, Table]:
    """Tables 7 (test leaderboard, 23 models, 17 question categories) and 8 (35 models)."""
    data = load("longvideobench")
    out = {}
    spec = data["tables"]["table_7"]
    rows = tuple(_row(model, cells, group) for model, group, cells in spec["rows"])
    out["table_7"] = Table("longvideobench", "table_7", "LongVideoBench Table 7", " ".join(spec["caption"].split()),
                           spec["location"], spec["page"], tuple(spec["columns"]), rows, digits=1,
                           text_lines=_lines(spec), meta={"question_categories": spec["question_categories"]})
    spec = data["tables"]["table_8"]
    rows = tuple(_row(model, cells, "open-source" if is_open else "proprietary", open=is_open, max_frames=frames)
                 for model, is_open, frames, cells in spec["rows"])
    out["table_8"] = Table("longvideobench", "table_8", "LongVideoBench Table 8", spec["caption"],
                           spec["location"], spec["page"], tuple(spec["columns"]), rows, digits=1,
                           text_lines=_lines(spec))
    return out


# --- ReadBench -----------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def readbench_table() -> Table:
    """Figure 3: each model's multimodal-minus-text change, in points."""
    spec = load("readbench")["tables"]["figure_3"]
    rows = tuple(_row(model, cells) for model, cells in spec["rows"])
    return Table("readbench", "figure_3", "ReadBench Figure 3", spec["caption"], spec["location"], spec["page"],
                 tuple(spec["columns"]), rows, digits=2, text_lines=_lines(spec), meta={"unit": spec["unit"]})


def all_tables() -> list[Table]:
    """Every table of every paper (Table 5 of LongVideoBench once per max_frames it prints)."""
    frames = sorted({f for _, rows in lvb_table5_panels().values() for f in rows})
    return [*mmlongbench_tables().values(), mmlongbench_doc_table(), *mmneedle_tables().values(),
            *(lvb_table5_at(f) for f in frames), *lvb_tables().values(), readbench_table()]


def with_rows(table: Table, rows) -> Table:
    """The same table with other rows (a selection, for a figure)."""
    return replace(table, rows=tuple(rows))
