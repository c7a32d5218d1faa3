"""MMLongBench's two evaluation protocols, in one place: the paper's v1.0 and the current v1.1.

``EdinburghNLP/MMLongBench`` was first released at commit 26197d2 (the paper); its v1.1 update
(README "v1.1 Update", commits ceedb4c ... 22b9f27) changed four things that move prompts or
scores. Everything in this project that differs between the two asks :func:`get` for a
:class:`Protocol` and reads one of its flags, never the protocol's name:

* ``doc_page_ids``: document-QA page items ``Document {doc_id:.15} (page N): <image>`` (v1.0) or
  ``Document {doc_id:.15}: <image>`` (v1.1, data.py ``load_doc_qa`` since ceedb4c);
* ``parse_first_line``: utils.py ``parse_output`` reads the answer up to the end of its line
  (v1.0) or everything after the prefix (v1.1, ``re.IGNORECASE | re.DOTALL`` since 476fe86);
* ``docqa_judge``: document QA scored by an LLM judge (v1.1, ``--docqa_llm_judge`` default True
  since 476fe86) instead of the rule set of ``eval_docqa_score``;
* ``drop_quoted_images``: ``load_vrag`` leaves out records whose image path holds a double quote
  (ViQuAE; v1.1, since bf8fbae), before the paper's seeded subset is drawn.

The protocol is chosen with ``--protocol`` (``mmlb build``, ``mmlb eval``), the ``protocol`` option
(Python API, metrics) or ``$MMLB_PROTOCOL`` (lmms-eval hooks); the default is v1.1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

REPOSITORY = "EdinburghNLP/MMLongBench"


@dataclass(frozen=True)
class Protocol:
    name: str
    commit: str  # the EdinburghNLP/MMLongBench commit whose code this protocol reproduces
    doc_page_ids: bool
    parse_first_line: bool
    docqa_judge: bool
    drop_quoted_images: bool


PROTOCOLS: dict[str, Protocol] = {
    "v1.1": Protocol("v1.1", "22b9f27d311b60b37a94607b7dde92becc6fc2bb", doc_page_ids=False,
                     parse_first_line=False, docqa_judge=True, drop_quoted_images=True),
    "v1.0": Protocol("v1.0", "26197d254fc6befc090f4d6198ebb77e0a78a988", doc_page_ids=True,
                     parse_first_line=True, docqa_judge=False, drop_quoted_images=False),
}
DEFAULT = "v1.1"


def get(name: Optional[str] = None) -> Protocol:
    """The protocol called ``name`` (``"1.1"`` and ``"v1.1"`` alike); None or "": the default."""
    if isinstance(name, Protocol):
        return name
    text = str(name or "").strip() or DEFAULT
    key = text if text.startswith("v") else f"v{text}"
    if key not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {name!r}")
    return PROTOCOLS[key]


def of_options(options: Mapping[str, Any]) -> Protocol:
    """The ``protocol`` option of a metric or a builder (absent: the default)."""
    return get(options.get("protocol"))
