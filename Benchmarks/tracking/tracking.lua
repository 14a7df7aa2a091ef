-- wrk script for the tracking benchmark: the customers' polls and the riders' fixes of many
-- orders, mixed half and half.
--   wrk -tT -cC -dD -s tracking.lua URL -- PLAN_FILE RATE [WARMUP_SECONDS]
-- PLAN_FILE (tracking_bench.py plan) has one order a line:
--   orderId<TAB>customerToken<TAB>riderId<TAB>riderToken<TAB>destLat<TAB>destLng<TAB>startLat<TAB>startLng
-- Thread i of T takes lines i+1, i+1+T, ... Its request slots alternate GET
-- /v1/orders/{id}/tracking (the customer's token) and POST /v1/orders/{id}/rider (the rider's
-- token, {"lat","lng","recordedAt"}: recordedAt is the wall clock's whole second, the rider
-- moves in a straight line from start towards the destination over RIDE_SECONDS), going round
-- the thread's orders; a POST goes to the order half-way round from the GET next to it.
--
-- Pacing (TRACKING_BENCH_MODE unset or "rate"): a fixed schedule of RATE/T requests/s per
-- thread. wrk asks delay() each time a connection is free: it takes the next slot of the
-- schedule and waits until it is due. wrk is closed loop per connection (a connection sends its
-- next request only after the reply), so when every connection is busy a slot is sent late;
-- latency is therefore counted from the slot's due time (or the send, if the timer fired up to
-- 1 ms early), not from the send, so a stall shows in the percentiles instead of silently
-- lowering the load (what wrk2 does; wrk2 is not installed). The send's lateness is reported too.
-- The due time rides in X-Request-ID (the service echoes it; nginx is told to).
-- TRACKING_BENCH_MODE=max: no delay, every connection sends as fast as replies come (closed loop).
-- TRACKING_BENCH_MIX=get or post: only that request (to see each alone); default both.
--
-- At the end prints:
--   RESULT kind=get|post requests=.. p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=..
--          send_p50_us=.. send_p99_us=.. non2xx=.. ignored=.. statuses=..
--   RESULT kind=all rps=.. offered_rps=.. window_s=.. late_p50_us=.. late_p99_us=.. late_max_us=..
--          socket_errors=.. unmatched=.. undelayed=<requests sent without a slot: wrk's first per connection>
-- Only replies to requests due after WARMUP_SECONDS (default 3) count.

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } tracking_timespec;
  int clock_gettime(int clock_id, tracking_timespec *tp);
]]
local ts = ffi.new("tracking_timespec")
local function mono_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC: the same clock in every thread
  return tonumber(ts.tv_sec) * 1000000 + math.floor(tonumber(ts.tv_nsec) / 1000)
end
local function wall_seconds()
  ffi.C.clock_gettime(0, ts)
  return tonumber(ts.tv_sec)
end

local RIDE_SECONDS = 900
local paced = (os.getenv("TRACKING_BENCH_MODE") or "rate") ~= "max"
local mix = os.getenv("TRACKING_BENCH_MIX") or "both"
assert(mix == "both" or mix == "get" or mix == "post", "TRACKING_BENCH_MIX must be both, get or post")

local threads = {}
local orders = {}
local interval_us, warmup_us, thread_count
local first_due, next_due
local queue, head, tail = {}, 1, 0
local slot = 0
local started_s

-- Per thread, read by done() through thread:get.
lat_get, lat_post, send_get, send_post, late = {}, {}, {}, {}, {}
non2xx_get, non2xx_post, ignored, unmatched, undelayed = 0, 0, 0, 0, 0
statuses_get, statuses_post = {}, {}
window_first, window_last = 0, 0

