#!/usr/bin/python3
"""An outside HTTP/2 client of the APNs simulator, written with Debian's python3-h2 (hyper-h2), in
the way provider libraries such as aioapns talk to APNs: one TLS connection (ALPN h2), each
request on its own stream, the answer read from `:status`, `apns-id` and the JSON `reason`.

    /usr/bin/python3 Tests/outside/apns_client.py HOST PORT CAFILE CASES.json

CASES.json is a list of {"name", "method", "path", "headers": {…}, "body": "…"} (`body_repeat`: n
repeats the body n times, for a large one). Prints one JSON object: {name: {"status", "reason",
"timestamp", "apns_id"}} for every case, sent in order on one connection.
Tests/NotifyGatewayTests/Transport/OutsideAPNsClientTests.swift runs it against the simulator
behind nginx's TLS and HTTP/2 front.
"""

import json
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events


def main() -> int:
    host, port, cafile, cases_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    cases = json.load(open(cases_file))
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)
    if sock.selected_alpn_protocol() != "h2":
        print(json.dumps({"error": f"ALPN gave {sock.selected_alpn_protocol()!r}, not h2"}))
        return 1
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    results = {}
    for case in cases:
        body = case.get("body", "").encode() * case.get("body_repeat", 1)
        stream = connection.get_next_available_stream_id()
        headers = [(":method", case.get("method", "POST")), (":path", case["path"]), (":scheme", "https"),
                   (":authority", f"{host}:{port}")]
        headers += [(name.lower(), value) for name, value in case.get("headers", {}).items()]
        connection.send_headers(stream, headers, end_stream=not body)
        if body:
            connection.send_data(stream, body, end_stream=True)
        sock.sendall(connection.data_to_send())
        status, apns_id, data, done = None, None, b"", False
        while not done:
            chunk = sock.recv(65536)
            if not chunk:
                break
            for event in connection.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    fields = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
                              for k, v in event.headers}
                    status, apns_id = int(fields[":status"]), fields.get("apns-id")
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                    data += event.data
                    connection.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    done = True
            sock.sendall(connection.data_to_send())
        reply = json.loads(data) if data else {}
        results[case["name"]] = {"status": status, "reason": reply.get("reason"),
                                 "timestamp": reply.get("timestamp"), "apns_id": apns_id}
    print(json.dumps(results))
    connection.close_connection()
    sock.sendall(connection.data_to_send())
    sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
