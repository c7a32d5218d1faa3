"""MMLongBench's datasets and task categories by name: the one table every module reads.

Each of its datasets (the paper's 16, MM-NIAH's three tasks once per modality: 19 names) by the
name this library gives it (its configs are ``<name>_<length>``), with the task category the paper
reports it under (the report's tables and plot), the builder family that makes it, the release
folder that holds it (``mmlb_data/<folder>/``, also the ``task`` of the VLMEvalKit TSVs), the
TSVs' ``source_dataset`` and the name MMLongBench's ``configs/*.yaml`` give it (EdinburghNLP/MMLongBench @22b9f27, scripts/generate_configs.py,
VLMEvalKit's build_mmlongbench_tsv.py). Which benchmark covers which family is in the card
templates' headers (``dataset/cards/``); the other benchmarks' datasets are their builders'.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dataset:
    name: str  # this library's (config names start with it)
    category: str  # the paper's task category
    family: str  # the builder family (``mmlb.builders`` entry point) that makes it
    folder: str  # the release's mmlb_data/<folder>/, the TSVs' ``task``
    tsv_name: str  # the TSVs' ``source_dataset``
    yaml_name: str  # configs/*.yaml's


def _niah(task: str, modality: str) -> Dataset:
    return Dataset(f"mm_niah_{task}_{modality}", "NIAH", "mmniah", "NIAH", f"{task}-{modality}",
                   f"mm_niah_{task}-{modality}")


def _same(name: str, category: str, family: str, folder: str) -> Dataset:
    return Dataset(name, category, family, folder, name, name)


#: MMLongBench's datasets, by category in the paper's order
DATASETS: tuple[Dataset, ...] = (
    _same("infoseek", "VRAG", "vrag", "vrag"), _same("viquae", "VRAG", "vrag", "vrag"),
    _same("vh_single", "NIAH", "vh", "NIAH"), _same("vh_multi", "NIAH", "vh", "NIAH"),
    *(_niah(task, modality) for modality in ("text", "image") for task in ("retrieval", "counting", "reasoning")),
    *(_same(name, "ICL", "icl", "ICL") for name in ("cars196", "food101", "inat2021", "sun397")),
    Dataset("gov_report", "Summ", "summ", "summ", "gov", "gov-report"),
    Dataset("multi_lexsum", "Summ", "summ", "summ", "lexsum", "multi-lexsum"),
    *(_same(name, "DocVQA", "docvqa", "documentQA") for name in ("longdocurl", "mmlongdoc", "slidevqa")),
)
BY_NAME: dict[str, Dataset] = {d.name: d for d in DATASETS}
#: the release's folders (the TSVs' tasks), in the paper's category order
FOLDERS: tuple[str, ...] = tuple(dict.fromkeys(d.folder for d in DATASETS))


def in_category(category: str) -> tuple[str, ...]:
    """The names of the datasets of one category (``DocVQA`` -> longdocurl, mmlongdoc, slidevqa)."""
    return tuple(d.name for d in DATASETS if d.category == category)


#: dataset-name prefix -> task category for ``mmlb eval``'s report (an example's meta "category"
#: wins): every dataset above, and the other names configs of the same tasks carry
CATEGORIES: dict[str, str] = {
    **{d.name: d.category for d in DATASETS},
    "vh_": "NIAH", "visual_haystack": "NIAH", "mm_niah": "NIAH", "mmniah": "NIAH", "mmneedle": "NIAH",
    "vrag": "VRAG", "icl": "ICL", "govreport": "Summ",
}
