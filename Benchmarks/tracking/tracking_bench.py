#!/usr/bin/env python3
"""Helpers for the tracking benchmark (run.sh calls them; standard library only).

  plan CUSTOMER_TEMPLATE RIDER_TEMPLATE SEEDED OUT
      SEEDED is what `grocer seed-bench tracking` printed ("orderId<TAB>userId<TAB>destLat<TAB>
      destLng" a line). Writes to OUT one line per order for tracking.lua:
      "orderId<TAB>customerToken<TAB>riderId<TAB>riderToken<TAB>destLat<TAB>destLng<TAB>startLat
      <TAB>startLng": the customer's token (the order's user), rider r000001, r000002, ... with a
      rider token, and where the rider starts (about 2.5 km from the door). The tokens are the
      templates (printed by grocer-token for the first order's user and for rider r000001)
      re-signed with each `sub` and GROCER_JWT_SECRET; re-signing a template as is must give it
      back, so they are exactly what grocer-token would print (10,000 process starts would take
      minutes on 2 cores).

  assign PORT STAFF_TOKEN PLAN
      Moves every order of PLAN to onTheWay with its rider, as hub staff would:
      POST /v1/orders/{id}/status {"status":"picking"}, then {"status":"onTheWay","rider":
      {"id":"<riderId>","firstName":"Ana"}}. Fails unless every reply is 200 with that status.

  streams PORT PLAN SERVICE_PID SECONDS PERIOD
      Opens one tracking stream (GET /v1/orders/{id}/tracking/events) per order of PLAN with its
      customer's token and waits for each one's first event; then the riders post a fix each
      every PERIOD seconds (spread evenly) for SECONDS. Each fix's reply names its version; the
      time from sending the fix to that version's event arriving on the order's stream is the
      event-to-client latency. Prints one line: RESULT streams= opened= events= missing= p50_ms=
      p99_ms= max_ms= rss_before_kb= rss_after_kb= (the service's resident memory before the
      streams were opened and with all of them open).
"""

import asyncio
import base64
import hashlib
import hmac
import http.client
import json
import math
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


class Resigner:
    """Re-signs a grocer-token token with another `sub`, keeping its claims' order and form."""

    def __init__(self, template: str, secret: bytes):
        self.header, payload, _ = template.split(".")
        if sign(self.header, payload, secret) != template:
            sys.exit("tracking_bench: the template token is not HS256 with GROCER_JWT_SECRET")
        self.claims = json.loads(unb64(payload))
        self.secret = secret

    def token(self, subject: str) -> str:
        self.claims["sub"] = subject
        return sign(self.header, b64(json.dumps(self.claims, separators=(",", ":")).encode()), self.secret)


def rider_id(index: int) -> str:
    return f"r{index:06d}"


def plan(customer_template: str, rider_template: str, seeded: str, out: str) -> None:
    secret = os.environ.get("GROCER_JWT_SECRET", LOCAL_SECRET).encode()
    customers, riders = Resigner(customer_template, secret), Resigner(rider_template, secret)
    rows = []
    for index, line in enumerate((line for line in open(seeded) if line.strip()), start=1):
        order_id, user_id, lat, lng = line.rstrip("\n").split("\t")
        dest_lat, dest_lng = float(lat), float(lng)
        # ~2.5 km away, in a direction of its own (degrees: 1 lat ~ 111 km, 1 lng ~ 68 km here).
        angle = index * 2.399963
        start_lat = dest_lat + 0.0225 * math.sin(angle)
        start_lng = dest_lng + 0.0367 * math.cos(angle)
        rows.append("\t".join([
            order_id, customers.token(user_id), rider_id(index), riders.token(rider_id(index)),
            f"{dest_lat:.6f}", f"{dest_lng:.6f}", f"{start_lat:.6f}", f"{start_lng:.6f}"]) + "\n")
    with open(out, "w") as file:
        file.write("".join(rows))


