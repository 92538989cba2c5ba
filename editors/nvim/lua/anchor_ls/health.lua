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
  local how = require('anchor_ls.root').how
  for _, c in ipairs(clients) do
    if c.root_dir then
      local found = how[c.root_dir]
      h.ok(string.format('client %d running for %s%s', c.id, c.root_dir, found and (' (' .. found .. ')') or ''))
    else
      local files = {}
      for bufnr in pairs(c.attached_buffers) do
        table.insert(files, vim.api.nvim_buf_get_name(bufnr))
      end
      h.warn(
        string.format(
          'client %d has no root folder (attached to %s): the server indexes the project of the first Python file opened, and never the home folder or /',
          c.id,
          table.concat(files, ', ')
        ),
        {
          'open a file inside a project: a folder with pyproject.toml, setup.py, setup.cfg, requirements.txt, Pipfile or .git, or a package',
          "or give a root: vim.lsp.config('anchor_ls', { root_dir = ... })",
        }
      )
    end
    local answer = c:request_sync('workspace/executeCommand', { command = 'anchor.stats', arguments = {} }, 3000)
    local stats = answer and answer.result
    if type(stats) == 'table' and type(stats.folders) == 'table' then
      if #stats.folders == 0 then
        h.warn(string.format('client %d: the server indexes no folder (see :LspLog for why)', c.id))
      end
      for _, f in ipairs(stats.folders) do
        local line = string.format('client %d indexes %s (%s): %s', c.id, tostring(f.root), tostring(f.rootFrom), tostring(f.state))
        if f.state == 'failed' then
          h.error(line .. ': ' .. tostring(f.error))
        else
          h.ok(line)
        end
      end
    end
  end
end

return M
