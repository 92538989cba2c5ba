"""Layer 3: CodeAnchor tags: policy, rendering, and the materialize/strip/check transforms.

- `policy`: resolve_policy(name, mean_out_degree, max_items), fields_for(graph, id, policy)
  (what the editor shows), block_fields (what a materialized block writes), tags_file
- `render`: block_lines(entity, fields), short same-file links (short_id / expand_id)
- `text`: materialize / strip / check, pure functions on a file's bytes
- `apply`: the same on files and trees (in place, snapshot export, strip, check)
- `commands`: the `tag`, `strip` and `check` subcommands of the CLI
"""
