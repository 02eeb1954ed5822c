#!/usr/bin/env bash
# The kit's writer entry point. Forwards to the pmos CLI with this kit as the root,
# so it works from any working directory (a product repo's root included), through
# a symlink, and with CDPATH exported.
#
# Arguments are passed on unchanged; the exit code is pmos's (0 ok, 2 rejected or
# bad usage, nothing written). Run it with --help for the three forms.
set -euo pipefail

usage() {
  local me
  me="$(basename -- "$0")"
  cat <<EOF
usage: $me eval RUN_ID INITIATIVE_ID SCORE VERDICT RUBRIC_PATH [EVALUATOR_MODEL] --criterion ID=pass|fail|unverified[:EVIDENCE]... --standards pass|fail [--note TEXT] [--allow-unknown-run]
       $me eval RUN_ID INITIATIVE_ID SKIPPED REASON [RUBRIC_PATH] [EVALUATOR_MODEL] [--allow-unknown-run]
       $me run --run-id RUN_ID --initiative-id INITIATIVE_ID --builder-model MODEL [--contract FILE] [--repo PATH_OR_URL --base REV --head REV]
       $me accept RUN_ID --label pass|fail --by NAME [--note TEXT] [--verdict RECORD_ID] [--sign-key PM_KEY] [--allow-unknown-run]

eval takes one --criterion per done-criterion of the run's contract (the spec axis is
derived from them); a run without a contract takes --spec pass|fail instead. A run must
be registered (run) before its verdict, unless --allow-unknown-run; run without --run-id
makes a unique run id and prints it.

Records into the kit this script belongs to (its parent folder), from any directory:
  eval    a verdict in the short form        (pmos eval log)
  run     a run and its pre-run contract     (pmos run register)
  accept  a PM's label (PMs only)            (pmos accept)

RUBRIC_PATH is relative to the kit root; EVALUATOR_MODEL defaults to \$PMOS_EVALUATOR_MODEL.
Add --help after a form for its options. The pmos command is taken from \$PMOS_BIN, else
PATH, else the Python in \$PYTHON (default python3) if pmos is installed there.
Exit codes: 0 recorded, 2 rejected or bad usage (nothing written).
EOF
}

# This script's real folder, whatever the caller's CDPATH and however it was called:
# follow each symlink to the file it names, then take the physical parent.
here() {
  local source="${BASH_SOURCE[0]}" dir
  while [ -L "$source" ]; do
    dir="$(CDPATH='' cd -P -- "$(dirname -- "$source")" >/dev/null && pwd)"
    source="$(readlink -- "$source")"
    case "$source" in
      /*) ;;
      *) source="$dir/$source" ;;
    esac
  done
  CDPATH='' cd -P -- "$(dirname -- "$source")" >/dev/null && pwd
}

kit_root="$(CDPATH='' cd -P -- "$(here)/.." >/dev/null && pwd)"

case "${1:-}" in
  "" | -h | --help)
    usage
    [ $# -eq 0 ] && exit 2
    exit 0
    ;;
esac

if [ -n "${PMOS_BIN:-}" ]; then
  pmos=("$PMOS_BIN")
elif command -v pmos >/dev/null 2>&1; then
  pmos=(pmos)
elif "${PYTHON:-python3}" -P -c 'import pmos.cli' >/dev/null 2>&1; then
  # -P: never import a folder named pmos/ from the working directory (a vendored
  # kit is one) in place of the installed package.
  pmos=("${PYTHON:-python3}" -P -m pmos)
else
  cat >&2 <<EOF
$(basename -- "$0"): the pmos command is not installed (not on PATH, and ${PYTHON:-python3} cannot import it).
Install it, for example into a virtual environment:
  python3 -m venv .venv && .venv/bin/pip install PATH_OR_URL_OF_PMOS && export PATH="\$PWD/.venv/bin:\$PATH"
or point PMOS_BIN at a pmos executable. Nothing was recorded.
EOF
  exit 2
fi

sub="$1"
shift
case "$sub" in
  eval) exec "${pmos[@]}" --root "$kit_root" eval log "$@" ;;
  run) exec "${pmos[@]}" --root "$kit_root" run register "$@" ;;
  accept) exec "${pmos[@]}" --root "$kit_root" accept "$@" ;;
  *)
    echo "$(basename -- "$0"): unknown form '$sub' (expected eval, run or accept; see --help)" >&2
    exit 2
    ;;
esac
