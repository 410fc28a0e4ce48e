-- wrk: send `depth` requests per write, like TechEmpower's plaintext test.
local depth = tonumber(os.getenv("PIPELINE_DEPTH") or "16")
init = function(args)
  local r = {}
  for i = 1, depth do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
