-- wrk script for the stock-lookup benchmark's random workload, as screens of products make it:
--   wrk ... -s random-ids.lua URL -- HUB PRODUCTS IDS [TOKEN]
-- Every request asks for IDS distinct random SKUs (p00001 … pPRODUCTS) of HUB: a query that was
-- (almost) never asked before. Prints the same RESULT and QUANTILES lines as ids.lua.

local hub, products, ids

function setup(thread)
  thread:set("seed", math.random(1, 2 ^ 30))
end

function init(args)
  hub = args[1] or error("usage: -- HUB PRODUCTS IDS [TOKEN]")
  products = tonumber(args[2])
  ids = tonumber(args[3])
  local token = args[4]
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
  math.randomseed(seed or os.time())
end

function request()
  local picked, list = {}, {}
  while #list < ids do
    local n = math.random(1, products)
    if not picked[n] then
      picked[n] = true
      list[#list + 1] = string.format("p%05d", n)
    end
  end
  return wrk.format("GET", "/v1/hubs/" .. hub .. "/stock?ids=" .. table.concat(list, ","))
end

dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "result.lua")
done = write_result
