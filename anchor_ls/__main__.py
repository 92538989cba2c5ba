"""`anchor-ls` and `python -m anchor_ls`: the CLI, with nothing of the working directory on
sys.path (see syspath).

No `from __future__` here: that too is an import through sys.path.
"""

from anchor_ls.syspath import keep_repository_off_path


def main() -> int:
    keep_repository_off_path()  # first: every import after it goes through sys.path
    from anchor_ls.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
