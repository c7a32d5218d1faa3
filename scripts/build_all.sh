#!/usr/bin/env bash
# Build every config of one benchmark from a sources folder, then write its card.
#
#   scripts/build_all.sh BENCHMARK SOURCES_DIR OUT_DIR [extra `mmlb build` options ...]
#   e.g. scripts/build_all.sh mmlongbench /data/sources /data/mmlb --num-proc 4
#
# SOURCES_DIR holds one subfolder (or symlink) per source key, as `mmlb list --sources` names
# them (coco/, mmlongbench_doc/ ...). Rerunning after a crash keeps every complete config built
# with the same parameters and rebuilds the rest. BENCHMARK is a template name in mmlbdata/dataset/cards/.
set -euo pipefail
if [ "$#" -lt 3 ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
benchmark="$1" sources="$2" out="$3"
shift 3
MMLB="${MMLB:-mmlb}"
status=0
"$MMLB" build --all --benchmark "$benchmark" --sources-dir "$sources" --out "$out" --no-progress "$@" || status=$?
# a card for whatever was built, even when some configs failed (they are listed above)
if compgen -G "$out/*.metadata.parquet" >/dev/null || compgen -G "$out/data/*/test-*.parquet" >/dev/null; then
    "$MMLB" card "$out" --benchmark "$benchmark"
fi
exit "$status"
