"""The papers' figures, drawn from a run: ``mmlb eval --plot``.

Each figure reads report.json alone (its ``paper_comparison`` from
:mod:`mmlbdata.evaluation.compare_paper`, its configs' scores, and ``depth_by_length`` that
:func:`depth_tables` adds from the built rows' needle depths), so a report can be drawn again
without the data:

* ``mmlongbench_figure1.png`` / ``mmlongbench_figure22.png``: MMLongBench's Figure-1 heatmap (one
  panel per category and the average, models x lengths, white to green as ``1_main_most_models.py``
  draws it) over Figure 1's nine models / Figure 22's 46, the run a red-framed row placed by its
  rank over the cells it has;
* ``mmlongbench_lengths.png``: score against length per category, the published models as a band
  (lowest to highest) with their median, the run as a line;
* ``niah_depth.png``: needle depth x length per dataset, as ``9_heatmap_by_depth.py`` draws it;
* ``mmneedle_grid.png``: MMNeedle's accuracies by M x N (rows) and K (columns), the run's value
  in each cell with the paper's best beside it.

Each drawing function returns where it drew (pixel boxes of its panels, top-left origin), which
the tests use to check the pictures' pixels.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from mmlbdata.core.extras import require
from mmlbdata.evaluation import compare_paper, published

#: 1_main_most_models.py's colour map (white to green) and 9_heatmap_by_depth.py's (red, amber, green)
SCORE_COLOURS = ("#FFFFFF", "#4A895B")
DEPTH_COLOURS = ("#F0496E", "#EBB839", "#0CD79F")
NOT_RUN_COLOUR = "#DDDDDD"  # a cell the run has no score for (MMNeedle grid, depth heatmap)
HIGHLIGHT = "#D62728"  # the run's row and line
BAND = "#C6DBEF"  # the published models' range
QUARTILES = "#9ECAE1"  # their middle half
MEDIAN = "#3F6E9A"
#: 9_heatmap_by_depth.py's datasets, in its order
DEPTH_DATASETS = {"viquae": "ViQuAE", "vh_single": "VH-Single", "mm_niah_retrieval_text": "MM-NIAH-Ret (T)",
                  "mm_niah_retrieval_image": "MM-NIAH-Ret (I)", "mm_niah_reasoning_image": "MM-NIAH-Reason (I)"}
#: MMNeedle's settings as its tables order them: (M, N) rows, K columns
NEEDLE_SETTINGS = [(1, 2), (1, 4), (1, 8), (10, 1), (10, 2), (10, 4), (10, 8)]
NEEDLE_COUNTS = [1, 2, 5]
DPI = 100


def _pyplot():
    matplotlib = require("matplotlib", "eval", "the figures of `mmlb eval --plot`")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _boxes(fig, axes: dict) -> dict:
    """{name: [x0, y0, x1, y1]}: each axes' data area in pixels of the saved PNG, top-left origin."""
    fig.canvas.draw()
    height = fig.get_size_inches()[1] * DPI
    out = {}
    for name, ax in axes.items():
        box = ax.get_window_extent()
        scale = DPI / fig.dpi
        out[name] = [box.x0 * scale, height - box.y1 * scale, box.x1 * scale, height - box.y0 * scale]
    return out


def _save(fig, path) -> None:
    fig.savefig(path, dpi=DPI)


# --- MMLongBench: the Figure-1 heatmap -------------------------------------------------------------------

