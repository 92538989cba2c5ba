-- Headless Neovim test of the anchor-ls plugin (driven by tests/test_nvim_client.py).
-- Opens a file of a copy of the example repository with the real server, waits for what
-- Neovim itself holds (inlay hints, code lenses), runs a lens (quickfix), :AnchorStats,
-- :AnchorMaterialize and :AnchorStrip, and writes everything it saw to a JSON file.
--
-- Env (and those of harness.lua):
--      ANCHOR_NVIM_FILE    the Python file to open
--      ANCHOR_NVIM_DEF     the `def` whose hints and lenses are checked (e.g. checkout)
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local env = vim.env
local result, log, wait_for = H.result, H.log, H.wait_for
result.steps = {}

local function hint_label(h)
  local label = h.inlay_hint.label
  if type(label) == 'string' then
    return label, {}
  end
  local text, parts = {}, {}
  for _, part in ipairs(label) do
    table.insert(text, part.value)
    table.insert(parts, { value = part.value, location = part.location })
  end
  return table.concat(text), parts
end

local function run()
  local anchor = H.plugin()
  result.notifications = {}
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(result.notifications, { msg = msg, level = level })
    return notify(msg, level, opts)
  end
  -- Lenses with several entries on one line go through vim.ui.select: pick the callers one.
  vim.ui.select = function(items, opts, on_choice)
    result.select_prompt = opts and opts.prompt
    result.select_items = {}
    local pick
    for i, item in ipairs(items) do
      local title = (opts and opts.format_item) and opts.format_item(item) or tostring(item)
      table.insert(result.select_items, title)
      if not pick and title:find('caller') then
        pick = i
      end
    end
    pick = pick or 1
    on_choice(items[pick], pick)
  end

  anchor.setup({ cmd = H.server_cmd() })
  result.config = {
    cmd = vim.lsp.config.anchor_ls.cmd,
    filetypes = vim.lsp.config.anchor_ls.filetypes,
    root_markers = vim.lsp.config.anchor_ls.root_markers,
    cmd_cwd = vim.lsp.config.anchor_ls.cmd_cwd,
    cmd_env = vim.lsp.config.anchor_ls.cmd_env,
    settings = vim.lsp.config.anchor_ls.settings,
  }

  local file = assert(env.ANCHOR_NVIM_FILE, 'ANCHOR_NVIM_FILE')
  local def = env.ANCHOR_NVIM_DEF or 'checkout'
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype

  local client = wait_for('the client to attach', function()
    return vim.lsp.get_clients({ name = 'anchor_ls', bufnr = buf })[1]
  end)
  result.root_dir = client.root_dir
  result.codelens_refresh_capability =
    vim.tbl_get(client.capabilities, 'workspace', 'codeLens', 'refreshSupport')
  result.inlay_hints_enabled = vim.lsp.inlay_hint.is_enabled({ bufnr = buf })

  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local def_line
  for i, l in ipairs(lines) do
    if l:match('^%s*def ' .. def .. '%(') or l:match('^%s*async def ' .. def .. '%(') then
      def_line = i - 1
      break
    end
  end
  assert(def_line, 'no `def ' .. def .. '(` in ' .. file)
  result.def_line = def_line

  -- Inlay hints: what vim.lsp.inlay_hint holds for the buffer, once the index is built.
  wait_for('an inlay hint on the def line', function()
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
      if h.inlay_hint.position.line == def_line then
        return true
      end
    end
  end)
  result.hints = {}
  for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
    local text, parts = hint_label(h)
    table.insert(result.hints, {
      line = h.inlay_hint.position.line,
      character = h.inlay_hint.position.character,
      label = text,
      parts = parts,
    })
  end

  -- Code lenses: requested on attach (empty while indexing), then again when the server
  -- sends workspace/codeLens/refresh; resolved ones carry their command.
  -- Neovim shows each lens eagerly as it resolves, then redraws the line once all are.
  local ns = vim.lsp.codelens.__namespaces[client.id]
  local function lens_marks()
    local marks = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
      local chunks = {}
      for _, chunk in ipairs(m[4].virt_text or {}) do
        table.insert(chunks, chunk[1])
      end
      table.insert(marks, { line = m[2], text = table.concat(chunks) })
    end
    return marks
  end
  wait_for('every code lens resolved and drawn', function()
    local lenses = vim.lsp.codelens.get(buf)
    local on_def = 0
    for _, lens in ipairs(lenses) do
      if not (lens.command and lens.command.command ~= '') then
        return false
      end
      on_def = on_def + (lens.range.start.line == def_line and 1 or 0)
    end
    if on_def == 0 then
      return false
    end
    local seen = {}
    for _, m in ipairs(lens_marks()) do
      if seen[m.line] or m.text:find('Unresolved', 1, true) then
        return false
      end
      seen[m.line] = true
    end
    return true
  end)
  result.lenses = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(result.lenses, {
      line = lens.range.start.line,
      title = lens.command and lens.command.title,
      command = lens.command and lens.command.command,
      n_locations = lens.command and lens.command.arguments and #(lens.command.arguments[3] or {}),
    })
  end
  result.lens_marks = lens_marks()

  -- Run the lens on the def line the way a user does (cursor there, codelens.run()).
  vim.api.nvim_win_set_cursor(0, { def_line + 1, 0 })
  vim.lsp.codelens.run()
  local qf = wait_for('the quickfix list from anchor.showLocations', function()
    local info = vim.fn.getqflist({ items = 1, title = 1 })
    return #info.items > 0 and info or nil
  end, 20000)
  result.quickfix = { title = qf.title, items = {} }
  for _, it in ipairs(qf.items) do
    table.insert(result.quickfix.items, {
      filename = vim.api.nvim_buf_get_name(it.bufnr),
      lnum = it.lnum,
      col = it.col,
      text = it.text,
    })
  end
  result.quickfix_open = vim.fn.getqflist({ winid = 1 }).winid ~= 0
  vim.cmd('cclose')
  vim.api.nvim_set_current_buf(buf)

  -- :AnchorStats, through the API and through the command's scratch buffer.
  local stats_done = false
  anchor.stats(function(err, stats)
    result.stats_error = err and err.message
    result.stats = stats
    stats_done = true
  end)
  wait_for('anchor.stats', function()
    return stats_done
  end, 30000)
  result.policy_text = anchor.describe_policy(result.stats or {})
  vim.cmd('AnchorStats')
  local stats_buf = wait_for(':AnchorStats buffer', function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b):match('index%-stats%.json$') then
        return b
      end
    end
  end, 30000)
  result.stats_buffer = vim.api.nvim_buf_get_lines(stats_buf, 0, -1, false)
  result.status = anchor.status()
  vim.cmd('only')
  vim.api.nvim_set_current_buf(buf)

  -- :AnchorMaterialize edits the buffer (via workspace/applyEdit), not the file.
  local disk_before = table.concat(vim.fn.readfile(file, 'b'), '\n')
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.cmd('AnchorMaterialize')
  wait_for('tag blocks in the buffer', function()
    for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if l:find('=== CodeAnchor ', 1, true) then
        return true
      end
    end
  end, 30000)
  result.materialized = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.modified_after_materialize = vim.bo[buf].modified
  result.disk_unchanged = table.concat(vim.fn.readfile(file, 'b'), '\n') == disk_before

  vim.cmd('AnchorStrip')
  wait_for('the tag blocks to be stripped', function()
    for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if l:find('=== CodeAnchor ', 1, true) then
        return false
      end
    end
    return true
  end, 30000)
  result.stripped_equals_original =
    vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before)
  -- Back at the original text, the server shows the same hints as before.
  local function hint_lines()
    local seen = {}
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
      table.insert(seen, h.inlay_hint.position.line)
    end
    table.sort(seen)
    return seen
  end
  result.hint_lines_before = {}
  for _, h in ipairs(result.hints) do
    table.insert(result.hint_lines_before, h.line)
  end
  table.sort(result.hint_lines_before)
  vim.wait(15000, function()
    return vim.deep_equal(hint_lines(), result.hint_lines_before)
  end, 100)
  result.hint_lines_after_strip = hint_lines()

  -- :AnchorExport {dir}: a tagged copy in a new directory.
  local export_dir = env.ANCHOR_NVIM_EXPORT
  if export_dir then
    vim.cmd('AnchorExport ' .. vim.fn.fnameescape(export_dir))
    wait_for(':AnchorExport to report', function()
      for _, n in ipairs(result.notifications) do
        if n.msg:find('tagged snapshot written to', 1, true) then
          return true
        end
      end
    end, 60000)
    result.exported = vim.fn.readfile(vim.fs.joinpath(export_dir, vim.fs.relpath(result.root_dir, file)))
    -- A second export into the same directory is refused (an error message).
    local ok, err = pcall(vim.cmd, 'AnchorExport ' .. vim.fn.fnameescape(export_dir))
    result.export_refused = not ok and tostring(err):find('exists already', 1, true) ~= nil
  end

  -- A file written by another program (git, a formatter, an agent), not through a buffer:
  -- Neovim on Linux registers no file watchers, so only the server's own watch sees it.
  local function def_hint()
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
      if h.inlay_hint.position.line == def_line then
        return (hint_label(h))
      end
    end
    return ''
  end
  local disk_file = vim.fs.joinpath(result.root_dir, 'pkg', 'from_disk.py')
  vim.fn.writefile({
    'from pkg.service import checkout',
    '',
    '',
    'def nightly_batch(skus, repo, discount):',
    '    return checkout(skus, repo, discount)',
  }, disk_file)
  result.hint_with_disk_caller = wait_for('the caller written on disk in the hint', function()
    local label = def_hint()
    return label:find('nightly_batch', 1, true) and label or nil
  end, 30000)
  os.remove(disk_file)
  result.hint_after_disk_delete = wait_for('the caller deleted on disk to leave the hint', function()
    local label = def_hint()
    return label ~= '' and not label:find('nightly_batch', 1, true) and label or nil
  end, 30000)
end

H.start(run)
