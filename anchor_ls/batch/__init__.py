"""`anchor-ls batch`: tagged snapshots of many (repository, commit) pairs in one run.

manifest (tasks from JSON Lines) -> plan (chains: the tasks of one repository, ordered by
commit) -> chain (one worker walks a chain, moving one index from commit to commit) ->
pool or Ray (where the chains run) -> results (DIR/results.jsonl, what a re-run skips).
"""
