#!/usr/bin/env python3
"""Helpers for the order benchmark (run.sh calls them; standard library only).

  tokens TEMPLATE N PREFIX OUT
      Writes N lines "user<TAB>token" for users PREFIX000001 ... to OUT: TEMPLATE (a token that
      grocer-token printed for PREFIX0001) is re-signed with each user as `sub`, with
      GROCER_JWT_SECRET. Checks first that re-signing TEMPLATE as is gives TEMPLATE back, so the
      tokens are exactly what grocer-token would print (minting 10,000 with the Swift tool takes
      minutes of process starts on 2 cores).

  skus STOCK_PORT HUB COUNT OUT
      Writes COUNT SKUs (one a line) of the hub whose price is 4.00-20.00 (so three lines are
      always above the demo hubs' 10.00 minimum order).

  counts CART_PORT HUB TOKEN SKUS TIMEOUT
      Waits until CartService knows enough of every SKU in SKUS (their counts arrive by
      stock.changed): PUT quantity 99 into TOKEN's cart must keep 99. Exits 1 after TIMEOUT s.

  prepare CART_PORT HUB TOKENS SKUS LINES OUT
      For each user in TOKENS: LINES x PUT /v1/hubs/HUB/cart/items/{sku} {"quantity":1}, SKUs
      picked round-robin, then writes "user<TAB>token<TAB>version" (the version of the last
      reply) to OUT. Fails if a reply is not 200, clamps a line, or still has a blocker.

  rate PORT HUB RATE CARTS KEY_PREFIX
      Open-loop load at a fixed RATE (orders/s): POST /v1/orders once per line of CARTS, the
      i-th request due at start + i/RATE whatever happened to the earlier ones (they run on a
      pool of keep-alive connections; a new connection is opened when none is idle). Latency is
      measured from the time the request was due, not from when it was sent, so a stall shows
      in the percentiles instead of silently delaying the load (no coordinated omission).
      Prints "RESULT ..." (see `report`).
"""

import asyncio
import base64
import hashlib
import hmac
import http.client
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

LOCAL_SECRET = "grocer-local-development-secret-change-me"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(header: str, payload: str, secret: bytes) -> str:
    signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def tokens(template: str, count: int, prefix: str, out: str) -> None:
    secret = os.environ.get("GROCER_JWT_SECRET", LOCAL_SECRET).encode()
    header, payload, _ = template.split(".")
    if sign(header, payload, secret) != template:
        sys.exit("order_bench: the template token is not HS256 with GROCER_JWT_SECRET")
    # Keep grocer-token's exact key order and number format; only `sub` changes.
    claims = json.loads(unb64(payload))
    with open(out, "w") as file:
        for i in range(1, count + 1):
            user = f"{prefix}{i:06d}"
            claims["sub"] = user
            body = b64(json.dumps(claims, separators=(",", ":")).encode())
            file.write(f"{user}\t{sign(header, body, secret)}\n")


def skus(port: int, hub: str, count: int, out: str) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    picked, after = [], ""
    while len(picked) < count:
        connection.request("GET", f"/v1/hubs/{hub}/products?limit=100" + (f"&after={after}" if after else ""))
        reply = connection.getresponse()
        page = json.loads(reply.read())
        if reply.status != 200:
            sys.exit(f"order_bench: products of {hub}: {reply.status} {page}")
        for item in page["items"]:
            if 400 <= item["price"]["minorUnits"] <= 2000 and len(picked) < count:
                picked.append(item["sku"])
        after = page.get("next") or ""
        if not after:
            break
    if len(picked) < count:
        sys.exit(f"order_bench: only {len(picked)} SKUs priced 4-20 at {hub}")
    with open(out, "w") as file:
        file.write("".join(f"{sku}\n" for sku in picked))