def mmlongbench_heatmap(comparison: dict, path, models: Optional[list[str]] = None, title: str = "") -> Optional[dict]:
    """Categories and the average (one panel each) x lengths, a row per published model and one for
    the run, best first over the cells the run has; the run's row framed in red. ``models``: the
    published rows to show (None: all 46). None when the run has no MMLongBench category."""
    part = comparison.get("benchmarks", {}).get("mmlongbench")
    tables = {t["key"].split("/", 1)[1]: t for t in (part or {}).get("compared", []) if t["key"].startswith("figure_22/")}
    ranking = compare_paper.overall_ranking(list(tables.values()), models) if tables else None
    if ranking is None:
        return None
    plt = _pyplot()
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Rectangle

    data = published.load("mmlongbench")
    panels = [*data["categories"], data["average"]]
    order = [e["model"] for e in ranking["order"]]
    run_row = ranking["rank"] - 1
    cmap = LinearSegmentedColormap.from_list("mmlb_score", SCORE_COLOURS)
    rows = len(order)
    fig, axes = plt.subplots(1, len(panels), sharey=True, figsize=(2.2 * len(panels) + 2.2, 0.26 * rows + 1.6))
    drawn = {}
    for ax, panel in zip(axes, panels):
        table = tables.get(panel) or compare_paper.compare_table(
            published.mmlongbench_panel(panel, "figure_22"), [None] * 5, label=tables[next(iter(tables))]["label"])
        values = {r["model"]: r for r in table["rows"]}
        matrix = [[values[m]["values"][i] if values[m]["values"][i] is not None else math.nan for i in range(5)]
                  for m in order]
        finite = [v for row in matrix for v in row if not math.isnan(v)]
        low, high = (min(finite), max(finite)) if finite else (0, 100)
        ax.imshow([[0.0 if math.isnan(v) else v for v in row] for row in matrix], cmap=cmap, vmin=low,
                  vmax=high if high > low else low + 1, aspect="auto", interpolation="nearest")
        for y, model in enumerate(order):
            for x in range(5):
                value, printed = values[model]["values"][x], values[model]["cells"][x]
                text = printed if value is None and printed else ("" if value is None else f"{value:.1f}")
                ax.text(x, y, text or "-", ha="center", va="center", fontsize=7,
                        color="black", fontweight="bold" if y == run_row else "normal")
        ax.add_patch(Rectangle((-0.5, run_row - 0.5), 5, 1, fill=False, edgecolor=HIGHLIGHT, linewidth=2.5,
                               clip_on=False))
        ax.set_title(panel, fontsize=11)
        ax.set_xticks(range(5), data["lengths"], fontsize=8)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        drawn[panel] = ax
    axes[0].set_yticks(range(rows), [m if m != order[run_row] else f"> {m}" for m in order], fontsize=8)
    axes[0].get_yticklabels()[run_row].set_color(HIGHLIGHT)
    axes[0].get_yticklabels()[run_row].set_fontweight("bold")
    title = title or f"MMLongBench Figure 22: {ranking['of'] - 1} published models"
    fig.suptitle(f"{title} and this run: "
                 f"rank {ranking['rank']} of {ranking['of']} over its {ranking['cells']} category x length cells "
                 "(rows by their mean over those cells)", fontsize=11, y=1 - 0.08 / fig.get_size_inches()[1],
                 verticalalignment="top")
    fig.tight_layout()
    fig.subplots_adjust(top=1 - 0.6 / fig.get_size_inches()[1])  # room for the title, whatever the rows
    boxes = _boxes(fig, drawn)
    _save(fig, path)
    plt.close(fig)
    return {"path": str(path), "panels": boxes, "rows": order, "rank": ranking["rank"]}


# --- MMLongBench: score against length with the published band --------------------------------------

