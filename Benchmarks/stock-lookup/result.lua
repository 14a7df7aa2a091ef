-- What a wrk run of the stock-lookup and catalogue benchmarks prints at its end:
--   RESULT rps=.. p50_us=.. p90_us=.. p99_us=.. max_us=.. requests=.. non2xx=.. socket_errors=.. duration_us=..
--   QUANTILES <the latency at every 0.1 percentile>
function write_result(summary, latency, _)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT rps=%.0f p50_us=%d p90_us=%d p99_us=%d max_us=%d requests=%d non2xx=%d socket_errors=%d duration_us=%d\n",
    summary.requests / seconds, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout, summary.duration))
  -- The latency at every 0.1 percentile, so rounds can be merged into one distribution.
  local quantiles = {}
  for i = 1, 1000 do quantiles[i] = string.format("%d", latency:percentile(i / 10)) end
  io.write("QUANTILES " .. table.concat(quantiles, " ") .. "\n")
end
