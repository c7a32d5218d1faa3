"""``mmlb eval PREDICTIONS --data DIR --config NAME --out DIR``: score predictions.

PREDICTIONS is JSON lines, one object per line with the example's ``id``, its ``config`` (or pass
--config) and the model's ``prediction`` text, e.g.
{"id": "vh_single_00000_d0.0", "config": "vh_single_8k", "prediction": "Yes"}
(`mmlb run` writes this file). The score of a config counts every example: one without a
prediction counts as wrong. The answered-only mean is printed beside it, labelled as such.

--compare-paper puts the run beside every model the five papers report, on the rows of their own
tables (its rank, the nearest published models, what of the paper it does not cover); --plot draws
the papers' figures from the run into OUT/figures/.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from mmlbdata.cli._common import absolute, dataset_problem, local_configs_problem
from mmlbdata.core.extras import MissingExtraError
from mmlbdata.official.protocol import DEFAULT as DEFAULT_PROTOCOL
from mmlbdata.official.protocol import PROTOCOLS

log = logging.getLogger(__name__)


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="score a predictions JSONL against a built dataset",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("predictions", help='JSON lines: {"id": ..., "config": ..., "prediction": "..."} per line')
    p.add_argument("--data", required=True,
                   help="the dataset: a folder written by `mmlb build --out` (either layout), or a Hub "
                        "dataset repo id (org/name)")
    p.add_argument("--config", action="append", default=None,
                   help="config to score (repeatable; default: every config named in the predictions)")
    p.add_argument("--out", required=True, help="folder for report.json and scores.png")
    p.add_argument("--extractor", choices=["judge", "none"], default="judge",
                   help="MMLongBench-Doc/LongDocURL answer extraction and MMLongBench v1.1's document-QA "
                        "judge: an LLM via the judge client, or none (extracted answers; rule-based doc QA)")
    p.add_argument("--judge-model", default=None, help="judge model (env MMLB_JUDGE_MODEL)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible base URL (env MMLB_JUDGE_BASE_URL)")
    p.add_argument("--judge-api-key-env", default="MMLB_JUDGE_API_KEY",
                   help="environment variable holding the judge API key (falls back to OPENAI_API_KEY)")
    p.add_argument("--judge-concurrency", type=int, default=8)
    p.add_argument("--judge-cache", default=None, help="cache file (default: OUT/judge_cache.jsonl)")
    p.add_argument("--judge-price-in", type=float, default=0.0, help="USD per 1M prompt tokens, for the summary")
    p.add_argument("--judge-price-out", type=float, default=0.0, help="USD per 1M completion tokens")
    p.add_argument("--parity", choices=["default", "official"], default="default",
                   help="official: every metric returns what the benchmark's own scorer returns, bugs "
                        "included (for comparing with the papers' tables); default: this project's scorers, "
                        "each difference listed in docs/evaluation.md and in every dataset card")
    p.add_argument("--original-bugs", dest="parity", action="store_const", const="official",
                   help="the older name of --parity official")
    p.add_argument("--protocol", choices=sorted(PROTOCOLS), default=DEFAULT_PROTOCOL,
                   help="MMLongBench's protocol (default %(default)s, the current official code; v1.0: the "
                        "paper's): v1.1 reads answers after the prefix to the end and scores document QA with "
                        "an LLM judge when one is configured (else the rules, said in the report)")
    p.add_argument("--judge-prompts", default=os.environ.get("MMLB_JUDGE_PROMPTS"), metavar="PATH",
                   help="MMLongBench's utils_prompt.py for the v1.1 document-QA judge (or the folder "
                        "`mmlb fetch mmlb_judge_prompts --dest DIR` filled; env MMLB_JUDGE_PROMPTS)")
    p.add_argument("--memlens-judge-prompts", default=os.environ.get("MMLB_MEMLENS_JUDGE_PROMPTS"), metavar="PATH",
                   help="MemLens's official judge_prompts/ folder (or the folder `mmlb fetch memlens_judge_prompts "
                        "--dest DIR` filled; env MMLB_MEMLENS_JUDGE_PROMPTS): the memlens configs' LLM judge")
    p.add_argument("--memlens-judge-path", choices=["vllm", "api"], default="vllm",
                   help="the memlens judge's request, as MemLens's llm_judge.py sends it: vllm (default, the README's "
                        "judge: max_tokens 2048 and chat_template_kwargs {enable_thinking: false} in the body, for a "
                        "vLLM server) or api (its --api_model: max_completion_tokens 256 only, which OpenAI accepts)")
    p.add_argument("--judge-type", choices=["openai", "azure"], default="openai",
                   help="azure: an Azure OpenAI endpoint (--judge-base-url), as MMLongBench's judge client allows")
    p.add_argument("--random-fallback", action="store_true",
                   help="ReadBench/LVB: a seeded random letter when none parses (original parity)")
    p.add_argument("--mmneedle-strict", action="store_true", help="MMNeedle: the original exact string matching")
    p.add_argument("--summ-keypoints", action="append", default=[],
                   help="HELMET claims JSONL ({id, claims} per line; gov_claims.jsonl, lexsum_claims.jsonl) "
                        "for summaries whose meta has no key points (repeatable)")
    p.add_argument("--baseline", default=None, help="another report.json; adds this-minus-baseline deltas "
                   "(ReadBench: the text-context run, whose delta --compare-paper reads against the paper)")
    p.add_argument("--compare-paper", action="store_true",
                   help="put the run beside every model the papers report, on the rows of their own tables "
                        "(MMLongBench Figures 22-26, MMLongBench-Doc Table 3, MMNeedle Tables 2-12, "
                        "LongVideoBench Tables 5, 7, 8, ReadBench Figure 3): its rank, the nearest published "
                        "models above and below, and what of the paper the run does not cover; printed and "
                        "in report.json (paper_comparison)")
    plots = p.add_mutually_exclusive_group()
    plots.add_argument("--plot", action="store_true",
                       help="also draw the papers' figures from this run into OUT/figures/: MMLongBench's "
                            "Figure-1 heatmap with the run's row among the published models (Figure 1's nine "
                            "and Figure 22's 46), score against length with the published range as a band, "
                            "the NIAH depth x length heatmap, MMNeedle's M x N x K grid (each where the run "
                            "has data for it)")
    plots.add_argument("--no-plot", action="store_true", help="no scores.png")
    p.set_defaults(func=run)


class _NoJudge:
    """Stands in when no judge endpoint is configured; fails with the fix in the message."""

    def complete_many(self, *_args, **_kwargs):
        raise RuntimeError("this config needs an LLM judge: pass --judge-base-url/--judge-model and set the key "
                           "in $MMLB_JUDGE_API_KEY or $OPENAI_API_KEY (or --extractor none for document QA)")

    complete = complete_many


def build_judge(args, out: Path):
    from mmlbdata.evaluation.judge import JudgeClient

    key = os.environ.get(args.judge_api_key_env) or os.environ.get("OPENAI_API_KEY")
    base_url = args.judge_base_url or os.environ.get("MMLB_JUDGE_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    if not key and not base_url:
        return None
    return JudgeClient(model=args.judge_model, base_url=base_url, api_key=key or "EMPTY",
                       concurrency=args.judge_concurrency, cache_path=args.judge_cache or out / "judge_cache.jsonl",
                       price_in=args.judge_price_in, price_out=args.judge_price_out, api_type=args.judge_type)


def keypoint_table(paths) -> dict:
    from mmlbdata.evaluation.metrics.summ import load_keypoints

    table = {}
    for path in paths:
        table.update(load_keypoints(path))
    return table


def metric_options(args, judge) -> dict:
    judge_or_stub = judge if judge is not None else _NoJudge()
    extractor = judge_or_stub if args.extractor == "judge" else None
    return {
        "mmlongbench_doc": {"extractor": extractor},
        "longdocurl": {"extractor": extractor},
        # MMLongBench v1.1's document-QA judge: only a real judge (no stub: without one, the rules)
        "docqa": {"judge": judge if args.extractor == "judge" else None, "judge_prompts": args.judge_prompts},
        # MemLens's official judge: only a real judge (without one, the rules stand in, said in the report)
        "memlens_judge": {"judge": judge if args.extractor == "judge" else None,
                          "judge_prompts": args.memlens_judge_prompts, "judge_path": args.memlens_judge_path},
        "summ_judge": {"judge": judge_or_stub, "keypoints": keypoint_table(args.summ_keypoints)},
        "readbench_mc": {"random_fallback": args.random_fallback},
        "lvb_mc": {"random_fallback": args.random_fallback},
        "mmneedle": {"strict": args.mmneedle_strict},
    }


def input_problem(args) -> str | None:
    """What is wrong with the predictions file or --data, found before any work (None: nothing)."""
    predictions = Path(args.predictions).expanduser()
    if not predictions.is_file():
        what = "is a folder, not a file" if predictions.is_dir() else "not found"
        return f"predictions file {what}: {predictions.absolute()}"
    return dataset_problem(args.data) or local_configs_problem(args.data, args.config)


def nothing_scored(result: dict) -> str | None:
    """The message when no config has a single scored prediction (None: something was scored)."""
    if any(r["answered"] for r in result["configs"].values()):
        return None
    lines = ["nothing could be scored: no prediction matches an example of " + ", ".join(result["configs"])]
    other = result.get("problems", {}).get("other_configs")
    if other:  # the lines name another config: --config picked the wrong one, or the lines say the wrong one
        lines.append(f"  the predictions' lines name config(s) {', '.join(other)}, not {', '.join(result['configs'])}: "
                     f"score them with --config {other[0]}, or correct the lines' \"config\"")
    for config, r in result["configs"].items():
        unknown = r["problems"]["unknown_ids"]
        if unknown:
            lines.append(f"  {config}: {len(unknown)} prediction id(s) are not among its {r['total']} examples, "
                         f"e.g. {unknown[:3]} (its ids: {r['problems']['missing_ids'][:3]})")
    return "\n".join(lines)


def run(args) -> int:
    from mmlbdata.evaluation.evaluate import evaluate

    problem = input_problem(args)
    if problem:
        print(f"mmlb eval: {problem}", file=sys.stderr)
        return 2
    out = Path(absolute(args.out))  # the report line below is pasteable from anywhere
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    judge = build_judge(args, out)
    try:
        result = evaluate(args.predictions, args.data, args.config, metric_options(args, judge), parity=args.parity,
                          protocol=args.protocol)
    except (RuntimeError, ValueError, KeyError, FileNotFoundError) as exc:
        return fail(str(exc), out, created, status=2)
    empty = nothing_scored(result)
    if empty:
        return fail(empty, out, created, status=1)
    return write_outputs(args, result, judge, out)


def fail(message: str, out: Path, created: bool, status: int) -> int:
    """Print the message; an --out folder this run created and left empty goes (a judge cache stays)."""
    from mmlbdata.dataset.writer import remove_if_empty

    if created:
        remove_if_empty(out)
    print(f"mmlb eval: {message}", file=sys.stderr)
    return status


def write_outputs(args, result: dict, judge, out: Path) -> int:
    """report.json, scores.png (unless --no-plot or nothing to draw), the papers' figures (--plot)
    and the printed tables."""
    from mmlbdata.evaluation import report as rep

    if judge is not None and (judge.usage.calls or judge.usage.cache_hits or judge.usage.failures):
        result["judge"] = judge.summary()
    if args.baseline:
        result["delta_vs_baseline"] = rep.delta(result, json.loads(Path(args.baseline).read_text()))
    if args.compare_paper:
        from mmlbdata.evaluation.compare_paper import compare

        result["paper_comparison"] = compare(result)
    if args.plot:
        from mmlbdata.evaluation.figures import depth_tables

        result["depth_by_length"] = depth_tables(result, args.data)
    rep.write_json(result, out / "report.json")
    plotted = not args.no_plot
    figures: list[dict] = []
    if plotted:
        try:
            rep.plot(result, out / "scores.png")
            if args.plot:
                from mmlbdata.evaluation.figures import draw_all

                figures = draw_all(result, out / "figures")
        except MissingExtraError as err:  # the scores are written; only the pictures are missing
            print(f"note: no figures: {err}", file=sys.stderr)
            plotted = False
    print(rep.render(result))
    print(f"\nreport: {out / 'report.json'}" + ("" if not plotted else f"; plot: {out / 'scores.png'}"))
    if args.plot and plotted:
        print("figures: " + (", ".join(str(Path(f["path"]).relative_to(out)) for f in figures)
                             or "none (no MMLongBench category, needle depth or MMNeedle M x N x K config in this run)"))
    return 0
