"""runner: the reference model runner (`mmlb run`): a built config streamed through a model into
predictions JSONL.

Reading ahead (``prefetch``, ``pipeline``), chat assembly (``chat``), backends (``hf``, ``vllm``)
and Ray replicas (``ray_run``). torch, transformers, vllm and ray are imported lazily.

May import every layer up to ``evaluation``; independent of ``exports``.
"""
