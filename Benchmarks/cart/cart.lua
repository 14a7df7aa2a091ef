-- wrk script for the cart benchmark.
--   wrk ... -s cart.lua URL -- MODE TOKENS_FILE [HUB] [SKUS]
-- MODE "write": every request is PUT /v1/hubs/HUB/cart/items/pNNNNN {"quantity":N} for a random
--   user (a token from TOKENS_FILE, one a line) and a random SKU among p00001 ... p<SKUS>
--   (default 200); the quantity cycles 1..5 per thread, so nearly every PUT changes its line.
-- MODE "read": every request is GET /v1/hubs/HUB/cart for a random user.
-- At the end prints one line:
--   RESULT rps=.. p50_us=.. p90_us=.. p99_us=.. max_us=.. requests=.. non2xx=.. socket_errors=..

local threads = 0
local mode, hub, skus
local auth = {}
local counter = 0

function setup(thread)
  thread:set("thread_number", threads)
  threads = threads + 1
end

function init(args)
  mode = args[1] or error("usage: -- write|read TOKENS_FILE [HUB] [SKUS]")
  local file = args[2] or error("usage: -- write|read TOKENS_FILE [HUB] [SKUS]")
  hub = args[3] or "h1"
  skus = tonumber(args[4] or "200")
  assert(mode == "write" or mode == "read", "MODE must be write or read, not " .. mode)
  for token in io.lines(file) do
    if token ~= "" then
      auth[#auth + 1] = "Bearer " .. token
    end
  end
  assert(#auth > 0, "no tokens in " .. file)
  math.randomseed(os.time() + (thread_number or 0) * 7919)
  counter = (thread_number or 0) * 3
end

function request()
  local headers = { ["Authorization"] = auth[math.random(#auth)] }
  if mode == "read" then
    return wrk.format("GET", "/v1/hubs/" .. hub .. "/cart", headers)
  end
  counter = counter + 1
  headers["Content-Type"] = "application/json"
  local path = string.format("/v1/hubs/%s/cart/items/p%05d", hub, math.random(skus))
  return wrk.format("PUT", path, headers, string.format('{"quantity":%d}', counter % 5 + 1))
end

function done(summary, latency, _)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT rps=%.0f p50_us=%d p90_us=%d p99_us=%d max_us=%d requests=%d non2xx=%d socket_errors=%d\n",
    summary.requests / seconds, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout))
end
