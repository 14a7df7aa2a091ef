#!/usr/bin/python3
"""An outside client of grocer.events, written with pika (Debian's python3-pika), none of our code.

It binds a queue of its own to every event, says `ready` on stdout, and reads until it is told on
stdin which order to wait for: `{"orderId": …, "checkoutRequestId": …}`. Once that order's Live
Activity end has been delivered (or after a time-out) it checks what it saw and prints one JSON
report: the envelope of every event and its AMQP properties, subjects that name their kind, one
rising sequence per subject, and correlation ids carried on: the checkout's to what it caused,
each tracking version's to the pushes that showed it. The
exit status is 0 when every check held. Tests/SystemTests/JourneyTests.swift runs it around the
journey.

    /usr/bin/python3 Tests/outside/event_watcher.py amqp://guest:guest@127.0.0.1:5672/<vhost>
"""

import datetime
import json
import select
import sys
import time

import pika

KINDS = {
    "stock.changed": "stock",
    "hub.changed": "hub",
    "catalogue.changed": "catalogue",
    "order.confirmed": "order",
    "order.declined": "order",
    "order.cancelled": "order",
    "tracking.updated": "tracking",
    "liveActivity.token": "liveActivity",
    "push.delivered": "push",
    "push.failed": "push",
    "cart.changed": "cart",
    "hub.notice": "notice",
}
KEYS = {"id", "type", "occurredAt", "source", "correlationId", "subject", "sequence", "data"}


