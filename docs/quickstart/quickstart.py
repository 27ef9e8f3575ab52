"""Task API quickstart in Python (standard library only): create an image, wait for it, download it.

    export TASKAPI_BASE_URL=https://api.example.com
    export TASKAPI_API_KEY=sk-test-...                      # console → API keys
    export TASKAPI_CALLBACK_URL=https://you.example/hooks   # optional: your webhook receiver
    python3 quickstart.py

Verify a notification your receiver got (raw body on stdin, the two headers as arguments):
    export TASKAPI_WEBHOOK_SECRET=whsec_...                 # console → Webhook
    python3 quickstart.py verify "$X_SIGNATURE" "$X_TIMESTAMP" < body.json
"""
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid


def verify_webhook(raw_body: bytes, signature: str, timestamp: str, secret: str, tolerance: int = 300) -> dict:
    """The notification's body, once X-Signature (HMAC-SHA256 of the exact raw bytes, keyed with the
    whole whsec_... secret) and X-Timestamp (within `tolerance` seconds) check out. X-Timestamp is not
    signed, so its check stops only a careless replay; for real replay protection check the Standard
    Webhooks headers (webhook-signature signs webhook-timestamp), e.g. with the `standardwebhooks` package."""
    expected = hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise ValueError("bad signature")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise ValueError("malformed timestamp")
    if abs(time.time() - int(timestamp)) > tolerance:
        raise ValueError("stale timestamp")
    return json.loads(raw_body)


def call(method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[dict, bool]:
    """The answer's JSON, and whether the server held the request as asked (Preference-Applied)."""
    request = urllib.request.Request(
        os.environ["TASKAPI_BASE_URL"] + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"X-Api-Key": os.environ["TASKAPI_API_KEY"], "Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=90) as response:  # Prefer: wait holds up to 50 s
            return json.load(response), response.headers.get("Preference-Applied") is not None
    except urllib.error.HTTPError as error:  # every error answer is JSON with a message
        sys.exit(f"{method} {path}: {error.code} {json.load(error)['message']}")


def main() -> None:
    # 1. Create the task. Idempotency-Key makes a retry safe: the same key and body return the same
    #    task, charged once. Prefer: wait=50 answers as soon as it finishes (or after 50 s, queued;
    #    below the 60 s idle timeout of common proxies, which would answer 504).
    body = {"prompt": "a lighthouse at dawn", "width": 256, "height": 256, "payload": {"order_id": "A-1001"}}
    if os.environ.get("TASKAPI_CALLBACK_URL"):
        body["callback_url"] = os.environ["TASKAPI_CALLBACK_URL"]
    task, _ = call("POST", "/api/tasks/image-generation", body, {"Idempotency-Key": str(uuid.uuid4()), "Prefer": "wait=50"})
    print(f"created {task['public_id']}")

    # 2. Wait: each request returns as soon as the task is terminal (20, 30, 40), or after 50 s.
    #    (To watch its status and progress live instead, read GET /api/tasks/{id}/events: docs/api.md.)
    while task["status"] < 20:
        task, waited = call("GET", f"/api/tasks/{task['public_id']}", headers={"Prefer": "wait=50"})
        if not waited:  # not held (shutting down, too many waits, maintenance): don't spin
            time.sleep(2)
    print(f"finished {task['public_id']} with status {task['status']}")
    if task["status"] != 20:
        sys.exit(f"failed: {task['error_code']}: {task['error_message']}")

    # 3. Download the result through its signed URL (no API key needed, valid for an hour).
    file = task["files"][0]
    path = os.path.join(os.environ.get("TASKAPI_OUTPUT_DIR", "."), file["name"])
    with urllib.request.urlopen(file["url"], timeout=60) as response, open(path, "wb") as out:
        size = out.write(response.read())
    print(f"saved {path} ({size} bytes)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["verify"]:
        try:
            verify_webhook(sys.stdin.buffer.read(), sys.argv[2], sys.argv[3], os.environ["TASKAPI_WEBHOOK_SECRET"])
        except ValueError as error:
            sys.exit(f"webhook rejected: {error}")
        print("webhook verified")
    else:
        main()
