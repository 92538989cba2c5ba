-- What the headless Neovim tests share (loaded with dofile by init.lua and first_contact.lua):
-- the result table and its log, waiting for a condition, loading the plugin, and the run at
-- VimEnter that writes the result as JSON, stops every client and quits (exit 1 on failure).
--
-- Env: ANCHOR_NVIM_PLUGIN  the editors/nvim directory
--      ANCHOR_NVIM_CMD     JSON list: the server command
--      ANCHOR_NVIM_OUT     where to write the JSON results
--      ANCHOR_NVIM_TIMEOUT milliseconds per wait (default 120000)
local M = {}
local env = vim.env
local out_path = assert(env.ANCHOR_NVIM_OUT, 'ANCHOR_NVIM_OUT')
local t0 = vim.uv.hrtime()

M.timeout = tonumber(env.ANCHOR_NVIM_TIMEOUT or '') or 120000
M.result = { log = {} }

function M.log(msg)
  table.insert(M.result.log, string.format('%.1fs %s', (vim.uv.hrtime() - t0) / 1e9, msg))
end

--- Wait for `cond()` to return a truthy value; error with `what` on timeout.
function M.wait_for(what, cond, ms)
  local value
  local ok = vim.wait(ms or M.timeout, function()
    value = cond()
    return value ~= nil and value ~= false
  end, 50)
  if not ok then
    error('timed out waiting for ' .. what, 0)
  end
  M.log('ok: ' .. what)
  return value
end

--- The plugin's module, from ANCHOR_NVIM_PLUGIN.
function M.plugin()
  vim.opt.rtp:prepend((assert(env.ANCHOR_NVIM_PLUGIN, 'ANCHOR_NVIM_PLUGIN')))
  return require('anchor_ls')
end

--- The server command, from ANCHOR_NVIM_CMD.
function M.server_cmd()
  return vim.json.decode((assert(env.ANCHOR_NVIM_CMD, 'ANCHOR_NVIM_CMD')))
end

local function write_result()
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(M.result))
  f:close()
end

--- Run `run` once Neovim has started; then write the result and quit.
function M.start(run)
  vim.api.nvim_create_autocmd('VimEnter', {
    once = true,
    callback = function()
      vim.schedule(function()
        local ok, err = xpcall(run, debug.traceback)
        M.result.ok = ok
        if not ok then
          M.result.error = tostring(err)
        end
        M.result.messages = vim.api.nvim_exec2('messages', { output = true }).output
        write_result()
        for _, c in ipairs(vim.lsp.get_clients()) do
          c:stop()
        end
        vim.wait(3000, function()
          return #vim.lsp.get_clients() == 0
        end, 50)
        for _, c in ipairs(vim.lsp.get_clients()) do
          c:stop(true) -- a server that ignored shutdown/exit is killed
        end
        vim.cmd(ok and 'qall!' or 'cquit!')
      end)
    end,
  })
end

return M
