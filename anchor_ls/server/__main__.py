"""`python -m anchor_ls.server [--tcp HOST:PORT]`: the language server without the CLI.

No `from __future__` and nothing imported before the working directory is off sys.path
(see anchor_ls.syspath).
"""

from anchor_ls.syspath import keep_repository_off_path

keep_repository_off_path()

import argparse  # noqa: E402


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m anchor_ls.server")
    parser.add_argument("--tcp", type=parse_address, metavar="HOST:PORT", help="listen on TCP")
    args = parser.parse_args(argv)
    from anchor_ls.server.app import run  # after the arguments: pygls takes a while to import

    run(args.tcp)


if __name__ == "__main__":
    main()
