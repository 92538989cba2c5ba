#!/usr/bin/env bash
# Install anchor-ls with its test extras into .venv and run the whole test suite
# (lint, engine, tags, server, Neovim client; the VS Code real-editor test when ANCHOR_LS_E2E=1 or in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
