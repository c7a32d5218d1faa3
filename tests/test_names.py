"""official/names.py is the one table of MMLongBench's dataset and category names: what the builders
register, the card's families, the release files and the report's categories all agree with it."""
from __future__ import annotations

from mmlbdata.dataset.card import benchmark_families
from mmlbdata.dataset.registry import all_configs
from mmlbdata.evaluation.evaluate import category_of
from mmlbdata.official import names
from mmlbdata.sources.mmlb_release import ABLATIONS, RELEASE_FILES


def test_the_builders_register_every_dataset_of_the_table_in_its_family():
    configs = all_configs()
    families = set(benchmark_families()["mmlongbench"])
    registered = {(entry.config.dataset, entry.family) for entry in configs.values() if entry.family in families}
    table = {(d.name, d.family) for d in names.DATASETS}
    assert table <= registered and {d.family for d in names.DATASETS} == families
    others = {dataset for dataset, _ in registered} - {d.name for d in names.DATASETS}
    assert others <= set(ABLATIONS), others  # the paper's ablation sets are MMLongBench's only other datasets
    assert len(names.DATASETS) == 19 and names.FOLDERS == ("vrag", "NIAH", "ICL", "summ", "documentQA")


def test_release_files_and_report_categories_follow_the_table():
    for d in names.DATASETS:
        assert RELEASE_FILES[d.name].category == d.folder
        assert category_of({"dataset": d.name}) == d.category
    assert names.in_category("DocVQA") == ("longdocurl", "mmlongdoc", "slidevqa")
    # the other spellings configs carry (MMNeedle's needles are NIAH; meta's category wins)
    assert category_of({"dataset": "mmneedle_multi2"}) == "NIAH"
    assert category_of({"dataset": "vh_single", "meta": '{"category": "Custom"}'}) == "Custom"
    assert category_of({"dataset": "babilong"}) == "babilong"
