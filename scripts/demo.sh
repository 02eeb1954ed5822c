#!/usr/bin/env bash
# End-to-end demo on a throw-away kit root: init, register a run, record a verdict,
# record the PM's label (signed with an SSH key when ssh-keygen is there to make
# one), verify the ledgers, then read the calibration metrics and the queue.
# Leaves the repository's own state/ alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="$(mktemp -d "${TMPDIR:-/tmp}/pmos-demo.XXXXXX")/kit"

step() { printf '\n$ %s\n' "$*"; "$@"; }

step pmos init "$kit"
export PMOS_ROOT="$kit"
step pmos run register --run-id demo-run-1 --initiative-id demo-initiative \
  --builder-model claude-sonnet-4 --contract "$repo/examples/contract.yaml"
step pmos eval record --file "$repo/examples/verdict.json"
sign=()
if command -v ssh-keygen >/dev/null 2>&1; then
  # Signed PM labels: the demo PM's SSH key (a real PM uses the key they sign
  # commits with), listed in the kit's allowed signers; labels must be signed.
  step ssh-keygen -q -t ed25519 -N "" -C demo-pm -f "$kit/demo-pm-key"
  printf 'demo-pm %s\n' "$(cut -d' ' -f1,2 "$kit/demo-pm-key.pub")" >"$kit/allowed_signers"
  printf 'signing:\n  allowed_signers: allowed_signers\n  required: true\n' >>"$kit/pmos.yaml"
  sign=(--sign-key "$kit/demo-pm-key")
fi
step pmos accept demo-run-1 --label pass --by demo-pm --note "works as asked" "${sign[@]}"
step pmos ledger show evals
step pmos ledger verify
step pmos metrics
step pmos queue
printf '\ndemo kit left at %s\n' "$kit"
