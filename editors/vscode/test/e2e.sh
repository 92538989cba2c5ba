#!/usr/bin/env bash
# Real-editor test of the VS Code client: builds the .vsix, installs it into code-server,
# opens a copy of fixtures/example in headless Chromium (driven by playwright-core) and
# checks that anchor-ls's inlay hints and code lenses render, that hovering a name in a
# hint resolves its tooltip and link, that a lens opens the references view, that the
# palette commands reach the server, that no module planted in the workspace ran, and that
# the MCP server definitions are registered and listed (MCP: List Servers) where the editor
# has the API (elsewhere the output channel must say why not); then that an untrusted
# workspace's own interpreter never runs; then that a nested project's tests count in the
# lens of the function they call (fixtures/source_roots), that a loose file opened
# without a workspace folder gets its folder indexed, and that `anchorLs.python` (workspace
# settings) gives the index a library's classes (fixtures/libraries), which go when it is
# removed, while the workspace's own .venv/bin/python never runs.
#
# Usage: e2e.sh              install what is missing, then run the test
#        e2e.sh --prepare    only install (apt, .vsix, code-server, playwright-core): no
#                            Python needed; scripts/test.sh runs this while pytest runs
#
# Needs: Node 20 + npm, apt (as root, for Chromium and build headers) and a Python with
# anchor-ls installed: ANCHOR_LS_PYTHON (default python3).
# Everything it installs goes to editors/vscode/.e2e/ (git-ignored) or comes from apt;
# a second run reuses it. Every process it starts runs in its own process group and is
# stopped on exit.
#
# Env: ANCHOR_LS_PYTHON   interpreter that has anchor-ls (default python3)
#      E2E_FIXTURE        repository to open (default fixtures/example, copied to a tmp dir)
#      E2E_SCREENSHOT     where to write the screenshot (default .e2e/screenshot.png)
#      E2E_KEEP=1         keep the run directory (logs, workspace) for inspection
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"   # editors/vscode
REPO="$(cd "$HERE/../.." && pwd)"
E2E="$HERE/.e2e"
CS_VERSION="4.100.3"            # last code-server release that runs on Node 20
PW_VERSION="1.65.1"             # playwright-core: drives the system Chromium, downloads none
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PY="${ANCHOR_LS_PYTHON:-python3}"
T0=$SECONDS

case "${1:-}" in
  "") MODE=run ;;
  --prepare) MODE=prepare ;;
  *) echo "usage: $0 [--prepare]" >&2; exit 2 ;;
esac

log() { printf '[e2e %4ds] %s\n' "$((SECONDS - T0))" "$*"; }
die() { log "FAIL: $*"; exit 1; }

mkdir -p "$E2E"

