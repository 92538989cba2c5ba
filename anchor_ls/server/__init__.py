"""Layer 4: the pygls language server, the only package that imports pygls or lsprotocol.

Start it with `anchor-ls serve` or `anchor_ls.server.app.run(tcp)`.
"""
