#!/usr/bin/env bash
# End-to-end demo on a throw-away kit root: init, register a run, record a verdict,
# record the PM's label, verify the ledgers, then read the calibration metrics and
# the queue. Leaves the repository's own state/ alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="$(mktemp -d "${TMPDIR:-/tmp}/pmos-demo.XXXXXX")/kit"

step() { printf '\n$ %s\n' "$*"; "$@"; }

step pmos init "$kit"
export PMOS_ROOT="$kit"
step pmos run register --run-id demo-run-1 --initiative-id demo-initiative \
  --builder-model claude-sonnet-4 --contract "$repo/examples/contract.yaml"
step pmos eval record --file "$repo/examples/verdict.json"
step pmos accept demo-run-1 --label pass --by demo-pm --note "works as asked"
step pmos ledger show evals
step pmos ledger verify
step pmos metrics
step pmos queue
printf '\ndemo kit left at %s\n' "$kit"
