-- :checkhealth anchor_ls
local M = {}

function M.check()
  local h = vim.health
  h.start('anchor-ls')
  if vim.fn.has('nvim-0.11') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()))
  else
    h.error('Neovim 0.11 or later is needed (vim.lsp.config, inlay hints)')
  end
  local config = vim.lsp.config.anchor_ls
  if not config then
    h.error('no lsp/anchor_ls.lua on the runtimepath: add the editors/nvim directory to it')
    return
  end
  local cmd = config.cmd
  if type(cmd) == 'table' then
    if vim.fn.executable(cmd[1]) == 1 then
      h.ok('server command: ' .. table.concat(cmd, ' '))
    else
      h.error(
        cmd[1] .. ' is not executable',
        { 'pip install anchor-ls (into the Python you run Neovim with, or a venv on $PATH)',
          "or setup({ cmd = { '/path/to/python', '-m', 'anchor_ls', 'serve' } })" }
      )
    end
  end
  if (config.cmd_env or {}).PYTHONSAFEPATH == '1' then
    h.ok('starts in ' .. tostring(config.cmd_cwd) .. ' with PYTHONSAFEPATH=1 (no repository module on sys.path)')
  else
    h.warn('cmd_env has no PYTHONSAFEPATH=1: with `python -m`, modules of the working directory can run')
  end
  local clients = vim.lsp.get_clients({ name = 'anchor_ls' })
  if #clients == 0 then
    h.info('no anchor_ls client is running (open a Python file)')
  end
  for _, c in ipairs(clients) do
    h.ok(string.format('client %d running for %s', c.id, c.root_dir or '(no root)'))
  end
end

return M