def timestamp(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class Watcher:
    def __init__(self, url):
        self.connection = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.connection.channel()
        self.queue = self.channel.queue_declare(queue="", exclusive=True, auto_delete=True).method.queue
        self.channel.queue_bind(queue=self.queue, exchange="grocer.events", routing_key="#")
        self.seen = []  # (routing key, properties, envelope or the error reading it)
        self.problems = []

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            method, properties, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                self.connection.sleep(0.05)
                continue
            try:
                envelope = json.loads(body)
            except ValueError as error:
                envelope = error
            self.seen.append((method.routing_key, properties, envelope))

    def envelopes(self):
        return [e for _, _, e in self.seen if isinstance(e, dict)]

    def problem(self, text):
        if len(self.problems) < 50:
            self.problems.append(text)

    def ended(self, order_id):
        return any(
            e.get("type") == "push.delivered"
            and isinstance(e.get("data"), dict)
            and e["data"].get("orderId") == order_id
            and e["data"].get("event") == "end"
            for e in self.envelopes()
        )

    def check(self, order_id, checkout_request_id):
        first = {}  # id -> envelope, the first copy (delivery is at least once)
        for key, properties, envelope in self.seen:
            if not isinstance(envelope, dict):
                self.problem(f"{key}: not JSON: {envelope}")
                continue
            if set(envelope) != KEYS and set(envelope) != KEYS - {"correlationId"}:
                self.problem(f"{key}: envelope keys {sorted(envelope)}")
                continue
            event_id, event_type, subject = envelope["id"], envelope["type"], envelope["subject"]
            sequence, correlation = envelope["sequence"], envelope.get("correlationId")
            if event_type != key:
                self.problem(f"{event_id}: routing key {key} for type {event_type}")
            if properties.message_id != event_id or properties.type != event_type:
                self.problem(f"{event_id}: message_id/type properties {properties.message_id}/{properties.type}")
            if properties.content_type != "application/json" or properties.delivery_mode != 2:
                self.problem(f"{event_id}: content type {properties.content_type}, mode {properties.delivery_mode}")
            if not isinstance(properties.timestamp, int):
                self.problem(f"{event_id}: no AMQP timestamp")
            if correlation is not None and (not isinstance(correlation, str) or not correlation):
                self.problem(f"{event_id}: correlationId {correlation!r}")
            if correlation is not None and properties.correlation_id != correlation:
                self.problem(f"{event_id}: correlation_id property {properties.correlation_id} != {correlation}")
            if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 1:
                self.problem(f"{event_id}: sequence {sequence!r}")
            if not isinstance(envelope["data"], dict) or not isinstance(envelope["source"], str):
                self.problem(f"{event_id}: data or source")
            try:
                timestamp(envelope["occurredAt"])
            except (TypeError, ValueError):
                self.problem(f"{event_id}: occurredAt {envelope['occurredAt']!r}")
            kind = KINDS.get(event_type)
            if kind is None:
                self.problem(f"{event_id}: unknown type {event_type}")
            elif not subject.startswith(kind + "/") or len(subject) == len(kind) + 1:
                self.problem(f"{event_id}: {event_type} has subject {subject!r}, not {kind}/…")
            if event_id in first:
                if first[event_id] != envelope:
                    self.problem(f"{event_id}: a second copy differs")
                continue
            first[event_id] = envelope

        # One counter per subject: in the order they arrived, each subject's sequences rise, and
        # no two events share a subject and sequence.
        by_subject = {}
        for envelope in first.values():
            by_subject.setdefault(envelope["subject"], []).append(envelope)
        for subject, events in by_subject.items():
            sequences = [e["sequence"] for e in events]
            if any(b <= a for a, b in zip(sequences, sequences[1:])):
                self.problem(f"{subject}: sequences {sequences} do not rise ({[e['type'] for e in events]})")

        # The order's own subjects, each with its own counter.
        order = by_subject.get("order/" + order_id, [])
        tracking = by_subject.get("tracking/" + order_id, [])
        activity = by_subject.get("liveActivity/" + order_id, [])
        if [(e["type"], e["sequence"]) for e in order] != [("order.confirmed", 1)]:
            self.problem(f"order/{order_id}: {[(e['type'], e['sequence']) for e in order]}")
        if [e["sequence"] for e in tracking] != list(range(1, len(tracking) + 1)) or len(tracking) < 5:
            self.problem(f"tracking/{order_id}: sequences {[e['sequence'] for e in tracking]}")
        if [e["sequence"] for e in activity] != [1]:
            self.problem(f"liveActivity/{order_id}: sequences {[e['sequence'] for e in activity]}")
        if tracking and tracking[-1]["data"]["snapshot"]["status"] != "delivered":
            self.problem(f"tracking/{order_id}: ends {tracking[-1]['data']['snapshot']['status']}")

        # The checkout's request id is the correlation id of what it caused.
        caused = order + tracking[:1] + [
            e
            for e in first.values()
            if e["type"] == "stock.changed" and e["data"].get("reason") in ("reservation", "order")
        ]
        for envelope in caused:
            if envelope.get("correlationId") != checkout_request_id:
                self.problem(
                    f"{envelope['type']} {envelope['subject']}: correlationId {envelope.get('correlationId')!r}, "
                    f"not the checkout's {checkout_request_id!r}"
                )
        pushes = [
            e for e in first.values() if e["type"].startswith("push.") and e["data"].get("orderId") == order_id
        ]
        if not any(e["type"] == "push.delivered" and e["data"].get("event") == "end" for e in pushes):
            self.problem(f"no push.delivered of the Live Activity's end for {order_id}")
        # A Live Activity push carries the correlation id of the tracking version it showed.
        by_version = {e["sequence"]: e.get("correlationId") for e in tracking}
        for envelope in pushes:
            data = envelope["data"]
            if data.get("tokenKind") == "liveActivity" and envelope.get("correlationId") != by_version.get(
                data.get("version")
            ):
                self.problem(
                    f"{envelope['id']}: push of version {data.get('version')} has correlationId "
                    f"{envelope.get('correlationId')!r}, its tracking.updated {by_version.get(data.get('version'))!r}"
                )
            if envelope["subject"] != "push/" + data.get("pushId", ""):
                self.problem(f"{envelope['id']}: subject {envelope['subject']} for push {data.get('pushId')}")
            if envelope["sequence"] != 1:
                self.problem(f"{envelope['id']}: a push ends once, sequence {envelope['sequence']}")
            for field in ("tokenKind", "priority", "latencyMs", "pushType"):
                if field not in data:
                    self.problem(f"{envelope['id']}: no {field}")
        return {
            "events": len(self.seen),
            "distinct": len(first),
            "subjects": len(by_subject),
            "types": sorted({e["type"] for e in first.values()}),
            "orderEvents": {"order": len(order), "tracking": len(tracking), "liveActivity": len(activity)},
            "pushes": len(pushes),
            "problems": self.problems,
        }


def main():
    watcher = Watcher(sys.argv[1])
    print("ready", watcher.queue, flush=True)
    # Read events while waiting to be told which order to check.
    line = ""
    while not line:
        watcher.drain(0.2)
        readable, _, _ = select.select([sys.stdin], [], [], 0)
        if readable:
            line = sys.stdin.readline()
            if not line:
                print(json.dumps({"problems": ["stdin closed before an order was named"]}), flush=True)
                return 1
    told = json.loads(line)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not watcher.ended(told["orderId"]):
        watcher.drain(0.2)
    watcher.drain(1)  # what was in flight
    report = watcher.check(told["orderId"], told["checkoutRequestId"])
    print(json.dumps(report), flush=True)
    watcher.connection.close()
    return 0 if not report["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
