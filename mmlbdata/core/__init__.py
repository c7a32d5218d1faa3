"""core: what every layer shares and no benchmark owns.

Counting (``tokens``: Llama-2 text tokens + one image token per 28x28 pixels after Qwen2.5-VL's
smart_resize), packing to a budget (``lengths``), the example schema (``schema``), the one
content-addressed image store (``store``), SHA-256 seeds (``seeding``), paths from data kept
inside their root (``paths``), locks, the build report, optional-extra imports (``extras``) and
the two executors a unit of work can run on: a local process pool or Ray (``parallel``,
``raycluster``).

The bottom layer: it imports nothing else of ``mmlbdata`` (the contract in pyproject.toml's
``[tool.importlinter]`` checks it).
"""
