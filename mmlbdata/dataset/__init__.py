"""dataset: recipes' examples into a Hugging Face dataset folder, and that folder onto the Hub.

The config registry (``registry``: config name -> builder, through the ``mmlb.builders`` entry
points), the build (``build``: builder -> writer, progress, resume; its executor handed in, Ray's
in ``ray_build``), the two on-disk layouts (``writer``), statistics from the parquet files
(``stats``, ``paper_stats``), the README front matter and the dataset card (``card``,
``cards/``), the push (``hub``), in-memory loads cached per folder location and build (``loading``), document-QA packing (``docpack``) and the demo sources
(``demo``).

May import ``core``, ``media``, ``retrieval``, ``official`` and ``sources``; never ``mmlb_builders``
(found through entry points) and never the layers above (evaluation, runner, exports, cli).
"""
