#!/usr/bin/env bash
# End-to-end demo on a throw-away kit root: init, register a run, record a verdict,
# record the PM's label, verify the ledgers, then read the calibration metrics and
# the queue. Leaves the repository's own state/ alone, and removes the throw-away
# folder when it ends, however it ends.
#
# Each step is printed as a shell command, quoted so that the transcript can be
# pasted back into a shell (after `export PMOS_ROOT=...` as printed) and run again.
set -euo pipefail

repo="$(CDPATH='' cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/pmos-demo.XXXXXX")"
trap 'rm -rf -- "$work"' EXIT
kit="$work/kit"

# Print a command the way a shell reads it back, then run it.
step() {
  local quoted=() word
  for word in "$@"; do
    quoted+=("$(quote "$word")")
  done
  printf '\n$ %s\n' "${quoted[*]}"
  "$@"
}

# A word as the shell reads it: bare when it holds only safe characters, else in
# single quotes (a single quote inside becomes '\'').
quote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

step pmos init "$kit"
export PMOS_ROOT="$kit"
printf '\n$ export PMOS_ROOT=%s\n' "$(quote "$kit")"
step pmos run register --run-id demo-run-1 --initiative-id demo-initiative \
  --builder-model claude-sonnet-4 --contract "$repo/examples/contract.yaml"
step pmos eval record --file "$repo/examples/verdict.json"
step pmos accept demo-run-1 --label pass --by demo-pm --note "works as asked"
step pmos ledger show evals
step pmos ledger verify
step pmos metrics
step pmos queue
printf '\ndemo finished; the throw-away kit %s is removed\n' "$(quote "$kit")"
