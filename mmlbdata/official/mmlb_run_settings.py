"""MMLongBench's per-dataset run settings, as its ``configs/*.yaml`` and ``arguments.py`` state them
(EdinburghNLP/MMLongBench @22b9f27; the same values at 26197d2).

Each ``configs/<task>_all.yaml`` lists its datasets once per length with ``input_max_length``
8192..131072 and one ``generation_max_length`` (384 for summarisation, 128 elsewhere);
``max_image_num`` and ``image_resize`` are in no yaml, so ``arguments.py``'s defaults hold (None:
every image, at its own size). The paper's runs changed some per model on the command line
(``scripts/run_eval.sh``, e.g. Idefics3 at 64K/128K); those are options of ``mmlb run``, not
defaults. tests/test_runner_profiles.py reads the yaml files from the fetched repository and
checks this table against them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mmlbdata.core.lengths import length_tokens, parse_config_name
from mmlbdata.official.names import DATASETS

#: configs/<file>: (its datasets as the yaml spells them, generation_max_length, max_test_samples)
CONFIG_FILES = {
    "vrag_all.yaml": (("infoseek", "viquae"), 128, 100),
    "vh_all.yaml": (("vh_single", "vh_multi"), 128, 100),
    "mm_niah_text_all.yaml": (("mm_niah_retrieval-text", "mm_niah_counting-text", "mm_niah_reasoning-text"), 128, 50),
    "mm_niah_image_all.yaml": (("mm_niah_retrieval-image", "mm_niah_counting-image", "mm_niah_reasoning-image"),
                               128, 50),
    "icl_all.yaml": (("cars196", "food101", "inat2021", "sun397"), 128, 100),
    "summ_all.yaml": (("gov-report", "multi-lexsum"), 384, 100),
    "docqa_all.yaml": (("longdocurl", "mmlongdoc", "slidevqa"), 128, 100),
    "text_docqa_all.yaml": (("text_doc",), 128, 100),
    "text_rag_all.yaml": (("triviaqa",), 128, 100),
}
#: every yaml's input_max_length, one per length, in this order for each of its datasets
INPUT_MAX_LENGTHS = (8192, 16384, 32768, 65536, 131072)

#: arguments.py defaults that no yaml overrides
DEFAULTS = {"max_image_num": None, "image_resize": None, "do_sample": False, "temperature": 1.0, "top_p": 1.0,
            "generation_min_length": 0, "stop_newline": False, "do_image_splitting": None, "use_chat_template": True}


@dataclass(frozen=True)
class DatasetSettings:
    """One config's official run settings (``dataset``: the name its yaml gives it)."""
    dataset: str
    config_file: str
    input_max_length: int
    generation_max_length: int
    max_test_samples: int
    max_image_num: Optional[int] = None
    image_resize: Optional[float] = None


_OURS = {d.yaml_name: d.name for d in DATASETS}  # the ablation sets (text_doc, triviaqa): one name
#: our dataset name -> (the yaml's name, config file, generation_max_length, max_test_samples)
_TABLE = {_OURS.get(dataset, dataset): (dataset, file, generation, samples)
          for file, (datasets, generation, samples) in CONFIG_FILES.items() for dataset in datasets}


def settings_for(config: str) -> Optional[DatasetSettings]:
    """The official settings of a built config (``vh_single_32k``, ``gov_report_8k``), or None
    for a config MMLongBench's yaml files do not run (another benchmark, a 4K/256K/512K length)."""
    key, length = parse_config_name(config)
    if length is None or key not in _TABLE:
        return None

    tokens = length_tokens(length)
    if tokens not in INPUT_MAX_LENGTHS:
        return None
    dataset, file, generation, samples = _TABLE[key]
    return DatasetSettings(dataset, file, tokens, generation, samples,
                           DEFAULTS["max_image_num"], DEFAULTS["image_resize"])
