-- anchor-ls: repository-wide call / inheritance index of a Python repository, shown as
-- CodeAnchor tags (inlay hints and code lenses). Neovim 0.11+ `vim.lsp.config` format:
--   vim.lsp.enable('anchor_ls')            -- plain, or
--   require('anchor_ls').setup({})         -- with commands, lenses and the quickfix mapping
---@type vim.lsp.Config
return {
  cmd = { 'anchor-ls', 'serve' },
  filetypes = { 'python' },
  root_markers = {
    'pyproject.toml',
    'setup.py',
    'setup.cfg',
    'requirements.txt',
    'Pipfile',
    '.git',
  },
  settings = {
    anchorLs = {
      policy = 'auto',
      maxItems = 8,
      inlayHints = true,
      codeLens = true,
      hintFields = { 'CALLED_BY', 'BASE', 'DERIVED' },
      lensFields = { 'CALLED_BY', 'REFERENCED_BY', 'CALLS', 'DERIVED' },
      exclude = {},
      cacheDir = vim.NIL,
    },
  },
}
