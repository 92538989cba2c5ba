-- The folder the server indexes for a Python buffer, found as the server finds it for a client
-- that names none (anchor_ls/server/roots.py): the nearest folder above the file with a root
-- marker; else the top of its package chain (the parent of the highest folder that still holds
-- an `__init__.py`); else the file's own folder. The filesystem root and the home folder are
-- never a root: they hold every project at once; nor is a folder of a Python installation
-- (site-packages, the standard library) that go to definition into a library would give.
-- A loose folder then works like a project.
local M = {}

M.markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', 'Pipfile', '.git' }

--- How each root was found (root -> text), for :checkhealth anchor_ls.
M.how = {} ---@type table<string, string>

local function real(path)
  return vim.uv.fs_realpath(path) or vim.fs.normalize(path)
end

local function too_wide(dir)
  local home = vim.uv.os_homedir()
  return vim.fs.dirname(dir) == dir or (home ~= nil and dir == real(home))
end

--- The outermost folder of a Python installation holding dir: site-packages (or
--- dist-packages), the standard library (os.py beside site.py); nil when it is in none.
local function installation(dir)
  local found
  for here in vim.fs.parents(vim.fs.joinpath(dir, 'x')) do
    local name = vim.fs.basename(here)
    if
      name == 'site-packages'
      or name == 'dist-packages'
      or (vim.uv.fs_stat(vim.fs.joinpath(here, 'os.py')) and vim.uv.fs_stat(vim.fs.joinpath(here, 'site.py')))
    then
      found = here
    end
  end
  return found
end

--- The root for a file, and how it was found; nil and why when none is safe to index.
---@param file string an absolute path
---@param markers string[]?
---@return string? root
---@return string how
function M.find(file, markers)
  local root, how = M._find(file, markers)
  local installed = root and installation(real(vim.fs.dirname(file)))
  if installed and (root == installed or vim.startswith(root, installed .. '/')) then
    -- Go to definition into a library: the rest of its installation is no project.
    return nil, vim.fs.basename(file) .. ' belongs to the Python installation at ' .. installed
  end
  return root, how
end

function M._find(file, markers)
  local name = vim.fs.basename(file)
  local here = real(vim.fs.dirname(file))
  local root, how = vim.fs.root(file, markers or M.markers), nil
  if root then
    root, how = real(root), 'nearest root marker above ' .. name
  else
    root = here
    while vim.uv.fs_stat(vim.fs.joinpath(root, '__init__.py')) and vim.fs.dirname(root) ~= root do
      root = vim.fs.dirname(root)
    end
    how = root ~= here and ('top of the package chain of ' .. name) or ('folder of ' .. name)
  end
  if not too_wide(root) then
    return root, how
  end
  if root ~= here and not too_wide(here) then
    return here, 'folder of ' .. name .. ' (' .. root .. ' is too wide)'
  end
  return nil, here .. ' is the filesystem root or the home folder: too wide to index'
end

--- A vim.lsp.Config root_dir function: starts the client at M.find's root, or without a root
--- (the server then says why it indexes nothing) when none is safe.
---@param bufnr integer
---@param on_dir fun(root_dir?: string)
function M.root_dir(bufnr, on_dir)
  local file = vim.api.nvim_buf_get_name(bufnr)
  if file == '' then
    return on_dir(nil)
  end
  local config = vim.lsp.config.anchor_ls or {}
  local ok, anchor = pcall(require, 'anchor_ls')
  local markers = (ok and anchor.options.root_markers) or config.root_markers or M.markers
  local root, how = M.find(vim.fn.fnamemodify(file, ':p'), markers)
  if root then
    M.how[root] = how
  end
  on_dir(root)
end

return M
