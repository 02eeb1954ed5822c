#!/usr/bin/env bash
# The kit's writer entry point. Forwards to the pmos CLI with this kit as the root,
# so it works from any working directory (a product repo's root included):
#
#   pmos/scripts/pmos-log.sh eval RUN_ID INITIATIVE_ID SCORE VERDICT RUBRIC_PATH [EVALUATOR_MODEL] --criterion ID=pass|fail|unverified[:EVIDENCE]... --standards pass|fail [--note TEXT]
#     (the same as 'pmos eval log': one --criterion per done-criterion of the run's contract,
#      the spec axis derived from them; a run without a contract takes --spec pass|fail instead)
#   pmos/scripts/pmos-log.sh eval RUN_ID INITIATIVE_ID SKIPPED "REASON" [RUBRIC_PATH] [EVALUATOR_MODEL]
#   pmos/scripts/pmos-log.sh run  --run-id R --initiative-id I --builder-model M [--contract FILE] [--repo PATH_OR_URL --base REV --head REV]
#   pmos/scripts/pmos-log.sh accept RUN_ID --label pass|fail --by NAME [--note TEXT] [--sign-key PM_KEY]
#
# Arguments are passed on unchanged; the exit code is pmos's (0 ok, 2 rejected, nothing written).
set -euo pipefail

kit_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ -n "${PMOS_BIN:-}" ]; then
  pmos=("$PMOS_BIN")
elif command -v pmos >/dev/null 2>&1; then
  pmos=(pmos)
else
  pmos=("${PYTHON:-python3}" -m pmos)
fi

if [ $# -eq 0 ]; then
  echo "usage: $(basename "$0") eval|run|accept ARGS..." >&2
  exit 2
fi

sub="$1"
shift
case "$sub" in
  eval) exec "${pmos[@]}" --root "$kit_root" eval log "$@" ;;
  run) exec "${pmos[@]}" --root "$kit_root" run register "$@" ;;
  accept) exec "${pmos[@]}" --root "$kit_root" accept "$@" ;;
  *)
    echo "$(basename "$0"): unknown subcommand '$sub' (expected eval, run or accept)" >&2
    exit 2
    ;;
esac