function setup(thread)
  thread:set("thread_number", #threads)
  table.insert(threads, thread)
end

function init(args)
  local usage = "usage: -- PLAN_FILE RATE [WARMUP_SECONDS]"
  local file = args[1] or error(usage)
  local rate = tonumber(args[2] or "") or error(usage)
  warmup_us = (tonumber(args[3] or "3") or 3) * 1000000
  thread_count = tonumber(os.getenv("TRACKING_BENCH_THREADS") or "") or error("TRACKING_BENCH_THREADS unset")
  interval_us = 1000000 * thread_count / rate
  local line_number = 0
  for line in io.lines(file) do
    if line_number % thread_count == thread_number then
      local id, customer, rider, token, dlat, dlng, slat, slng =
        line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)$")
      assert(id, "bad line in " .. file .. ": " .. line)
      local get = wrk.format("GET", "/v1/orders/" .. id .. "/tracking", { ["Authorization"] = "Bearer " .. customer })
      local post = wrk.format("POST", "/v1/orders/" .. id .. "/rider", {
        ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" })
      orders[#orders + 1] = {
        -- Both without the blank line that ends the headers: X-Request-ID (and the body) follow.
        get = get:sub(1, -3), post = post:sub(1, -3),
        dlat = tonumber(dlat), dlng = tonumber(dlng), slat = tonumber(slat), slng = tonumber(slng),
      }
    end
    line_number = line_number + 1
  end
  assert(#orders > 0, "no orders for thread " .. thread_number .. " in " .. file)
  started_s = wall_seconds()
end

if paced then
  function delay()
    local now = mono_us()
    if next_due == nil then
      -- The threads' schedules interleave: thread i starts i/T of an interval later.
      first_due = now + 100000 + math.floor(interval_us * thread_number / thread_count)
      next_due = first_due
    end
    local due = next_due
    next_due = next_due + interval_us
    tail = tail + 1
    queue[tail] = due
    local wait_ms = math.floor((due - now) / 1000)
    return wait_ms > 0 and wait_ms or 0
  end
end

function request()
  local now = mono_us()
  local due = now
  if first_due == nil then first_due = now end
  if paced and head <= tail then
    -- The earliest slot taken and not sent yet (timers due in the same loop turn may fire in
    -- any order; the earliest slot is the one that is due). A connection's very first request
    -- may come without a delay() (wrk's start): it is sent at once and counts from then.
    due = queue[head]
    queue[head] = nil
    head = head + 1
    if due >= first_due + warmup_us then late[#late + 1] = now > due and now - due or 0 end
    if now < due then
      due = now -- the timer fired early (wrk's timers have millisecond resolution)
    end
  elseif paced then
    undelayed = undelayed + 1
  end
  slot = slot + 1
  local n = #orders
  local round, get
  if mix == "both" then
    round, get = math.floor((slot - 1) / 2), slot % 2 == 1
  else
    round, get = slot - 1, mix == "get"
  end
  if get then
    local order = orders[round % n + 1]
    return order.get .. "X-Request-ID: g" .. due .. "-" .. now .. "\r\n\r\n"
  end
  local order = orders[(round + math.floor(n / 2)) % n + 1]
  local at = wall_seconds()
  local f = math.min(1, (at - started_s + (round % n) * 0.1) / RIDE_SECONDS)
  local body = string.format('{"lat":%.6f,"lng":%.6f,"recordedAt":"%s"}',
    order.slat + (order.dlat - order.slat) * f, order.slng + (order.dlng - order.slng) * f,
    os.date("!%Y-%m-%dT%H:%M:%SZ", at))
  return order.post .. "Content-Length: " .. #body .. "\r\nX-Request-ID: p" .. due .. "-" .. now ..
      "\r\n\r\n" .. body
end

function response(status, headers, _)
  local now = mono_us()
  local id = headers["X-Request-ID"] or headers["x-request-id"] or headers["X-Request-Id"]
  local kind, due, sent
  if id then kind, due, sent = id:match("^([gp])(%d+)%-(%d+)$") end
  if not kind then
    unmatched = unmatched + 1
    return
  end
  due, sent = tonumber(due), tonumber(sent)
  if due < first_due + warmup_us then return end
  if window_first == 0 then window_first = due end
  window_last = now
  if kind == "g" then
    lat_get[#lat_get + 1] = now - due
    send_get[#send_get + 1] = now - sent
    statuses_get[status] = (statuses_get[status] or 0) + 1
    if status < 200 or status > 299 then non2xx_get = non2xx_get + 1 end
  else
    lat_post[#lat_post + 1] = now - due
    send_post[#send_post + 1] = now - sent
    statuses_post[status] = (statuses_post[status] or 0) + 1
    if status < 200 or status > 299 then non2xx_post = non2xx_post + 1 end
    if headers["Grocer-Fix-Ignored"] or headers["grocer-fix-ignored"] then ignored = ignored + 1 end
  end
end

local function gather(name)
  local all = {}
  for _, thread in ipairs(threads) do
    for _, v in ipairs(thread:get(name) or {}) do all[#all + 1] = v end
  end
  table.sort(all)
  return all
end

local function sum(name)
  local total = 0
  for _, thread in ipairs(threads) do total = total + (thread:get(name) or 0) end
  return total
end

local function at(sorted, p)
  if #sorted == 0 then return 0 end
  local i = math.floor(#sorted * p / 100 + 0.5)
  if i < 1 then i = 1 end
  if i > #sorted then i = #sorted end
  return sorted[i]
end

local function statuses(name)
  local merged, parts = {}, {}
  for _, thread in ipairs(threads) do
    for k, v in pairs(thread:get(name) or {}) do merged[k] = (merged[k] or 0) + v end
  end
  for k, v in pairs(merged) do parts[#parts + 1] = k .. ":" .. v end
  table.sort(parts)
  return #parts > 0 and table.concat(parts, ",") or "-"
end

function done(summary, _, _)
  local first, last = math.huge, 0
  for _, thread in ipairs(threads) do
    local f, l = thread:get("window_first"), thread:get("window_last")
    if f and f > 0 and f < first then first = f end
    if l and l > last then last = l end
  end
  local window = (last > first) and (last - first) / 1e6 or 0
  local total = 0
  for _, kind in ipairs({ "get", "post" }) do
    local lat, send = gather("lat_" .. kind), gather("send_" .. kind)
    total = total + #lat
    io.write(string.format(
      "RESULT kind=%s requests=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d send_p50_us=%d " ..
      "send_p99_us=%d non2xx=%d ignored=%d statuses=%s\n",
      kind, #lat, at(lat, 50), at(lat, 90), at(lat, 99), at(lat, 99.9), lat[#lat] or 0, at(send, 50),
      at(send, 99), sum("non2xx_" .. kind), kind == "post" and sum("ignored") or 0, statuses("statuses_" .. kind)))
  end
  local lateness = gather("late")
  local e = summary.errors
  io.write(string.format(
    "RESULT kind=all rps=%.1f window_s=%.1f late_count=%d late_p50_us=%d late_p99_us=%d late_max_us=%d " ..
    "socket_errors=%d unmatched=%d undelayed=%d\n",
    window > 0 and total / window or 0, window, #lateness, at(lateness, 50), at(lateness, 99),
    lateness[#lateness] or 0, e.connect + e.read + e.write + e.timeout, sum("unmatched"), sum("undelayed")))
end
