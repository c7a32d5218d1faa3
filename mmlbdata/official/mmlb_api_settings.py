"""How MMLongBench ran its API models: ``scripts/run_api.sh`` (EdinburghNLP/MMLongBench @22b9f27) as data.

Each block of that script runs one model on some tasks (``configs/<task>_all.yaml``) at some
lengths, with ``eval_api.py`` or ``eval_api_batch.py``, images from the local release or as URLs
of the Hub release (``--image_file_root https://huggingface.co/datasets/ZhaoweiWang/image_collection
/resolve/main``), an ``--api_sleep`` and a few per-length flags: ``--image_detail low`` (GPT-4o at
64K/128K), ``--max_image_num 400 --max_image_size 384`` (Gemini at 64K/128K). Those flags change
what a request holds, so ``mmlb run --settings official`` applies them per config
(:func:`api_run_for`); tests/test_api_settings.py parses the script from the fetched repository
and checks this table against it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mmlbdata.core.lengths import length_tokens, parse_config_name

COMMIT = "22b9f27d311b60b37a94607b7dde92becc6fc2bb"
#: the image root of run_api.sh's URL runs (the README's "Using Image URL for API models")
RELEASE_IMAGE_URLS = "https://huggingface.co/datasets/ZhaoweiWang/image_collection/resolve/main"

ALL_TASKS = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl", "summ", "docqa")
IMAGE_TASKS = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl")


@dataclass(frozen=True)
class APIRun:
    """One ``python eval_api*.py`` block of run_api.sh (``tasks``: its loop; ``lengths``: --test_length, in K)."""
    model: str
    tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    script: str = "eval_api.py"
    image_urls: bool = False  # --image_file_root is the Hub release's URL root
    api_sleep: int = 3
    image_detail: str = "auto"
    max_image_num: Optional[int] = None
    max_image_size: Optional[int] = None


def _gemini(model: str, sleep: int) -> tuple[APIRun, ...]:
    return (APIRun(model, ALL_TASKS, (8, 16, 32), api_sleep=sleep),
            APIRun(model, IMAGE_TASKS, (64, 128), api_sleep=sleep, max_image_num=400, max_image_size=384),
            APIRun(model, ("summ", "docqa"), (64, 128), api_sleep=sleep))


GPT4O = "gpt-4o-2024-11-20"
CLAUDE = "claude-3-7-sonnet-20250219"
RUNS: tuple[APIRun, ...] = (
    *_gemini("gemini-2.0-flash-001", 3),
    *_gemini("gemini-2.0-flash-thinking-exp-01-21", 3),
    *_gemini("gemini-2.5-flash-preview-04-17", 10),
    *_gemini("gemini-2.5-pro-preview-03-25", 3),
    APIRun(GPT4O, ALL_TASKS, (8, 16, 32), image_urls=True),
    APIRun(GPT4O, IMAGE_TASKS, (64, 128), image_urls=True, image_detail="low"),
    APIRun(GPT4O, ("summ", "docqa"), (64, 128), script="eval_api_batch.py", image_urls=True),
    APIRun(CLAUDE, ("vrag", "vh", "icl", "mm_niah_text", "mm_niah_image", "summ", "docqa"), (8, 16),
           script="eval_api_batch.py"),
    APIRun(CLAUDE, ("vrag", "vh", "mm_niah_text", "mm_niah_image", "summ", "docqa"), (32,), image_urls=True),
    APIRun(CLAUDE, ("vrag", "summ", "docqa"), (64,), script="eval_api_batch.py", image_urls=True),
    APIRun(CLAUDE, ("vrag", "summ"), (128,), script="eval_api_batch.py", image_urls=True),
)

#: the series a model name belongs to, tested in load_LLM's order (vlm_model/__init__.py): "gpt" and
#: "claude" (openai_model.py) before "gemini" (gemini.py); each series' runs stand for its other models
SERIES = (("gpt", GPT4O), ("claude", CLAUDE), ("gemini", "gemini-2.0-flash-001"))


def _task_of(config: str) -> Optional[str]:
    """The configs/<task>_all.yaml task of a built config (``vh_single_128k`` -> ``vh``), or None."""
    from mmlbdata.official.mmlb_run_settings import settings_for

    settings = settings_for(config)
    return None if settings is None else settings.config_file.removesuffix("_all.yaml")


def api_run_for(model: str, config: str) -> tuple[Optional[APIRun], str]:
    """The run_api.sh block that ran ``config`` for ``model`` (the exact model, else the first model
    of its series), and a note saying which; (None, why) where the script ran no such block (a
    length the paper could not run, e.g. Claude on ICL at 32K, or a config no yaml lists)."""
    task = _task_of(config)
    _key, length = parse_config_name(config)
    if task is None or length is None:
        return None, f"{config}: not one of MMLongBench's yaml configs"
    k = length_tokens(length) // 1024
    stand_in = model if any(run.model == model for run in RUNS) else \
        next((series_model for needle, series_model in SERIES if needle in model), None)
    if stand_in is None:
        return None, f"{model}: no run of scripts/run_api.sh"
    run = next((r for r in RUNS if r.model == stand_in and task in r.tasks and k in r.lengths), None)
    if run is None:
        return None, f"scripts/run_api.sh did not run {stand_in} on {task} at {k}K"
    return run, ("" if stand_in == model else f"{model}: the settings scripts/run_api.sh used for {stand_in}")