def assign(port: int, staff_token: str, plan_file: str) -> None:
    orders = [line.rstrip("\n").split("\t") for line in open(plan_file) if line.strip()]
    local = threading.local()

    def post(order_id: str, body: dict, expected: str) -> None:
        for attempt in range(3):
            try:
                if not hasattr(local, "connection"):
                    local.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                local.connection.request(
                    "POST", f"/v1/orders/{order_id}/status", body=json.dumps(body).encode(),
                    headers={"Authorization": f"Bearer {staff_token}", "Content-Type": "application/json"})
                reply = local.connection.getresponse()
                text = reply.read()
                if reply.status != 200 or json.loads(text).get("status") != expected:
                    raise RuntimeError(f"{order_id} -> {expected}: {reply.status} {text[:300]!r}")
                return
            except (http.client.HTTPException, OSError):
                local.__dict__.pop("connection", None)
                if attempt == 2:
                    raise

    def one(row: list) -> None:
        order_id, _, rider, _ = row[:4]
        post(order_id, {"status": "picking"}, "picking")
        post(order_id, {"status": "onTheWay", "rider": {"id": rider, "firstName": "Ana"}}, "onTheWay")

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, orders))
    elapsed = time.monotonic() - start
    print(f"{len(orders)} orders on the way in {elapsed:.1f}s ({2 * len(orders) / elapsed:.0f} status changes/s)")


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def streams(port: int, plan_file: str, pid: int, seconds: float, period: float) -> None:
    orders = [line.rstrip("\n").split("\t") for line in open(plan_file) if line.strip()]
    arrived: dict = {}  # (order, version) -> when its event arrived
    first = asyncio.Event()
    opened = 0
    ready = 0

    async def follow(row: list, gate: asyncio.Semaphore) -> None:
        nonlocal opened, ready
        order_id, customer = row[0], row[1]
        async with gate:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
            writer.write((f"GET /v1/orders/{order_id}/tracking/events HTTP/1.1\r\nHost: bench\r\n"
                          f"Authorization: Bearer {customer}\r\n\r\n").encode())
            status = await reader.readline()
            if b" 200 " not in status:
                raise RuntimeError(f"{order_id}: {status!r}")
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            opened += 1
        seen_first = False
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"id: "):
                arrived[(order_id, int(line[4:]))] = time.monotonic()
                if not seen_first:
                    seen_first = True
                    ready += 1
                    if ready == len(orders):
                        first.set()

    before = rss_kb(pid)
    gate = asyncio.Semaphore(200)
    followers = [asyncio.create_task(follow(row, gate)) for row in orders]
    try:
        await asyncio.wait_for(first.wait(), timeout=120)
    except asyncio.TimeoutError:
        print(f"only {ready} of {len(orders)} streams got their first event", file=sys.stderr)
    await asyncio.sleep(1)
    after = rss_kb(pid)

    sent: dict = {}  # (order, version) -> when its fix was sent
    newest: dict = {}  # order -> the newest version a fix made (an ignored fix makes none)

    async def rider(rows: list, offset: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        start = time.monotonic() + offset
        tick = 0
        while time.monotonic() - start < seconds:
            for index, row in enumerate(rows):
                due = start + tick * period + index * period / len(rows)
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if time.monotonic() - start >= seconds:
                    break
                order_id, rider_token = row[0], row[3]
                lat = float(row[6]) + tick * 0.0002
                body = json.dumps({"lat": lat, "lng": float(row[7]), "recordedAt":
                                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
                began = time.monotonic()
                writer.write((f"POST /v1/orders/{order_id}/rider HTTP/1.1\r\nHost: bench\r\n"
                              f"Authorization: Bearer {rider_token}\r\nContent-Type: application/json\r\n"
                              f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
                await reader.readline()
                length = 0
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b""):
                        break
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                reply = await reader.readexactly(length)
                try:
                    version = json.loads(reply)["version"]
                except (ValueError, KeyError):
                    continue
                if version > newest.get(order_id, 0):
                    newest[order_id] = version
                    sent[(order_id, version)] = began
            tick += 1
        writer.close()

    lanes = 32
    await asyncio.gather(*(rider(orders[lane::lanes], lane * period / len(orders)) for lane in range(lanes)))
    await asyncio.sleep(1)
    latencies = sorted(arrived[key] - began for key, began in sent.items() if key in arrived)
    missing = sum(1 for key in sent if key not in arrived)
    for task in followers:
        task.cancel()

    def quantile(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else -1

    print(f"RESULT streams={len(orders)} opened={opened} events={len(latencies)} missing={missing}"
          f" p50_ms={quantile(0.5):.2f} p99_ms={quantile(0.99):.2f} max_ms={1000 * latencies[-1] if latencies else -1:.2f}"
          f" rss_before_kb={before} rss_after_kb={after}")


def main(argv: list) -> None:
    if len(argv) < 2:
        sys.exit(__doc__)
    command, args = argv[1], argv[2:]
    if command == "plan" and len(args) == 4:
        plan(args[0], args[1], args[2], args[3])
    elif command == "assign" and len(args) == 3:
        assign(int(args[0]), args[1], args[2])
    elif command == "streams" and len(args) == 5:
        asyncio.run(streams(int(args[0]), args[1], int(args[2]), float(args[3]), float(args[4])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
