"""What several test files share: LSP sessions, processes, planted repositories, codecs.

pyproject.toml puts tests/ on pytest's pythonpath, so tests import `support.<module>`;
no test file is imported by another.
"""
