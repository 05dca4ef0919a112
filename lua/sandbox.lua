-- Builds the script sandbox, once per VM, from an explicit allow-list.
--
-- Runs with the full standard library loaded; receives C helpers from
-- src/script/vm.rs and returns the error handler scripts run under.
-- Afterwards the thread's globals are a read-only proxy: reading an
-- undefined global raises Redis's error, writing any global or any field of
-- a library table raises "Attempt to modify a readonly table".
local h = ...
local dbg = debug
local real = _G
local type, tostring, setmetatable, getmetatable, rawset =
  type, tostring, setmetatable, getmetatable, rawset
local readonly = h.readonly

-- Redis 7.0's __redis__err__handler: turns any error into a table with
-- the message and where it happened (the Lua caller when a C function failed).
local function errh(err)
  local i = dbg.getinfo(2, 'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3, 'nSl')
  end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end

-- A read-only view of `t`: an always-empty table whose reads go to `t`.
local function protect(t, index)
  local p = {}
  setmetatable(p, {__index = index or t, __newindex = h.newindex, __metatable = false})
  readonly[p] = t
  return p
end

-- Libraries Redis exposes, each behind a read-only view.
local libs = {'string', 'table', 'math', 'coroutine', 'cjson', 'bit', 'struct', 'cmsgpack', 'redis'}
local builtins = {
  'assert', 'collectgarbage', 'error', 'gcinfo', 'ipairs',
  'load', 'loadstring', 'rawequal', 'select', 'tonumber', 'tostring', 'type',
  'unpack', 'xpcall', '_VERSION',
}

local G = {}
for _, name in ipairs(builtins) do
  G[name] = real[name]
end
for _, name in ipairs(libs) do
  G[name] = protect(real[name])
end
G.rawset = h.rawset
G.rawget = h.rawget
G.next = h.next
G.pairs = h.pairs
G.setmetatable = h.setmetatable
G.pcall = h.pcall
G.__redis__err__handler = errh

-- Strings index the protected string library, as `("x"):upper()` needs;
-- scripts see a read-only view of the string metatable.
local smt = getmetatable('')
smt.__index = G.string
smt.__metatable = protect(smt)

-- Undefined globals are an error; the globals seen by scripts are a view of G.
setmetatable(G, {__index = h.nonexistent})
local proxy = protect(G, G)
G._G = proxy
setfenv(0, proxy)
G.getmetatable = h.getmetatable

debug = nil
-- What getmetatable(_G) shows: Redis's globals metatable, read-only.
return errh, G, protect({__index = h.nonexistent})
