-- anchor-ls for Neovim 0.11+: enables the server for Python buffers, turns on its inlay hints
-- and code lenses, sends code-lens clicks (`anchor.showLocations`) to the quickfix list and
-- defines :AnchorMaterialize[!], :AnchorStrip[!], :AnchorExport {dir}, :AnchorStats,
-- :AnchorReindex and :AnchorPolicy {name}.
local M = {}

local NAME = 'anchor_ls'
local SECTION = 'anchorLs'

M.defaults = {
  cmd = nil, -- default: lsp/anchor_ls.lua's { 'anchor-ls', 'serve' }
  filetypes = nil,
  root_markers = nil, -- default: lua/anchor_ls/root.lua's markers (then package chain, folder)
  inlay_hints = true, -- vim.lsp.inlay_hint.enable for attached buffers
  codelens = true, -- refresh code lenses on attach, BufEnter, InsertLeave, BufWritePost
  open_quickfix = true, -- :copen after anchor.showLocations fills the list
  settings = {}, -- the anchorLs section, merged over lsp/anchor_ls.lua's defaults
}

M.options = vim.deepcopy(M.defaults)

--- Progress and policy per client id, for statuslines (see M.status()); `asked` is a policy
--- set by M.configure that the server's stats have not confirmed yet.
local state = {} ---@type table<integer, {progress: string?, policy: string?, asked: string?}>

local function notify(msg, level)
  vim.notify('anchor-ls: ' .. msg, level or vim.log.levels.INFO)
end

--- The running anchor-ls client for a buffer (or the first one at all).
---@param bufnr integer?
---@return vim.lsp.Client?
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = NAME, bufnr = bufnr })
  if #clients == 0 and bufnr then
    clients = vim.lsp.get_clients({ name = NAME })
  end
  return clients[1]
end

--- workspace/executeCommand on the server; `on_result(err, result)` runs when it answers.
---@param command string
---@param arguments table
---@param on_result fun(err: lsp.ResponseError?, result: any)?
---@param bufnr integer?
---@return boolean sent
function M.execute(command, arguments, on_result, bufnr)
  local buf = bufnr or vim.api.nvim_get_current_buf()
  local client = M.client(buf)
  if not client then
    notify('the server is not running for this buffer (see :checkhealth anchor_ls)', vim.log.levels.ERROR)
    return false
  end
  client:request('workspace/executeCommand', { command = command, arguments = arguments }, function(err, result)
    if err then
      notify(command .. ' failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    if on_result then
      on_result(err, result)
    end
  end, buf)
  return true
end

--- Report a materialize/strip answer that changed nothing (the server already says why).
local function report_edit(what)
  return function(err, result)
    if err or type(result) ~= 'table' then
      return
    end
    if result.applied and result.files then
      notify(string.format('%s: %d file(s) changed', what, result.files))
    end
    if type(result.skipped) == 'table' and #result.skipped > 0 then
      notify(what .. ' skipped: ' .. table.concat(result.skipped, '; '), vim.log.levels.WARN)
    end
  end
end

--- anchor.materialize / anchor.strip for the current buffer, or the workspace when `all`.
---@param command 'anchor.materialize'|'anchor.strip'
---@param all boolean
---@param on_result fun(err: lsp.ResponseError?, result: any)?
function M.edit(command, all, on_result)
  local buf = vim.api.nvim_get_current_buf()
  local arg = vim.empty_dict()
  if not all then
    if vim.bo[buf].filetype ~= 'python' then
      notify('not a Python buffer; use ! for the whole workspace', vim.log.levels.WARN)
      return false
    end
    arg = { uri = vim.uri_from_bufnr(buf), version = vim.lsp.util.buf_versions[buf] }
  end
  local what = command == 'anchor.strip' and 'strip' or 'materialize'
  local report = report_edit(what)
  return M.execute(command, { arg }, function(err, result)
    report(err, result)
    if on_result then
      on_result(err, result)
    end
  end, buf)
end

function M.materialize(all, on_result)
  return M.edit('anchor.materialize', all, on_result)
end

function M.strip(all, on_result)
  return M.edit('anchor.strip', all, on_result)
end

--- anchor.export into a new directory `dir` (relative paths are taken from the cwd).
function M.export(dir, on_result)
  local out = vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '')
  if vim.uv.fs_stat(out) then
    notify(out .. ' exists already; exports go to a new directory', vim.log.levels.ERROR)
    return false
  end
  return M.execute('anchor.export', { { out = out } }, function(err, result)
    if not err and type(result) == 'table' and result.ok then
      notify('tagged snapshot written to ' .. out)
      for _, e in ipairs(type(result.exports) == 'table' and result.exports or {}) do
        local problems = type(e.problems) == 'table' and e.problems or {}
        if #problems > 0 then
          local lines = {}
          for _, p in ipairs(problems) do
            table.insert(lines, type(p) == 'string' and p or vim.json.encode(p))
          end
          notify('export of ' .. tostring(e.root) .. ': ' .. table.concat(lines, '; '), vim.log.levels.WARN)
        end
      end
    end
    if on_result then
      on_result(err, result)
    end
  end)
