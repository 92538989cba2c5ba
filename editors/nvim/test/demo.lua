-- Interactive demo init for screenshot.sh: the plugin with the real server, lenses and
-- hints on, and once they are drawn the callers lens of `def checkout` run into quickfix.
-- Env: ANCHOR_NVIM_PLUGIN, ANCHOR_NVIM_CMD (JSON list), ANCHOR_NVIM_READY (file to touch).
vim.opt.rtp:prepend((assert(vim.env.ANCHOR_NVIM_PLUGIN, 'ANCHOR_NVIM_PLUGIN')))
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.o.statusline = "%f %m%=%{v:lua.require'anchor_ls'.status()}  %l:%c "
vim.cmd.colorscheme('default')
vim.ui.select = function(items, opts, on_choice)
  for i, item in ipairs(items) do
    if opts.format_item(item):find('caller') then
      return on_choice(item, i)
    end
  end
  on_choice(items[1], 1)
end
require('anchor_ls').setup({
  cmd = vim.json.decode((assert(vim.env.ANCHOR_NVIM_CMD, 'ANCHOR_NVIM_CMD'))),
})

local function ready(buf)
  local lenses = vim.lsp.codelens.get(buf)
  if #lenses == 0 or #vim.lsp.inlay_hint.get({ bufnr = buf }) == 0 then
    return false
  end
  for _, lens in ipairs(lenses) do
    if not lens.command then
      return false
    end
  end
  return true
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    local buf = vim.api.nvim_get_current_buf()
    local timer = assert(vim.uv.new_timer())
    timer:start(500, 250, vim.schedule_wrap(function()
      if not ready(buf) then
        return
      end
      timer:stop()
      for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        if line:match('^def checkout%(') then
          vim.api.nvim_win_set_cursor(0, { i, 4 })
          break
        end
      end
      vim.lsp.codelens.run()
      vim.defer_fn(function()
        vim.cmd('wincmd p')
        vim.cmd('normal! zt')
        vim.cmd('exe "normal! 3\\<C-y>"')
        vim.cmd('redraw!')
        vim.fn.writefile({ 'ready' }, vim.env.ANCHOR_NVIM_READY)
      end, 800)
    end))
  end,
})
