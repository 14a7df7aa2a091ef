"""schemathesis hooks for deploy/check/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

The payment provider's callback, POST /v1/payments/{paymentId}/events, needs a valid
`Grocer-Signature` (GrocerAuth's WebhookSignature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<paymentId>.<body>">) before OrderService reads it; unsigned, every case is a 401 and the
code behind the check is never reached. This signs three calls in four with the local secret
over the exact bytes requests will send (it serializes JSON bodies with json.dumps and
allow_nan=False); the fourth keeps whatever schemathesis generated, so the 401 stays covered.
"""

import hashlib
import hmac
import itertools
import json
import os
import time

import schemathesis

WEBHOOK_PATH = "/v1/payments/{paymentId}/events"
SECRET = os.environ.get("GROCER_PAYMENT_WEBHOOK_SECRET", "grocer-local-payment-webhook-secret").encode()
_calls = itertools.count()


def _body_bytes(case):
    body = case.body
    if body is None or type(body).__name__ == "NotSet":
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str) and not (case.media_type or "").endswith("json"):
        return body.encode()
    return json.dumps(body, allow_nan=False).encode()


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path != WEBHOOK_PATH or next(_calls) % 4 == 3:
        return
    try:
        body = _body_bytes(case)
    except ValueError:  # NaN or infinity: requests refuses to send it anyway
        return
    payment_id = str((case.path_parameters or {}).get("paymentId", ""))
    seconds = int(time.time())
    tag = hmac.new(SECRET, f"{seconds}.{payment_id}.".encode() + body, hashlib.sha256).hexdigest()
    case.headers = dict(case.headers or {})
    case.headers["Grocer-Signature"] = f"t={seconds},v1={tag}"
