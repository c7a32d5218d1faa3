#!/usr/bin/env bash
# Build a benchmark, write its card and push it to the Hub, resumably at every step.
#
#   scripts/publish.sh BENCHMARK SOURCES_DIR OUT_DIR REPO_ID [extra `mmlb push` options ...]
#   e.g. scripts/publish.sh mmneedle /data/sources /data/mmneedle org/mmneedle --private
#
# Build options come from $BUILD_OPTS (e.g. BUILD_OPTS="--num-proc 4"). The token comes from
# `huggingface-cli login` or HF_TOKEN; it is never printed. Rerun after any failure.
set -euo pipefail
if [ "$#" -lt 4 ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
benchmark="$1" sources="$2" out="$3" repo="$4"
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck disable=SC2086
"$here/build_all.sh" "$benchmark" "$sources" "$out" ${BUILD_OPTS:-}
"${MMLB:-mmlb}" card "$out" --benchmark "$benchmark" --repo "$repo"
# images left by rebuilds: removed here, and push deletes them from the repository too
"${MMLB:-mmlb}" gc "$out" --delete
"${MMLB:-mmlb}" push "$out" --repo "$repo" "$@"
