"""evaluation: predictions x a built config -> scores, as the official code scores them.

``metrics/`` (a registry of metrics and the one list of family modules that fill it),
``parse`` (answer parsing), ``judge`` / ``docqa_judge`` (LLM judges), ``evaluate`` (per-example
scores and tables) and ``report`` (tables, plots, baselines); ``published`` (the papers' result
tables, package data in ``papers/``), ``compare_paper`` (a run on those tables) and ``figures``
(the papers' figures drawn from a run). Official-parity rules are read from ``mmlbdata.official``.

May import every layer below it (core .. dataset); never the runner, exports or cli.
"""