# --- cleanup: every process group this script starts, and the run directory -------------
RUN=""
PGIDS=()
# Pids whose command line mentions $1 (from /proc: pgrep may not be installed).
pids_with() {
  local f cmd
  for f in /proc/[0-9]*/cmdline; do
    cmd="$(tr '\0' ' ' 2>/dev/null <"$f")" || continue   # gone since the glob: skip
    if [[ "$cmd" == *"$1"* ]]; then f="${f#/proc/}"; echo "${f%/cmdline}"; fi
  done
  return 0
}
cleanup() {
  local rc=$?
  # code-server, its extension host and the language server share code-server's group;
  # the driver and the background .vsix build have their own. Playwright starts Chromium
  # in a group of its own too: those processes are found by this run's profile directory.
  local pids=""
  [ -z "$RUN" ] || pids="$(pids_with "$RUN/chromium")"
  for pg in "${PGIDS[@]}"; do
    kill -TERM -- "-$pg" 2>/dev/null || true
  done
  for _ in $(seq 1 50); do
    local alive=0
    for pg in "${PGIDS[@]}"; do kill -0 -- "-$pg" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pg in "${PGIDS[@]}"; do
    kill -KILL -- "-$pg" 2>/dev/null || true
  done
  [ -z "$RUN" ] || pids="$pids $(pids_with "$RUN/chromium")"
  for pid in $pids; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$RUN" ]; then
    if [ "${E2E_KEEP:-}" = 1 ] || [ $rc -ne 0 ]; then
      log "run directory kept: $RUN"
    else
      rm -rf "$RUN"
    fi
  fi
  log "done in $((SECONDS - T0))s (exit $rc)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 0. the Python that runs the server -------------------------------------------------
if [ "$MODE" = run ]; then
  PY_ABS="$(command -v "$PY" || true)"
  [ -n "$PY_ABS" ] || die "ANCHOR_LS_PYTHON=$PY is not an executable"
  # A pyenv shim resolves its interpreter from the cwd; take the real one.
  PY_ABS="$("$PY_ABS" -c 'import sys; print(sys.executable)')"
  "$PY_ABS" -c 'import anchor_ls.server' 2>/dev/null \
    || die "anchor-ls (with its server) is not importable by $PY_ABS; install the checkout there: $PY_ABS -m pip install -e $REPO"
  log "server interpreter: $PY_ABS"
fi

# --- 1. the extension and playwright-core (npm only: in the background) -----------------
# Neither needs the apt packages below, so they download while apt and code-server do.
VSIX="$HERE/anchor-ls.vsix"
build_vsix() {
  # Rebuilt when missing, older than its sources, or not a whole zip (an interrupted build).
  if [ ! -f "$VSIX" ] || [ -n "$(find "$HERE/src" "$HERE/package.json" "$HERE/package-lock.json" \
        "$HERE/README.md" "$HERE/media" -newer "$VSIX" -print -quit)" ] \
      || ! python3 -m zipfile -t "$VSIX" >/dev/null 2>&1; then
    log "building the .vsix (npm ci && npm run package)"
    rm -f "$VSIX"
    (cd "$HERE" \
      && if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
           npm ci --no-audit --no-fund >"$E2E/npm-ci.log" 2>&1; fi \
      && npm run package >"$E2E/package.log" 2>&1) \
      || { tail -30 "$E2E/npm-ci.log" "$E2E/package.log" 2>/dev/null; log "building the .vsix failed"; return 1; }
    log "vsix built: $VSIX"
  fi
  if [ ! -f "$E2E/pw/.complete-$PW_VERSION" ]; then
    log "installing playwright-core $PW_VERSION"
    rm -rf "$E2E/pw" && mkdir -p "$E2E/pw"
    (cd "$E2E/pw" && echo '{"name":"anchor-ls-e2e-driver","private":true}' >package.json \
      && npm install --no-audit --no-fund --save-exact "playwright-core@$PW_VERSION") \
      >"$E2E/pw-install.log" 2>&1 \
      || { tail -20 "$E2E/pw-install.log"; log "installing playwright-core failed"; return 1; }
    touch "$E2E/pw/.complete-$PW_VERSION"
  fi
}
# Its own process group (stopped on exit); T0 shifted so that its log shares our clock.
HERE="$HERE" E2E="$E2E" VSIX="$VSIX" PW_VERSION="$PW_VERSION" T0="$((T0 - SECONDS))" \
  setsid bash -c "$(declare -f log build_vsix); set -euo pipefail; build_vsix" &
NPM_JOB=$!
PGIDS+=($NPM_JOB)

# --- 2. system packages -----------------------------------------------------------------
CS_BIN="$E2E/cs/node_modules/.bin/code-server"
CS_DONE="$E2E/cs/.complete-$CS_VERSION"   # written last: an interrupted install is redone
need_apt=()
[ -x "$CHROMIUM" ] || need_apt+=(chromium fonts-dejavu-core)
[ -x /usr/bin/rg ] || need_apt+=(ripgrep)
if [ ! -f "$CS_DONE" ]; then
  command -v krb5-config >/dev/null || need_apt+=(libkrb5-dev)
  command -v g++ >/dev/null && command -v make >/dev/null || need_apt+=(build-essential)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need_apt[@]}"; } \
    >"$E2E/apt.log" 2>&1 || { tail -20 "$E2E/apt.log"; die "apt-get install failed"; }
  log "apt-get done"
