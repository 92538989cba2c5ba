"""The index asked one question at a time: the queries behind `anchor-ls mcp` and the CLI's
`find`, `callers`, `impact`... commands, which print the same objects.

A layer beside the server (it imports index and tags, never pygls or lsprotocol).
"""
