"""sources: the benchmarks' public releases, read in their original formats, and fetched.

One reader per release format (COCO, MMLongBench-Doc, LongDocURL, SlideVQA, GovReport,
Multi-LexSum, MM-NIAH, VisualHaystack, InfoSeek, ViQuAE, ICL sets, LongVideoBench, ReadBench,
MMLongBench's and MMNeedle's own releases): each yields plain records and reports bad ones;
none writes output. Beside them, how the files arrive: ``registry.yaml`` (every source key's
official files), ``fetch`` (plan, download, place), ``download`` (HTTP and Hub, resumable,
checked) and ``archives`` (safe extraction).

May import the layers below it: ``core``, ``media``, ``retrieval`` and ``official`` (the readers
use core and official; no reader renders or searches).
"""
