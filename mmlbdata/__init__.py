"""mmlbdata: long-context multimodal benchmarks as Hugging Face datasets.

Data flows one way: source reader -> family recipe (``mmlb_builders/``) -> core (count, pack,
store) -> writer -> card. See ARCHITECTURE.md.
"""

__version__ = "0.1.0"