fi
export CHROMIUM

# --- 3. code-server ---------------------------------------------------------------------
if [ ! -f "$CS_DONE" ] || [ ! -x "$CS_BIN" ]; then
  log "installing code-server $CS_VERSION (a few minutes, once)"
  rm -rf "$E2E/cs" && mkdir -p "$E2E/cs" "$E2E/tmp"
  # @vscode/ripgrep downloads a prebuilt rg from the internet unless its cache holds the
  # archive: put Debian's rg there, under the names the versions in code-server look for.
  RG_TARGET="$(node -e 'const a=process.arch;console.log(a==="x64"?"x86_64-unknown-linux-musl":a==="arm64"?"aarch64-unknown-linux-musl":"i686-unknown-linux-musl")')"
  rgdir="$(mktemp -d)"; cp /usr/bin/rg "$rgdir/rg"
  for v in 1.15.9 1.15.10 1.15.11 1.15.12 1.15.13 1.15.14; do
    mkdir -p "$E2E/tmp/vscode-ripgrep-cache-$v"
    for rgv in v13.0.0-10 v13.0.0-4 v14.1.1-1; do
      tar czf "$E2E/tmp/vscode-ripgrep-cache-$v/ripgrep-$rgv-$RG_TARGET.tar.gz" -C "$rgdir" rg
    done
  done
  rm -rf "$rgdir"
  (
    cd "$E2E/cs"
    echo '{"name":"anchor-ls-e2e-code-server","private":true}' >package.json
    # root: install scripts need unsafe-perm; node-pty's build asks before fetching
    # node-gyp (npm_config_yes); TMPDIR points @vscode/ripgrep at the cache above.
    TMPDIR="$E2E/tmp" npm_config_unsafe_perm=true npm_config_yes=true \
      npm install --no-audit --no-fund --save-exact "code-server@$CS_VERSION"
  ) >"$E2E/code-server-install.log" 2>&1 \
    || { tail -40 "$E2E/code-server-install.log"; die "installing code-server failed"; }
  [ -x "$E2E/cs/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] \
    || die "code-server installed without ripgrep (see $E2E/code-server-install.log)"
  touch "$CS_DONE"
fi
log "code-server $("$CS_BIN" --version | head -1)"

wait $NPM_JOB || die "the .vsix build or the playwright-core install failed"
PGIDS=()
log "vsix: $VSIX"
[ "$MODE" = run ] || { log "prepared"; exit 0; }

(cd "$HERE" && ANCHOR_LS_PYTHON="$PY_ABS" npm test >"$E2E/unit.log" 2>&1) \
  || { cat "$E2E/unit.log"; die "npm test (test/launch.test.cjs) failed"; }
log "npm test: $(grep -E '^# (pass|fail)' "$E2E/unit.log" | tr '\n' ' ')"

# --- 4. a fresh profile, the extension and a copy of the fixture ------------------------
RUN="$(mktemp -d "${TMPDIR:-/tmp}/anchor-ls-e2e.XXXXXX")"

FIXTURE="${E2E_FIXTURE:-$REPO/fixtures/example}"
WS="$RUN/workspace"
if [ -f "$FIXTURE/pkg/service.py" ]; then
  cp -r "$FIXTURE" "$WS"
  rm -rf "$WS/.anchor-ls"
else
  log "no fixture at $FIXTURE: using the built-in mini repository"
  mkdir -p "$WS/pkg"
  : >"$WS/pkg/__init__.py"
  cat >"$WS/pkg/service.py" <<'PY'
def checkout(skus):
    return sum(price(s) for s in skus)


def price(sku):
    return len(sku)


def quick_checkout(sku):
    return checkout([sku])


class CheckoutService:
    def run(self, skus):
        return checkout(skus)
PY
fi

# Modules a repository could plant to run code in a Python that imports from it (the
# workspace's `anchor_ls/`, `json/`, `sitecustomize.py`, ...; see tests/support/planted.py): each
# leaves a mark in $MARKS when imported. The extension's probe and server must import none.
MARKS="$RUN/marks"
"$PY_ABS" -P -c 'import sys; sys.path.insert(0, sys.argv[1])
from pathlib import Path
from planted import plant
print(" ".join(plant(Path(sys.argv[2]), Path(sys.argv[3]))))' "$REPO/tests/support" "$WS" "$MARKS" \
  | { read -r names; log "planted in the workspace: $names"; }

# The callers the hint on `def checkout` must name: from the fixture's hand-written
# expected.json (calls from test code are TEST_REF, not CALLED_BY: the policy's own rule),
# or the two callers of the built-in repository.
if [ -f "$WS/expected.json" ]; then
  E2E_CALLERS="$("$PY_ABS" -c 'import json, sys
from anchor_ls.tags.policy import is_test_path
d = json.load(open(sys.argv[1]))
callers = {s for s, t in d["calls"] if t == "pkg/service.py:checkout"}
print(",".join(sorted(c.partition(":")[2] for c in callers if not is_test_path(c.partition(":")[0]))))' "$WS/expected.json")"
else
  E2E_CALLERS="quick_checkout,CheckoutService.run"
fi
export E2E_CALLERS
log "expected callers of checkout: $E2E_CALLERS"

# A Python without anchor-ls, for the "cannot start" message.
python3 -m venv --without-pip "$RUN/bare"
export E2E_BARE_PYTHON="$RUN/bare/bin/python"

mkdir -p "$RUN/data/User" "$RUN/ext"
cat >"$RUN/data/User/settings.json" <<JSON
{
  "anchorLs.interpreter": "$PY_ABS",
  "editor.inlayHints.enabled": "on",
  "editor.inlayHints.maximumLength": 0,
  "editor.codeLens": true,
  "editor.minimap.enabled": false,
  "anchorLs.trace.server": "messages",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "window.zoomLevel": 0,
  "workbench.colorTheme": "Default Dark Modern"
}
JSON
cp "$RUN/data/User/settings.json" "$RUN/settings-initial.json"
printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' >"$RUN/config.yaml"

CS_ARGS=(--config "$RUN/config.yaml" --user-data-dir "$RUN/data" --extensions-dir "$RUN/ext")
"$CS_BIN" "${CS_ARGS[@]}" --install-extension "$VSIX" --force >"$RUN/install-extension.log" 2>&1 \
  || { cat "$RUN/install-extension.log"; die "code-server --install-extension failed"; }
log "extension installed: $(ls "$RUN/ext" | grep -v '\.json$' | tr '\n' ' ')"

# --- 5. start code-server ---------------------------------------------------------------
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export HOME="$RUN/home" XDG_CONFIG_HOME="$RUN/home/.config" XDG_DATA_HOME="$RUN/home/.local/share"
mkdir -p "$HOME"
setsid "$CS_BIN" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override --ignore-last-opened "$WS" >"$RUN/code-server.log" 2>&1 &
CS_PID=$!
PGIDS+=($CS_PID)
healthy() {
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1
}
for _ in $(seq 1 120); do
  healthy && break
  kill -0 "$CS_PID" 2>/dev/null || { cat "$RUN/code-server.log"; die "code-server exited"; }
  sleep 0.5
done
healthy || die "code-server did not come up"
log "code-server on 127.0.0.1:$PORT"

# --- 6. drive the browser ---------------------------------------------------------------
SHOT="${E2E_SCREENSHOT:-$E2E/screenshot.png}"
set +e
CODE_VERSION="$("$CS_BIN" --version | sed -n 's/.*with Code \([0-9][0-9.]*\).*/\1/p' | head -1)"
[ -n "$CODE_VERSION" ] || die "no 'with Code X' in code-server --version"
E2E_CODE_VERSION="$CODE_VERSION" \
E2E_URL="http://127.0.0.1:$PORT/?folder=$WS" E2E_WS="$WS" E2E_RUN="$RUN" E2E_SHOT="$SHOT" \
  NODE_PATH="$E2E/pw/node_modules" setsid node "$HERE/test/e2e-driver.cjs" &
driver=$!
PGIDS+=($driver)
wait $driver
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "--- marks of workspace modules that ran: $(ls "$MARKS" | tr '\n' ' ')"
  echo "--- code-server log (tail) ---"; tail -30 "$RUN/code-server.log"
  for f in $(find "$RUN/data/logs" -name '*anchor-ls*' -o -name 'exthost.log' 2>/dev/null); do
    echo "--- $f (tail) ---"; tail -40 "$f"
  done
  die "the editor checks failed (screenshot of the failure: ${SHOT%.png}-failure.png)"
fi
marks="$(ls "$MARKS")"
[ -z "$marks" ] || die "modules of the workspace ran (module-pid): $(echo $marks)"
log "no module of the workspace ran"
log "screenshot: $SHOT"

# --- 7. MCP: the server definitions are registered where the editor lets extensions ------
# (VS Code 1.99+; the driver saw the server listed); elsewhere the output channel says so.
MCP_LINE="$(find "$RUN/data/logs" -name '*anchor-ls*' -type f -exec grep -h 'MCP server' {} + \
  2>/dev/null | head -1)"
version_at_least() { [ "$(printf '%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
if [[ "$MCP_LINE" == *"MCP server definitions registered"* ]]; then
  log "MCP: server definitions registered (Code $CODE_VERSION)"
elif [[ "$MCP_LINE" == *"MCP server is not registered"* ]]; then
  ! version_at_least "$CODE_VERSION" 1.99 \
    || die "MCP: Code $CODE_VERSION lets extensions register MCP servers, yet: $MCP_LINE"
  log "MCP: Code $CODE_VERSION has no MCP server API for extensions; the extension says so:"
  log "  $MCP_LINE"
else
  die "MCP: the anchor-ls output channel says nothing about the MCP server"
fi

# --- 8. an untrusted workspace that names its own interpreter ----------------------------
# Its .vscode/settings.json sets anchorLs.interpreter to its own .venv/bin/python (a script
# that leaves a mark, then runs the real Python). Opened with workspace trust on and no
# prompt, it stays in Restricted Mode: the server must run with the user's interpreter (the
# hints show), and a user setting of `${workspaceFolder}/.venv/bin/python` is refused there
# with a message; the workspace's interpreter must never run.
kill -TERM -- "-$CS_PID" 2>/dev/null || true
for _ in $(seq 1 50); do kill -0 -- "-$CS_PID" 2>/dev/null || break; sleep 0.1; done
kill -KILL -- "-$CS_PID" 2>/dev/null || true
WS2="$RUN/untrusted"
cp -r "$WS" "$WS2"
rm -rf "$WS2/.anchor-ls"
mkdir -p "$WS2/.vscode" "$WS2/.venv/bin"
printf '#!/bin/sh\n: >"%s/workspace-python-$$"\nexec "%s" "$@"\n' "$MARKS" "$PY_ABS" >"$WS2/.venv/bin/python"
chmod +x "$WS2/.venv/bin/python"
printf '{"anchorLs.interpreter": "${workspaceFolder}/.venv/bin/python"}\n' >"$WS2/.vscode/settings.json"
"$PY_ABS" -c 'import json, sys
s = json.load(open(sys.argv[1]))
s.update({"anchorLs.interpreter": sys.argv[2], "security.workspace.trust.enabled": True,
          "security.workspace.trust.startupPrompt": "never"})
json.dump(s, open(sys.argv[3], "w"), indent=2)' "$RUN/settings-initial.json" "$PY_ABS" "$RUN/data/User/settings.json"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
setsid "$CS_BIN" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --disable-update-check \
  --disable-getting-started-override --ignore-last-opened "$WS2" >"$RUN/code-server-untrusted.log" 2>&1 &
CS_PID=$!
PGIDS+=($CS_PID)
for _ in $(seq 1 120); do
  healthy && break
  kill -0 "$CS_PID" 2>/dev/null || { cat "$RUN/code-server-untrusted.log"; die "code-server exited"; }
  sleep 0.5
done
healthy || die "code-server did not come up"
log "code-server (workspace trust on) on 127.0.0.1:$PORT"
set +e
E2E_MODE=restricted E2E_URL="http://127.0.0.1:$PORT/?folder=$WS2" E2E_WS="$WS2" E2E_RUN="$RUN" \
  E2E_SHOT="${SHOT%.png}-restricted.png" NODE_PATH="$E2E/pw/node_modules" \
  setsid node "$HERE/test/e2e-driver.cjs" &
driver=$!
PGIDS+=($driver)
wait $driver
rc=$?
set -e
marks="$(ls "$MARKS")"
if [ $rc -ne 0 ] || [ -n "$marks" ]; then
  for f in $(find "$RUN/data/logs" -name '*anchor-ls*' 2>/dev/null); do
    echo "--- $f (tail) ---"; tail -20 "$f"
  done
  [ -z "$marks" ] || die "in Restricted Mode, the workspace's interpreter or modules ran: $(echo $marks)"
  die "the Restricted Mode checks failed (screenshot: ${SHOT%.png}-restricted-failure.png)"
fi
log "Restricted Mode: the user's interpreter ran the server, the workspace's never ran"

# --- 9. a nested project and a loose folder ---------------------------------------------
# Each in a code-server of its own, with the first run's user settings (trust off):
#  nested: fixtures/source_roots, Flask's tutorial in small (examples/tutorial has its own
#          pyproject.toml; its tests import `flaskr` as installed); the lens of get_db counts
#          its callers and the nested tests, from the hand-written expected.json.
#  loose:  a folder without pyproject.toml, setup.py or .git, opened as a file with no
#          workspace folder: the server indexes the file's folder and the hint names a
#          caller in a sibling file.
# Usage: drive MODE LOG URL-QUERY (HOSTPORT in it: code-server's address; other E2E_*
# settings in the environment)
drive() {
  kill -TERM -- "-$CS_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 -- "-$CS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$CS_PID" 2>/dev/null || true
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  setsid "$CS_BIN" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
    --disable-telemetry --disable-update-check --disable-workspace-trust \
    --disable-getting-started-override --ignore-last-opened >"$RUN/$2" 2>&1 &
  CS_PID=$!
  PGIDS+=($CS_PID)
  for _ in $(seq 1 120); do
    healthy && break
    kill -0 "$CS_PID" 2>/dev/null || { cat "$RUN/$2"; die "code-server exited"; }
    sleep 0.5
  done
  healthy || die "code-server did not come up"
  log "code-server ($1) on 127.0.0.1:$PORT"
  set +e
  E2E_MODE="$1" E2E_URL="http://127.0.0.1:$PORT/?${3//HOSTPORT/127.0.0.1%3A$PORT}" E2E_RUN="$RUN" \
    E2E_SHOT="${SHOT%.png}-$1.png" NODE_PATH="$E2E/pw/node_modules" \
    setsid node "$HERE/test/e2e-driver.cjs" &
  driver=$!
  PGIDS+=($driver)
  wait $driver
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    for f in $(find "$RUN/data/logs" -name '*anchor-ls*' 2>/dev/null); do
      echo "--- $f (tail) ---"; tail -20 "$f"
    done
    die "the $1 checks failed (screenshot: ${SHOT%.png}-$1-failure.png)"
  fi
}
cp "$RUN/settings-initial.json" "$RUN/data/User/settings.json"
"$PY_ABS" -c 'import json, sys
s = json.load(open(sys.argv[1]))
s["anchorLs.lensFields"] = ["CALLED_BY", "TEST_REF"]
json.dump(s, open(sys.argv[1], "w"), indent=2)' "$RUN/data/User/settings.json"
WS3="$RUN/nested"
cp -r "$REPO/fixtures/source_roots" "$WS3"
rm -rf "$WS3/.anchor-ls"
# Callers of get_db from expected.json: outside test code (CALLED_BY), and in test code
# (TEST_REF; the nested tests and their conftest.py).
read -r E2E_NESTED_CALLERS E2E_NESTED_TESTS < <("$PY_ABS" -c 'import json, sys
from anchor_ls.tags.policy import is_test_path
d = json.load(open(sys.argv[1]))
callers = [s for s, t in d["calls"] if t == "examples/tutorial/flaskr/db.py:get_db"]
tested = [s for s in callers if is_test_path(s.partition(":")[0])]
print(len(callers) - len(tested), len(tested))' "$WS3/expected.json")
export E2E_NESTED_CALLERS E2E_NESTED_TESTS
log "nested project: get_db has $E2E_NESTED_CALLERS callers and $E2E_NESTED_TESTS tests"
drive nested code-server-nested.log "folder=$WS3"
log "nested project: the lens of get_db counts the nested tests"

cp "$RUN/settings-initial.json" "$RUN/data/User/settings.json"
LOOSE="$RUN/loose"
mkdir -p "$LOOSE"
printf 'def slugify(text):\n    return text.lower().replace(" ", "-")\n' >"$LOOSE/helpers.py"
printf 'from helpers import slugify\n\n\ndef main():\n    print(slugify("Hello World"))\n' >"$LOOSE/cli.py"
export E2E_LOOSE_NAME=helpers.py E2E_LOOSE_DEF=slugify E2E_LOOSE_CALLER=main
drive loose code-server-loose.log "payload=$("$PY_ABS" -c 'import json, sys, urllib.parse
print(urllib.parse.quote(json.dumps([["openFile", "vscode-remote://" + sys.argv[1] + sys.argv[2]]])))' HOSTPORT "$LOOSE/helpers.py")"
grep -rqs "no workspace folder; indexing $LOOSE " "$RUN/data/logs" \
  || die "loose folder: the server's log does not say it indexed $LOOSE for want of a folder"
log "loose folder: the server indexed the opened file's folder"

# --- 10. the environment the repository runs on (anchorLs.python) ------------------------
# fixtures/libraries/app (a repository on Django and others) with its workspace settings
# naming, as anchorLs.python, a venv whose packages are fixtures/libraries/site-packages
# (tests/support/library_env.py, as the server and Neovim tests build it). The workspace
# also plants modules and a `.venv/bin/python` that leave a mark when run
# (tests/support/planted.py). The hint and lens show the library's base and the method it
# overrides; with the setting removed, no restart, they show the index without them; and
# nothing of the workspace ran, its .venv/bin/python included.
cp "$RUN/settings-initial.json" "$RUN/data/User/settings.json"
read -r WS4 ENV_PYTHON < <("$PY_ABS" -P -c 'import json, sys; sys.path.insert(0, sys.argv[1])
from pathlib import Path
from library_env import copy_app, make_environment
from planted import plant, plant_interpreter
run, marks = Path(sys.argv[2]), Path(sys.argv[3])
app = copy_app(run / "environment")
plant(app, marks)
plant_interpreter(app, marks)
python = make_environment(run / "libraries-env")
(app / ".vscode").mkdir()
(app / ".vscode" / "settings.json").write_text(json.dumps({"anchorLs.python": str(python)}))
print(app, python)' "$REPO/tests/support" "$RUN" "$MARKS")
log "environment: $WS4 with anchorLs.python $ENV_PYTHON"
E2E_WS="$WS4" drive environment code-server-environment.log "folder=$WS4"
grep -rqsF "libraries from $ENV_PYTHON (from setting)" "$RUN/data/logs" \
  || die "environment: the anchor-ls log does not say the libraries come from $ENV_PYTHON"
marks="$(ls "$MARKS")"
[ -z "$marks" ] || die "environment: the workspace's interpreter or modules ran: $(echo $marks)"
log "environment: the library's base and override shown with anchorLs.python, gone without it; the workspace's .venv/bin/python never ran"
log "PASS"
