-- Headless Neovim test of the `python` setting (driven by tests/test_nvim_environment.py):
-- setup() with settings.python reaches the server (anchor.stats names it), and what comes of
-- it: the hint on a class whose base is a library's links to the library's file, and the
-- lens above a method says what it overrides. Writes what it saw to a JSON file.
--
-- Env (and those of harness.lua):
--      ANCHOR_NVIM_PYTHON  the interpreter of the environment (the `python` setting)
--      ANCHOR_NVIM_FILE    the Python file to open
--      ANCHOR_NVIM_CLASS   a class of it whose base is outside the repository
--      ANCHOR_NVIM_METHOD  the first `def` of that class
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local env = vim.env
local result, wait_for = H.result, H.wait_for

local function line_of(buf, pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match(pattern) then
      return i - 1
    end
  end
  error('no line matching ' .. pattern)
end

local function run()
  local anchor = H.plugin()
  local python = assert(env.ANCHOR_NVIM_PYTHON, 'ANCHOR_NVIM_PYTHON')
  anchor.setup({ cmd = H.server_cmd(), settings = { python = python } })
  result.config_python = vim.lsp.config.anchor_ls.settings.anchorLs.python

  local file = assert(env.ANCHOR_NVIM_FILE, 'ANCHOR_NVIM_FILE')
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client = wait_for('the client to attach', function()
    return vim.lsp.get_clients({ name = 'anchor_ls', bufnr = buf })[1]
  end)
  result.init_python = vim.tbl_get(client.config, 'init_options', 'anchorLs', 'python')

  local class_line = line_of(buf, '^class ' .. env.ANCHOR_NVIM_CLASS .. '%(')
  local method_line = line_of(buf, '^%s+def ' .. env.ANCHOR_NVIM_METHOD .. '%(')
  result.hint = wait_for('the inlay hint on the class', function()
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
      if h.inlay_hint.position.line == class_line and type(h.inlay_hint.label) == 'table' then
        local parts = {}
        for _, part in ipairs(h.inlay_hint.label) do
          table.insert(parts, { value = part.value, location = part.location })
        end
        return parts
      end
    end
  end)

  result.lenses = wait_for('the lenses of the method, resolved', function()
    local titles = {}
    for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
      if lens.range.start.line == method_line then
        if not (lens.command and lens.command.command ~= '') then
          return false
        end
        table.insert(titles, lens.command.title)
      end
    end
    return #titles > 0 and titles
  end)

  local done = false
  anchor.stats(function(err, stats)
    result.stats_error = err and err.message
    result.stats = stats
    done = true
  end)
  wait_for('anchor.stats', function()
    return done
  end, 30000)
end

H.start(run)