end

--- "auto→topo": the policy asked for and the one the server resolved it to.
---@param stats table
---@return string
function M.describe_policy(stats)
  local asked = type(stats.settings) == 'table' and stats.settings.policy or nil
  local chosen = {}
  for _, f in ipairs(type(stats.folders) == 'table' and stats.folders or {}) do
    if type(f.policy) == 'table' and type(f.policy.name) == 'string' then
      if not vim.tbl_contains(chosen, f.policy.name) then
        table.insert(chosen, f.policy.name)
      end
    end
  end
  if type(stats.policy) == 'string' then
    table.insert(chosen, stats.policy)
  end
  local resolved = table.concat(chosen, ',')
  asked = asked or resolved
  if resolved == '' or resolved == asked then
    return asked or '?'
  end
  return asked .. '→' .. resolved
end

--- JSON with sorted keys and two-space indents (vim.json.encode has no indent in 0.11).
local function pretty(value, indent)
  indent = indent or ''
  local inner = indent .. '  '
  if type(value) ~= 'table' then
    return vim.json.encode(value)
  end
  if next(value) == nil then
    return getmetatable(value) == vim._empty_dict_mt and '{}' or '[]'
  end
  local parts = {}
  if vim.islist(value) then
    for _, v in ipairs(value) do
      table.insert(parts, inner .. pretty(v, inner))
    end
    return '[\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. ']'
  end
  local keys = vim.tbl_keys(value)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, k in ipairs(keys) do
    table.insert(parts, inner .. vim.json.encode(tostring(k)) .. ': ' .. pretty(value[k], inner))
  end
  return '{\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. '}'
end
M._pretty = pretty

--- Take the policy of a stats answer into the statusline, unless it predates a policy asked
--- for since (the server applies a change after answering requests already queued).
local function note_policy(client_id, stats)
  local s = state[client_id]
  if not s or type(stats) ~= 'table' then
    return
  end
  if s.asked then
    -- Applied once the settings and every folder's resolved policy say so.
    local settings = type(stats.settings) == 'table' and stats.settings or {}
    local because = s.asked == 'auto' and 'auto:' or (s.asked .. ' requested')
    if settings.policy ~= s.asked then
      return
    end
    for _, f in ipairs(type(stats.folders) == 'table' and stats.folders or {}) do
      local reason = type(f.policy) == 'table' and f.policy.reason or ''
      if type(reason) ~= 'string' or reason:sub(1, #because) ~= because then
        return
      end
    end
    s.asked = nil
  end
  local text = M.describe_policy(stats)
  if s.policy ~= text then
    s.policy = text
    vim.cmd('redrawstatus')
  end
end

--- Ask the server for its stats only to update the statusline.
local function refresh_status(client)
  client:request('workspace/executeCommand', { command = 'anchor.stats', arguments = {} }, function(err, result)
    if not err then
      note_policy(client.id, result)
    end
  end)
end

--- anchor.stats: `on_result(err, stats)`, or a scratch buffer with the JSON when none given.
function M.stats(on_result)
  return M.execute('anchor.stats', {}, function(err, result)
    local client = M.client(vim.api.nvim_get_current_buf())
    if not err and type(result) == 'table' and client then
      state[client.id] = state[client.id] or {}
      note_policy(client.id, result)
    end
    if on_result then
      on_result(err, result)
      return
    end
    if err then
      return
    end
    vim.cmd('botright new')
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    vim.api.nvim_buf_set_name(buf, 'anchor-ls://index-stats.json')
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(pretty(result), '\n'))
    vim.bo[buf].filetype = 'json'
    vim.bo[buf].modifiable = false
  end)
end

--- Change settings of the running server live (and of servers started later).
---@param settings table keys of the anchorLs section, e.g. { policy = 'inv' }
function M.configure(settings)
  M.options.settings = vim.tbl_deep_extend('force', M.options.settings, settings)
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    client.settings = vim.tbl_deep_extend('force', client.settings or {}, { [SECTION] = settings })
    client:notify('workspace/didChangeConfiguration', { settings = client.settings })
    if type(settings.policy) == 'string' then
      -- The statusline shows the new policy at once; the server's resolution (auto→topo)
      -- follows when it has applied it (it then asks for a code-lens refresh).
      state[client.id] = state[client.id] or {}
      state[client.id].policy, state[client.id].asked = settings.policy, settings.policy
      refresh_status(client)
    end
  end
  vim.lsp.config(NAME, { settings = { [SECTION] = settings } })
  vim.cmd('redrawstatus')
end

