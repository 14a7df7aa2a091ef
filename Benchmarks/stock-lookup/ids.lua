-- wrk script for the stock-lookup benchmark.
--   wrk ... -s ids.lua URL -- PATHS_FILE [TOKEN]
-- Rotates through the request paths in PATHS_FILE (one per line, e.g.
-- /v1/hubs/h1/stock?ids=p00001,...), each thread from its own offset, with an optional bearer
-- token. At the end prints one line:
--   RESULT rps=.. p50_us=.. p90_us=.. p99_us=.. max_us=.. requests=.. non2xx=.. socket_errors=..

local threads = 0
local requests = {}
local next_index = 0

function setup(thread)
  thread:set("thread_number", threads)
  threads = threads + 1
end

function init(args)
  local file = args[1] or error("usage: -- PATHS_FILE [TOKEN]")
  local token = args[2]
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
  for path in io.lines(file) do
    if path ~= "" then
      requests[#requests + 1] = wrk.format("GET", path)
    end
  end
  assert(#requests > 0, "no paths in " .. file)
  next_index = ((thread_number or 0) * 97) % #requests
end

function request()
  next_index = next_index % #requests + 1
  return requests[next_index]
end

-- The RESULT and QUANTILES lines, shared with random-ids.lua.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "result.lua")
done = write_result
