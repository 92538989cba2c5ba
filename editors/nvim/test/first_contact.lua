-- Headless Neovim test of a new user's first steps (driven by tests/test_nvim_first_contact.py):
-- :help anchor_ls, a Python file in a folder with no root marker (hints all the same), the
-- statusline after :AnchorPolicy, a file in the home folder and one of an installed package
-- (clients with no root) and :checkhealth anchor_ls. Writes what it saw to a JSON file.
--
-- Env (and those of harness.lua):
--      ANCHOR_NVIM_LOOSE   a Python file in a folder without markers, with a `def area(`
--      ANCHOR_NVIM_HOMED   a Python file directly in $HOME
--      ANCHOR_NVIM_LIBRARY a Python file of a package in a site-packages outside any project
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local env = vim.env
local result, log, wait_for = H.result, H.log, H.wait_for

local function run()
  local anchor = H.plugin()
  anchor.setup({ cmd = H.server_cmd() })

  -- :help anchor_ls, from the doc/tags the plugin ships.
  local ok, err = pcall(vim.cmd, 'help anchor_ls')
  result.help_error = not ok and tostring(err) or nil
  if ok then
    result.help_file = vim.api.nvim_buf_get_name(0)
    result.help_line = vim.api.nvim_get_current_line()
    vim.cmd('helpclose')
  end

  -- A file in a folder without any root marker.
  local file = assert(env.ANCHOR_NVIM_LOOSE, 'ANCHOR_NVIM_LOOSE')
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client = wait_for('the client to attach', function()
    return vim.lsp.get_clients({ name = 'anchor_ls', bufnr = buf })[1]
  end)
  result.root_dir = client.root_dir
  local def_line
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match('^def area%(') then
      def_line = i - 1
    end
  end
  result.hint = wait_for('an inlay hint on def area', function()
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
      if h.inlay_hint.position.line == def_line then
        local label = h.inlay_hint.label
        if type(label) == 'table' then
          local parts = {}
          for _, p in ipairs(label) do
            table.insert(parts, p.value)
          end
          label = table.concat(parts)
        end
        return label
      end
    end
  end)

  -- The statusline: the resolved policy once indexed, then each :AnchorPolicy at once.
  result.status_indexed = wait_for('the resolved policy in the statusline', function()
    local s = anchor.status()
    return s:find('→', 1, true) and s
  end)
  vim.cmd('AnchorPolicy inv')
  result.status_inv_at_once = anchor.status()
  vim.wait(1500) -- the server applies it and answers stats meanwhile
  result.status_inv_later = anchor.status()
  vim.cmd('AnchorPolicy auto')
  result.status_auto_at_once = anchor.status()
  result.status_auto_resolved = wait_for('auto resolved again', function()
    local s = anchor.status()
    return s:find('→', 1, true) and s
  end, 30000)

  -- A file directly in the home folder: the client starts without a root.
  local homed = assert(env.ANCHOR_NVIM_HOMED, 'ANCHOR_NVIM_HOMED')
  vim.cmd.edit(vim.fn.fnameescape(homed))
  local hbuf = vim.api.nvim_get_current_buf()
  local hclient = wait_for('a client for the file in $HOME', function()
    return vim.lsp.get_clients({ name = 'anchor_ls', bufnr = hbuf })[1]
  end)
  wait_for('that client to initialize', function()
    return hclient.initialized
  end)
  result.homed_root_dir = hclient.root_dir or vim.NIL
  result.homed_same_client = hclient.id == client.id

  -- A file of an installed package, as go to definition opens it: its site-packages is no
  -- project to index (the client has no root, as for the file in $HOME).
  local library = assert(env.ANCHOR_NVIM_LIBRARY, 'ANCHOR_NVIM_LIBRARY')
  local _, library_how = require('anchor_ls.root').find(library)
  result.library_how = library_how
  vim.cmd.edit(vim.fn.fnameescape(library))
  local lbuf = vim.api.nvim_get_current_buf()
  local lclient = wait_for('a client for the library file', function()
    return vim.lsp.get_clients({ name = 'anchor_ls', bufnr = lbuf })[1]
  end)
  result.library_root_dir = lclient.root_dir or vim.NIL
  vim.cmd('checkhealth anchor_ls')
  result.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

H.start(run)