def counts(port: int, hub: str, token: str, skus_file: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    last = ""
    for sku in [line.strip() for line in open(skus_file) if line.strip()]:
        while True:
            connection.request(
                "PUT", f"/v1/hubs/{hub}/cart/items/{sku}", body=b'{"quantity":99}',
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            reply = connection.getresponse()
            body = reply.read()
            last = f"{reply.status} {body[:300]!r}"
            if reply.status == 200 and any(
                    line["sku"] == sku and line["quantity"] == 99 for line in json.loads(body)["lines"]):
                # Take it out again: the probe's cart stays small whatever the number of SKUs.
                connection.request(
                    "PUT", f"/v1/hubs/{hub}/cart/items/{sku}", body=b'{"quantity":0}',
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                connection.getresponse().read()
                break
            if time.monotonic() > deadline:
                sys.exit(f"order_bench: the count of {sku} did not reach cart-service in time ({last})")
            time.sleep(0.5)


def prepare(port: int, hub: str, tokens_file: str, skus_file: str, lines: int, out: str) -> None:
    users = [line.rstrip("\n").split("\t") for line in open(tokens_file) if line.strip()]
    sku_list = [line.strip() for line in open(skus_file) if line.strip()]
    if lines > len(sku_list):
        sys.exit("order_bench: more lines per cart than SKUs")
    local = threading.local()

    def put(token: str, sku: str) -> dict:
        for attempt in range(3):
            try:
                if not hasattr(local, "connection"):
                    local.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                local.connection.request(
                    "PUT", f"/v1/hubs/{hub}/cart/items/{sku}", body=b'{"quantity":1}',
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                reply = local.connection.getresponse()
                body = reply.read()
                if reply.status != 200:
                    raise RuntimeError(f"PUT {sku}: {reply.status} {body[:300]!r}")
                return json.loads(body)
            except (http.client.HTTPException, OSError):
                local.__dict__.pop("connection", None)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def one(index: int) -> str:
        user, token = users[index]
        cart = {}
        for line in range(lines):
            cart = put(token, sku_list[(index * lines + line) % len(sku_list)])
        quantities = [entry["quantity"] for entry in cart["lines"]]
        if quantities != [1] * lines or cart.get("blocker") is not None:
            raise RuntimeError(f"cart of {user} is not ready: {json.dumps(cart)[:400]}")
        return f"{user}\t{token}\t{cart['version']}\n"

    with ThreadPoolExecutor(max_workers=4) as pool:
        rows = list(pool.map(one, range(len(users))))
    with open(out, "w") as file:
        file.write("".join(rows))


def percentile(sorted_values: list, p: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def report(latencies: list, statuses: dict, elapsed: float, extra: str = "") -> str:
    values = sorted(latencies)
    us = lambda seconds: int(seconds * 1e6)  # noqa: E731
    total = sum(statuses.values())
    return (
        f"RESULT rps={total / elapsed if elapsed > 0 else 0:.1f} p50_us={us(percentile(values, 50))} "
        f"p90_us={us(percentile(values, 90))} p99_us={us(percentile(values, 99))} "
        f"max_us={us(values[-1] if values else 0)} requests={total} created={statuses.get(201, 0)} "
        f"non201={total - statuses.get(201, 0)} "
        f"statuses={','.join(f'{k}:{v}' for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))}"
        f"{extra}"
    )


IDLE_LIMIT = 5.0  # seconds; the services close idle connections after 15 s (GROCER_HTTP_IDLE_TIMEOUT)


class StaleConnection(ConnectionError):
    """The connection was closed before any byte of the reply."""


async def exchange(reader, writer, request: bytes):
    try:
        writer.write(request)
        await writer.drain()
        status_line = await reader.readline()
    except (ConnectionResetError, BrokenPipeError) as error:
        raise StaleConnection() from error
    if not status_line:
        raise StaleConnection()
    status = int(status_line.split()[1])
    length, keep = 0, True
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "connection" and value.strip().lower() == "close":
            keep = False
        elif name == "transfer-encoding":
            raise ConnectionError("chunked replies are not expected")
    body = await reader.readexactly(length) if length else b""
    return status, body, keep


async def fixed_rate(port: int, hub: str, rate: float, carts_file: str, key_prefix: str) -> None:
    carts = [line.rstrip("\n").split("\t") for line in open(carts_file) if line.strip()]
    idle: list = []
    for _ in range(16):  # warm connections; more are opened if the service falls behind
        idle.append((*await asyncio.open_connection("127.0.0.1", port), time.monotonic()))
    latencies, service_times, statuses, lateness, trace = [], [], {}, [], []
    opened, retries = [len(idle)], [0]
    loop = asyncio.get_running_loop()

    async def one(index: int, due: float) -> None:
        user, token, version = carts[index]
        body = json.dumps({
            "hub": hub, "cartVersion": int(version), "payment": {"method": "card", "token": "tok_ok"},
            "deliverTo": {"lat": 52.5155, "lng": 13.454}}, separators=(",", ":")).encode()
        request = (
            f"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nIdempotency-Key: {key_prefix}-{user}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        sent = loop.time()
        lateness.append(sent - due)
        status = None
        for attempt in range(2):
            reused = False
            try:
                # Most recently used first; one idle for longer than IDLE_LIMIT may have been
                # closed by the server (its idle time-out): drop it rather than fail on it.
                now = loop.time()
                for stale in [entry for entry in idle if now - entry[2] > IDLE_LIMIT]:
                    idle.remove(stale)
                    stale[1].close()
                if idle:
                    reader, writer, _ = idle.pop()
                    reused = True
                else:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    opened[0] += 1
                status, _, keep = await exchange(reader, writer, request)
                if keep:
                    idle.append((reader, writer, loop.time()))
                else:
                    writer.close()
                break
            except StaleConnection:
                # Closed before it answered anything: send again on a new connection (the same
                # Idempotency-Key, so even a request that did arrive is never placed twice).
                if not reused or attempt == 1:
                    status = "error:ConnectionClosed"
                    break
                retries[0] += 1
            except (OSError, ConnectionError, ValueError, IndexError, asyncio.IncompleteReadError) as error:
                status = f"error:{type(error).__name__}"
                break
        done = loop.time()
        trace.append((due - start, done - due, status))
        latencies.append(done - due)
        service_times.append(done - sent)
        statuses[status] = statuses.get(status, 0) + 1

    start = loop.time() + 0.2
    tasks = []
    for index in range(len(carts)):
        due = start + index / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(index, due)))
    await asyncio.gather(*tasks)
    elapsed = max(loop.time() - start, 1e-9)
    for _, writer, _ in idle:
        writer.close()
    if os.environ.get("BENCH_TRACE"):  # one line per order: when it was due (s), latency (ms), status
        with open(os.environ["BENCH_TRACE"], "w") as out:
            for offset, latency, status in sorted(trace):
                out.write(f"{offset:.3f} {latency * 1000:.1f} {status}\n")
    send_late = sorted(lateness)
    service = sorted(service_times)
    print(report(latencies, statuses, elapsed,
                 f" offered_rps={rate:g} connections={opened[0]} resent={retries[0]} "
                 f"send_late_p99_us={int(percentile(send_late, 99) * 1e6)} "
                 f"service_p50_us={int(percentile(service, 50) * 1e6)} "
                 f"service_p99_us={int(percentile(service, 99) * 1e6)}"))


def main(argv: list) -> None:
    if len(argv) < 2:
        sys.exit(__doc__)
    command, args = argv[1], argv[2:]
    if command == "tokens" and len(args) == 4:
        tokens(args[0], int(args[1]), args[2], args[3])
    elif command == "skus" and len(args) == 4:
        skus(int(args[0]), args[1], int(args[2]), args[3])
    elif command == "counts" and len(args) == 5:
        counts(int(args[0]), args[1], args[2], args[3], float(args[4]))
    elif command == "prepare" and len(args) == 6:
        prepare(int(args[0]), args[1], args[2], args[3], int(args[4]), args[5])
    elif command == "rate" and len(args) == 5:
        asyncio.run(fixed_rate(int(args[0]), args[1], float(args[2]), args[3], args[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
