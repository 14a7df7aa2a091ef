-- wrk script for the order benchmark's full-speed run (closed loop: each connection sends its
-- next order when the previous one is answered).
--   wrk -tT ... -s orders.lua URL -- CARTS_FILE HUB KEY_PREFIX
-- CARTS_FILE has one prepared cart a line: "user<TAB>token<TAB>version". Thread i of T sends
-- POST /v1/orders for lines i+1, i+1+T, ... exactly once each (Idempotency-Key KEY_PREFIX-user),
-- and stops when its share is used up: every order is a fresh cart, never a replay.
-- wrk's own request rate divides by the whole -d duration even when the carts ran out sooner,
-- so the rate here is measured with the wall clock (LuaJIT FFI) from the first request sent to
-- the last reply received.
-- At the end prints one line:
--   RESULT rps=<201s per second> answers_per_s=.. p50_us=.. p90_us=.. p99_us=.. max_us=.. requests=.. created=.. non201=..
--          socket_errors=.. exhausted=<threads that used up their carts> elapsed_ms=..

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } order_timespec;
  int clock_gettime(int clock_id, order_timespec *tp);
]]
local now_ts = ffi.new("order_timespec")
local function now_us()
  ffi.C.clock_gettime(1, now_ts) -- CLOCK_MONOTONIC: the same clock in every thread
  return tonumber(now_ts.tv_sec) * 1000000 + math.floor(tonumber(now_ts.tv_nsec) / 1000)
end

local threads = {}
local requests, next_index = {}, 1
first_us, last_us, created, other, exhausted = 0, 0, 0, 0, 0

function setup(thread)
  thread:set("thread_number", #threads)
  table.insert(threads, thread)
end

function init(args)
  local file = args[1] or error("usage: -- CARTS_FILE HUB KEY_PREFIX")
  local hub = args[2] or error("usage: -- CARTS_FILE HUB KEY_PREFIX")
  local prefix = args[3] or error("usage: -- CARTS_FILE HUB KEY_PREFIX")
  local thread_count = tonumber(os.getenv("ORDER_BENCH_THREADS") or "") or error("ORDER_BENCH_THREADS unset")
  local line_number = 0
  for line in io.lines(file) do
    if line_number % thread_count == thread_number then
      local user, token, version = line:match("^([^\t]+)\t([^\t]+)\t(%d+)$")
      assert(user, "bad line in " .. file .. ": " .. line)
      local body = string.format(
        '{"hub":"%s","cartVersion":%s,"payment":{"method":"card","token":"tok_ok"},' ..
        '"deliverTo":{"lat":52.5155,"lng":13.454}}', hub, version)
      requests[#requests + 1] = wrk.format("POST", "/v1/orders", {
        ["Authorization"] = "Bearer " .. token,
        ["Content-Type"] = "application/json",
        ["Idempotency-Key"] = prefix .. "-" .. user,
      }, body)
    end
    line_number = line_number + 1
  end
end

-- wrk calls thread 0's request() once before its connections open, to check the request, and
-- drops what it returns: that call must not use up a cart.
local checked = false

function request()
  if thread_number == 0 and not checked then
    checked = true
    return requests[1] or wrk.format("GET", "/health/live")
  end
  if first_us == 0 then first_us = now_us() end
  local req = requests[next_index]
  if req == nil then
    -- This thread's carts are used up: stop it (a reply still in flight on another of its
    -- connections is lost to the statistics, not to the service: run.sh counts orders there).
    -- wrk sends what this returns before the thread stops: a harmless health check.
    exhausted = 1
    wrk.thread:stop()
    return wrk.format("GET", "/health/live")
  end
  next_index = next_index + 1
  return req
end

function response(status, _, _)
  if exhausted == 1 then return end -- the health check sent on stopping
  last_us = now_us()
  if status == 201 then created = created + 1 else other = other + 1 end
end

function done(summary, latency, _)
  local first, last, ok, bad, out = math.huge, 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    local f, l = thread:get("first_us"), thread:get("last_us")
    if f and f > 0 and f < first then first = f end
    if l and l > last then last = l end
    ok = ok + (thread:get("created") or 0)
    bad = bad + (thread:get("other") or 0)
    out = out + (thread:get("exhausted") or 0)
  end
  local elapsed_us = (last > first) and (last - first) or summary.duration
  local e = summary.errors
  io.write(string.format(
    "RESULT rps=%.1f answers_per_s=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d requests=%d created=%d non201=%d " ..
    "socket_errors=%d exhausted=%d elapsed_ms=%d\n",
    ok / (elapsed_us / 1e6), (ok + bad) / (elapsed_us / 1e6), latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, ok + bad, ok, bad,
    e.connect + e.read + e.write + e.timeout, out, math.floor(elapsed_us / 1000)))
end
