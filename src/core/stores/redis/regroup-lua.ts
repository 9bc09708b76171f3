/**
 * Lua: `regrouped(value, groups)` a record with its second field's groups replaced, and
 * `currentGroups(gkey, version, value)` the record with the groups of the account's last change
 * when it is later than the version the writer read ('' : none read, nothing checked).
 */
export const GROUPS_SHARED = `
local function regrouped(value, groups)
  local head, kind, rest = string.match(value, '^([^|]*)|([^|;]*)[^|]*(|.*)$')
  if not head then return value end
  if groups == '' then return head .. '|' .. kind .. rest end
  return head .. '|' .. kind .. ';' .. groups .. rest
end
local function currentGroups(gkey, version, value)
  if version == '' then return value end
  local change = redis.call('GET', gkey)
  if not change then return value end
  local sep = string.find(change, ';', 1, true)
  if tonumber(string.sub(change, 1, sep - 1)) > tonumber(version) then return regrouped(value, string.sub(change, sep + 1)) end
  return value
end
`
