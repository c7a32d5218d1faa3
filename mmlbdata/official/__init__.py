"""official: the benchmarks' own rules, as their released code states them.

Which MMLongBench protocol applies (``protocol``: v1.1 @22b9f27 by default, the paper's v1.0
@26197d2 as an option), the prompt templates of MMLongBench's ``data.py``
(``mmlongbench_prompts``) and of ReadBench (``readbench_prompts``), MMLongBench's dataset and
category names (``names``), what the official runners do to their inputs (``mmlb_run_settings``,
``memlens_run``), and the one table of where this library's defaults deliberately differ from the
official code (``deviations``).

Read by the source readers, the recipes, the evaluator and the cards, so that a rule lives in one
place. May import ``mmlbdata.core`` only.
"""