--- Client-side command of the server's code lenses: [uri, position, locations] -> quickfix.
---@param command lsp.Command
---@param ctx table
function M.show_locations(command, ctx)
  local args = command.arguments or {}
  local locations = args[3] or {}
  local client = ctx and ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or M.client()
  local encoding = client and client.offset_encoding or 'utf-16'
  local items = vim.lsp.util.locations_to_items(locations, encoding)
  vim.fn.setqflist({}, ' ', { title = 'anchor-ls: ' .. (command.title or 'locations'), items = items })
  if #items == 0 then
    notify('no locations', vim.log.levels.WARN)
  elseif M.options.open_quickfix then
    vim.cmd('botright copen')
  end
  return items
end

--- Statusline text: indexing progress while it runs, else the active policy.
function M.status()
  local client = M.client(vim.api.nvim_get_current_buf())
  if not client then
    return ''
  end
  local s = state[client.id] or {}
  if s.progress then
    return 'anchor-ls: ' .. s.progress
  end
  return 'anchor-ls' .. (s.policy and (': ' .. s.policy) or '')
end

local function refresh_lenses(client_id)
  if not M.options.codelens then
    return
  end
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  for bufnr in pairs(client.attached_buffers) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      vim.lsp.codelens.refresh({ bufnr = bufnr })
    end
  end
end

local function on_attach(client, bufnr)
  if M.options.inlay_hints then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
  if M.options.codelens then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
  state[client.id] = state[client.id] or {}
end

local function create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd('AnchorMaterialize', function(o)
    M.materialize(o.bang)
  end, { bang = true, desc = 'anchor-ls: write the tags into this file as comments (! for the workspace)' })
  cmd('AnchorStrip', function(o)
    M.strip(o.bang)
  end, { bang = true, desc = 'anchor-ls: remove the tag comments from this file (! for the workspace)' })
  cmd('AnchorExport', function(o)
    M.export(o.args)
  end, { nargs = 1, complete = 'dir', desc = 'anchor-ls: export a tagged snapshot to a new directory' })
  cmd('AnchorStats', function()
    M.stats()
  end, { desc = 'anchor-ls: index statistics' })
  cmd('AnchorReindex', function()
    M.execute('anchor.reindex', {}, function(err)
      if not err then
        notify('index rebuilt')
      end
    end)
  end, { desc = 'anchor-ls: rebuild the index' })
  cmd('AnchorPolicy', function(o)
    M.configure({ policy = o.args })
  end, {
    nargs = 1,
    complete = function()
      return { 'auto', 'topo', 'inv', 'dense' }
    end,
    desc = 'anchor-ls: change the tag policy live',
  })
end

--- Configure and enable anchor-ls. Call once, e.g. from init.lua.
---@param opts table? see M.defaults and :help anchor_ls-setup
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  local o = M.options

  vim.lsp.commands['anchor.showLocations'] = M.show_locations

  local config = {
    capabilities = { workspace = { codeLens = { refreshSupport = true } } },
    handlers = {
      -- Neovim 0.11 has no handler of its own for this request.
      ['workspace/codeLens/refresh'] = function(_, _, ctx)
        refresh_lenses(ctx.client_id)
        local client = vim.lsp.get_client_by_id(ctx.client_id)
        if client and (state[client.id] or {}).asked then
          refresh_status(client)
        end
        return vim.NIL
      end,
    },
  }
  if o.cmd then
    config.cmd = o.cmd
  end
  if o.filetypes then
    config.filetypes = o.filetypes
  end
  local base = vim.lsp.config[NAME] or {}
  local settings = vim.tbl_deep_extend('force', (base.settings or {})[SECTION] or {}, o.settings or {})
  config.settings = { [SECTION] = settings }
  config.init_options = { [SECTION] = settings }
  vim.lsp.config(NAME, config)

  local group = vim.api.nvim_create_augroup('anchor_ls', { clear = true })
  vim.api.nvim_create_autocmd('LspAttach', {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == NAME then
        on_attach(client, args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
    group = group,
    callback = function(args)
      if o.codelens and #vim.lsp.get_clients({ name = NAME, bufnr = args.buf }) > 0 then
        vim.lsp.codelens.refresh({ bufnr = args.buf })
      end
    end,
  })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      local value = args.data.params and args.data.params.value
      if not client or client.name ~= NAME or type(value) ~= 'table' then
        return
      end
      local s = state[client.id] or {}
      state[client.id] = s
      if value.kind == 'end' then
        s.progress = nil
        M.stats(function() end)
      else
        local title = value.title or s.title or 'indexing'
        s.title = title
        local pct = value.percentage and string.format(' %d%%', value.percentage) or ''
        s.progress = title:lower() .. pct
      end
      vim.cmd('redrawstatus')
    end,
  })
  create_commands()
  vim.lsp.enable(NAME)
end

return M