def mmlongbench_lengths(comparison: dict, path) -> Optional[dict]:
    """A panel per category and the average (a run without a whole category: per dataset, Figures
    23-26): the published models' range per length as a band, their middle half and median, the run
    as a red line. None without an MMLongBench score."""
    part = comparison.get("benchmarks", {}).get("mmlongbench")
    compared = (part or {}).get("compared", [])
    tables = [t for t in compared if t["key"].startswith("figure_22/")] or compared
    if not tables:
        return None
    plt = _pyplot()
    lengths = published.load("mmlongbench")["lengths"]
    columns = 3
    fig, axes = plt.subplots(math.ceil(len(tables) / columns), columns, figsize=(12, 3.6 * math.ceil(len(tables) / columns)),
                             squeeze=False)
    drawn, limits = {}, {}
    for ax, table in zip(axes.flat, tables):
        bands = [[r["values"][i] for r in table["rows"] if not r["run"] and r["values"][i] is not None]
                 for i in range(len(lengths))]
        xs = range(len(lengths))
        low, high = [min(b) for b in bands], [max(b) for b in bands]
        ax.fill_between(xs, low, high, color=BAND, linewidth=0, zorder=1,
                        label=f"published ({len(table['rows']) - 1} models): lowest to highest")
        ax.fill_between(xs, [_quantile(b, 0.25) for b in bands], [_quantile(b, 0.75) for b in bands], color=QUARTILES,
                        linewidth=0, zorder=1, label="published: middle half")
        ax.plot(xs, [_quantile(b, 0.5) for b in bands], color=MEDIAN, linestyle="--", linewidth=1, zorder=2,
                label="published median")
        points = [(x, v) for x, v in zip(xs, table["run"]) if v is not None]
        ax.plot([x for x, _ in points], [v for _, v in points], color=HIGHLIGHT, marker="o", linewidth=2, zorder=3,
                label=table["label"])
        ax.set_title(table["key"].split("/", 1)[1], fontsize=11)
        ax.set_xticks(list(xs), lengths)
        ax.set_xlim(-0.25, len(lengths) - 0.75)
        ax.set_ylim(-3, 103)  # a score of 0 or 100 drawn clear of the frame
        ax.set_ylabel("score (%)")
        ax.set_axisbelow(True)
        ax.grid(alpha=0.3)
        drawn[table["key"]] = ax
        limits[table["key"]] = {"x": list(ax.get_xlim()), "y": list(ax.get_ylim())}
    for ax in list(axes.flat)[len(tables):]:
        ax.set_visible(False)
    handles, labels = list(axes.flat)[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    figures = "Figure 22" if tables[0]["key"].startswith("figure_22/") else "Figures 23-26"
    fig.suptitle(f"MMLongBench ({figures}): this run against the published models, by length", fontsize=12)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    boxes = _boxes(fig, drawn)
    _save(fig, path)
    plt.close(fig)
    return {"path": str(path), "panels": boxes, "limits": limits}


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation (numpy's default), without numpy."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# --- NIAH: depth x length --------------------------------------------------------------------------------

def depth_tables(report: dict, data_dir) -> dict:
    """{dataset: {length: {depth: mean score}}} of the depth datasets of 9_heatmap_by_depth.py the
    run has: each example's needle depth (its meta, rounded up to a tenth as the script rounds it)
    and score (report.json's per-example scores; an example without a prediction counts 0 where the
    headline counts it wrong). A Visual Haystack cell under 0.5 is flipped, as the script flips it."""
    from mmlbdata.evaluation.evaluate import load_examples
    from mmlbdata.evaluation.metrics.common import meta_of

    out: dict = {}
    for config, result in report.get("configs", {}).items():
        length = compare_paper.length_of(config, result)
        dataset = config[: -len(length) - 1] if length else None
        if dataset not in DEPTH_DATASETS:
            continue
        scored = {e["id"]: e["score"] for e in result.get("examples", []) if not (e.get("extra") or {}).get("left_out")}
        sums: dict = {}
        for example in load_examples(data_dir, config):
            depth = meta_of(example).get("depth")
            if not isinstance(depth, (int, float)):
                continue  # a multi-needle permutation: no single depth
            score = scored.get(str(example["id"]))
            if score is None and not result.get("missing_counted_as_wrong", True):
                continue
            cell = sums.setdefault(math.ceil(round(depth * 10, 6)) / 10, [0.0, 0])
            cell[0] += score or 0.0
            cell[1] += 1
        table = {f"{d:.1f}": s / n for d, (s, n) in sorted(sums.items())}
        if dataset in compare_paper.FLIPPED:
            table = {d: (1 - v if v < 0.5 else v) for d, v in table.items()}
        if table:
            out.setdefault(dataset, {})[length] = table
    return out


def niah_depth(depth: dict, path) -> Optional[dict]:
    """One heatmap per dataset: depth (rows, 0.0 = the start of the context) x length, scores in
    [0, 1] on one colour scale, N/A for a length the run lacks (9_heatmap_by_depth.py's layout)."""
    names = [d for d in DEPTH_DATASETS if d in depth]
    if not names:
        return None
    plt = _pyplot()
    from matplotlib.colors import LinearSegmentedColormap

    lengths = published.load("mmlongbench")["lengths"]
    cmap = LinearSegmentedColormap.from_list("mmlb_depth", DEPTH_COLOURS)
    cmap.set_bad(NOT_RUN_COLOUR)  # a length the run lacks is left out, as seaborn leaves out NaN cells
    values = [v for d in names for cells in depth[d].values() for v in cells.values()]
    low, high = min(values), max(values)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 4.4), squeeze=False)
    drawn = {}
    for ax, dataset in zip(axes[0], names):
        depths = sorted({float(d) for cells in depth[dataset].values() for d in cells})
        matrix = [[depth[dataset].get(length, {}).get(f"{d:.1f}") for length in lengths] for d in depths]
        ax.imshow([[math.nan if v is None else v for v in row] for row in matrix], cmap=cmap, vmin=low,
                  vmax=high if high > low else low + 1e-9, aspect="auto", interpolation="nearest")
        for y, row in enumerate(matrix):
            for x, v in enumerate(row):
                ax.text(x, y, "N/A" if v is None else f"{v:.2f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(lengths)), lengths)
        ax.set_yticks(range(len(depths)), [f"{d:.1f}" for d in depths])
        ax.set_title(DEPTH_DATASETS[dataset], fontsize=11)
        drawn[dataset] = ax
    axes[0][0].set_ylabel("needle depth (0.0 = start of the context)")
    fig.suptitle("Score by needle depth and context length (this run)", fontsize=12)
    fig.tight_layout()
    boxes = _boxes(fig, drawn)
    _save(fig, path)
    plt.close(fig)
    return {"path": str(path), "panels": boxes, "range": [low, high]}


# --- MMNeedle: M x N x K ---------------------------------------------------------------------------------

NEEDLE_PANELS = [("positive", "Existence"), ("positive", "Index"), ("positive", "Exact"), ("negative", "Existence")]


def _paper_best(samples: str, metric: str, m: int, n: int, k: int) -> Optional[tuple[str, float]]:
    """The best published value of a cell of MMNeedle's tables, and its model."""
    for table in published.mmneedle_tables().values():
        meta = table.meta
        if meta["samples"] != samples or meta["k"] != k or (samples == "positive" and meta["m"] != m):
            continue
        column = f"{n}x{n} {metric}" if samples == "positive" else f"{n}x{n} {m} {'img' if m == 1 else 'imgs'}"
        if column in table.columns:
            cells = [(model, v) for model, v in table.column(column) if v is not None]
            return max(cells, key=lambda c: c[1]) if cells else None
    return None


def mmneedle_grid(report: dict, path) -> Optional[dict]:
    """Four panels (existence, index, exact accuracy on the positive samples; existence on the
    negatives): a row per (M, N), a column per K; each cell the run's value (red 0 to green 100)
    with the paper's best for that cell. None when the run has no M x N x K config."""
    aggregates, _ = compare_paper.mmneedle_cells(report)
    if not aggregates:
        return None
    plt = _pyplot()
    from matplotlib.colors import LinearSegmentedColormap

    cmap = LinearSegmentedColormap.from_list("mmlb_needle", DEPTH_COLOURS)
    fig, axes = plt.subplots(1, len(NEEDLE_PANELS), figsize=(4.0 * len(NEEDLE_PANELS) + 1, 5.6), sharey=True)
    drawn = {}
    for ax, (samples, metric) in zip(axes, NEEDLE_PANELS):
        grid = [[compare_paper.needle_value(aggregates, m, n, k, samples, metric) for k in NEEDLE_COUNTS]
                for m, n in NEEDLE_SETTINGS]
        ax.imshow([[math.nan if v is None else v for v in row] for row in grid], cmap=cmap, vmin=0, vmax=100,
                  aspect="auto", interpolation="nearest")
        ax.set_facecolor(NOT_RUN_COLOUR)
        for y, (m, n) in enumerate(NEEDLE_SETTINGS):
            for x, k in enumerate(NEEDLE_COUNTS):
                value, best = grid[y][x], _paper_best(samples, metric, m, n, k)
                ax.text(x, y - 0.12, "not run" if value is None else f"{value:.1f}", ha="center", va="center",
                        fontsize=10, fontweight="bold")
                if best:
                    ax.text(x, y + 0.25, f"paper best {best[1]:.1f}\n{best[0]}", ha="center", va="center", fontsize=6)
        ax.set_xticks(range(len(NEEDLE_COUNTS)), [f"K={k}" for k in NEEDLE_COUNTS])
        ax.set_title(f"{metric} ({samples} samples)", fontsize=10)
        drawn[f"{samples} {metric}"] = ax
    axes[0].set_yticks(range(len(NEEDLE_SETTINGS)), [f"M={m}, {n}x{n}" for m, n in NEEDLE_SETTINGS])
    fig.suptitle("MMNeedle accuracy (%) of this run by images M, stitching N x N and needles K", fontsize=12)
    fig.tight_layout()
    boxes = _boxes(fig, drawn)
    _save(fig, path)
    plt.close(fig)
    return {"path": str(path), "panels": boxes}


# --- all of them -----------------------------------------------------------------------------------------

def draw_all(report: dict, out_dir) -> list[dict]:
    """Every figure the report has data for, into ``out_dir`` (the comparison is worked out when the
    report lacks it); what each drew, in order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    comparison = report.get("paper_comparison") or compare_paper.compare(report)
    figure_1 = published.load("mmlongbench")["figures"]["figure_1"]["models"]
    drawn = [
        mmlongbench_heatmap(comparison, out_dir / "mmlongbench_figure1.png", figure_1,
                            title="MMLongBench Figure 1's nine models"),
        mmlongbench_heatmap(comparison, out_dir / "mmlongbench_figure22.png"),
        mmlongbench_lengths(comparison, out_dir / "mmlongbench_lengths.png"),
        niah_depth(report.get("depth_by_length") or {}, out_dir / "niah_depth.png"),
        mmneedle_grid(report, out_dir / "mmneedle_grid.png"),
    ]
    return [d for d in drawn if d is not None]
