"""Layer 3: CodeAnchor tags: policy, rendering, and the materialize/strip/check transforms.

- `policy`: resolve_policy(name, mean_out_degree, max_items), fields_for(graph, id, policy)
- `render`: block_lines(entity, fields)
- `text`: materialize / strip / check, pure functions on a file's bytes
- `apply`: the same on files and trees (in place, snapshot export, strip, check)
- `commands`: the `tag`, `strip` and `check` subcommands of the CLI
"""
