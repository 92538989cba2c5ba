"""`anchor-ls` and `python -m anchor_ls`: the CLI, under a fixed hash seed (see hashseed)."""

from __future__ import annotations

from anchor_ls.hashseed import rerun_with_fixed_seed


def main() -> int:
    rerun_with_fixed_seed()  # before the imports below: they take 0.3 s
    from anchor_ls.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
