#!/usr/bin/env bash
# End-to-end demo on a throw-away kit root: init, register a run, record a verdict,
# record the PM's label (signed with an SSH key when ssh-keygen is there to make
# one), verify the ledgers, read the calibration metrics and the queue, then judge
# and label a few more runs and write the board (needs the 'board' extra:
# pip install 'pmos[board]'). Leaves the repository's own state/ alone, and removes
# the throw-away folder when it ends, however it ends; the board goes to
# $PMOS_DEMO_BOARD when set (kept), else into the throw-away kit.
#
# PMOS_DEMO_SCREENSHOT=docs/board.png also takes a screenshot of the board with
# Debian's headless chromium (how the README's picture was made).
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
sign=()
if command -v ssh-keygen >/dev/null 2>&1; then
  # Signed PM labels: the demo PM's SSH key (a real PM uses the key they sign
  # commits with), listed in the kit's allowed signers; labels must be signed.
  step ssh-keygen -q -t ed25519 -N "" -C demo-pm -f "$kit/demo-pm-key"
  step bash -c "printf 'demo-pm %s\\n' \"\$(cut -d' ' -f1,2 $(quote "$kit/demo-pm-key.pub"))\" >$(quote "$kit/allowed_signers")"
  step bash -c "printf 'signing:\\n  allowed_signers: allowed_signers\\n  required: true\\n' >>$(quote "$kit/pmos.yaml")"
  sign=(--sign-key "$kit/demo-pm-key")
fi
step pmos accept demo-run-1 --label pass --by demo-pm --note "works as asked" "${sign[@]}"
step pmos ledger show evals
step pmos ledger verify
step pmos metrics
step pmos queue
# More runs, so the board has agreement to show: each is registered, judged in
# the short form by one of two evaluator models, and labelled by the PM
# (evaluator model, score, verdict, PM label; "-" leaves it unlabelled).
printf '\n# six more runs are registered, judged and labelled (quietly)\n'
rubric=planning/evals/agent-run-eval-rubric.md
n=1
for run in "gpt-5 0.91 PASS pass" "gpt-5 0.34 FAIL fail" "gpt-5 0.78 PASS fail" \
  "claude-opus-4 0.88 PASS pass" "claude-opus-4 0.41 FAIL fail" "claude-opus-4 0.83 PASS -"; do
  read -r model score verdict label <<<"$run"
  n=$((n + 1))
  axis=pass
  [ "$verdict" = FAIL ] && axis=fail
  pmos run register --run-id "demo-run-$n" --initiative-id demo-initiative \
    --builder-model claude-sonnet-4 >/dev/null
  pmos eval log "demo-run-$n" demo-initiative "$score" "$verdict" "$rubric" "$model" \
    --spec "$axis" --standards "$axis" >/dev/null
  if [ "$label" != - ]; then
    pmos accept "demo-run-$n" --label "$label" --by demo-pm --note "demo label" "${sign[@]}" \
      >/dev/null 2>&1
  fi
done
pmos run register --run-id demo-run-waiting --initiative-id demo-initiative \
  --builder-model claude-sonnet-4 >/dev/null

board="${PMOS_DEMO_BOARD:-$kit/state/board.html}"
step pmos board --out "$board"
if [ -n "${PMOS_DEMO_SCREENSHOT:-}" ]; then
  profile="$(mktemp -d "${TMPDIR:-/tmp}/pmos-demo-chromium.XXXXXX")"
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --window-size=1200,2400 \
    --screenshot="$PMOS_DEMO_SCREENSHOT" "file://$board" 2>/dev/null
  rm -rf "$profile"
  printf 'screenshot of the board written to %s\n' "$PMOS_DEMO_SCREENSHOT"
fi
if [ -n "${PMOS_DEMO_BOARD:-}" ]; then
  printf '\nboard: %s (open it in a browser)\n' "$(quote "$board")"
else
  printf '\nboard: %s (removed with the kit; set PMOS_DEMO_BOARD=FILE to keep it)\n' \
    "$(quote "$board")"
fi
printf 'demo finished; the throw-away kit %s is removed\n' "$(quote "$kit")"
