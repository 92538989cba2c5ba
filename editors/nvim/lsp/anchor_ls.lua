-- anchor-ls: repository-wide call / inheritance index of a Python repository, shown as
-- CodeAnchor tags (inlay hints and code lenses). Neovim 0.11+ `vim.lsp.config` format:
--   vim.lsp.enable('anchor_ls')            -- plain, or
--   require('anchor_ls').setup({})         -- with commands, lenses and the quickfix mapping
--
-- The server starts in this plugin's folder, not in the repository, and with PYTHONSAFEPATH=1
-- (Python's -P): neither it nor the interpreters it starts put the working directory on
-- sys.path, so a repository's own `json/`, `anchor_ls/` or `sitecustomize.py` never runs,
-- whatever `cmd` is (`python -m anchor_ls serve` too).
local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')

---@type vim.lsp.Config
return {
  cmd = { 'anchor-ls', 'serve' },
  cmd_cwd = plugin,
  cmd_env = { PYTHONSAFEPATH = '1' },
  filetypes = { 'python' },
  -- The nearest root marker above the file, else the top of its package chain, else its
  -- folder; never / or the home folder (lua/anchor_ls/root.lua, as the server finds it).
  root_dir = require('anchor_ls.root').root_dir,
  settings = {
    anchorLs = {
      policy = 'auto',
      maxItems = 8,
      inlayHints = true,
      codeLens = true,
      hintFields = { 'CALLED_BY', 'BASE', 'DERIVED' },
      lensFields = { 'CALLED_BY', 'REFERENCED_BY', 'CALLS', 'DERIVED', 'OVERRIDES', 'OVERRIDDEN_BY' },
      exclude = {},
      cacheDir = vim.NIL,
      sourceRoots = {},
      -- The interpreter of the environment the repository runs on (its installed packages give
      -- the bases, overrides and calls that leave the repository); vim.NIL: the server's own.
      -- Never guessed: a .venv in the repository is used only when you name it here.
      python = vim.NIL,
    },
  },
}
