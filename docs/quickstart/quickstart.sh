#!/usr/bin/env bash
# Task API quickstart with curl, jq and openssl: create an image, wait for it, download it.
#
#   export TASKAPI_BASE_URL=https://api.example.com
#   export TASKAPI_API_KEY=sk-test-...              # console → API keys
#   export TASKAPI_CALLBACK_URL=https://you.example/hooks   # optional: your webhook receiver
#   bash quickstart.sh
#
# The key and the secret are read from the environment, never from this script's arguments, which
# any user of the machine can see in `ps`. (openssl below still gets the secret as an argument:
# verify on a machine only you use, or in your receiver's own language.)
#
# Verify a notification your receiver got (raw body on stdin, the two headers as arguments):
#   export TASKAPI_WEBHOOK_SECRET=whsec_...         # console → Webhook
#   bash quickstart.sh verify "$X_SIGNATURE" "$X_TIMESTAMP" < body.json
set -euo pipefail

# Exits non-zero unless X-Signature is the HMAC-SHA256 (lowercase hex) of the exact body bytes,
# keyed with the whole whsec_... secret, and X-Timestamp is within 5 minutes of now. X-Timestamp is
# not signed, so that check stops only a careless replay; for real replay protection check the
# Standard Webhooks headers (webhook-signature signs webhook-timestamp), as the Node.js SDK does.
verify() {
  local signature=$1 timestamp=$2 body expected age
  body=$(mktemp)
  cat > "$body"  # to a file, not a variable: the shell would drop trailing newlines
  expected=$(openssl dgst -sha256 -hmac "$TASKAPI_WEBHOOK_SECRET" < "$body" | awk '{print $NF}')
  rm -f "$body"
  # A demonstration: in your receiver compare in constant time (hmac.compare_digest, crypto.timingSafeEqual).
  if [ "$expected" != "$signature" ]; then echo "webhook rejected: bad signature" >&2; return 1; fi
  # Digits only before any arithmetic: bash evaluates $(( )) operands as code (x[$(cmd)] runs cmd).
  if ! [[ $timestamp =~ ^[0-9]{1,12}$ ]]; then echo "webhook rejected: malformed timestamp" >&2; return 1; fi
  age=$(( $(date +%s) - 10#$timestamp ))
  if [ "${age#-}" -gt 300 ]; then echo "webhook rejected: stale timestamp" >&2; return 1; fi
  echo "webhook verified"
}

if [ "${1:-}" = verify ]; then
  verify "$2" "$3"
  exit
fi

: "${TASKAPI_BASE_URL:?set TASKAPI_BASE_URL}" "${TASKAPI_API_KEY:?set TASKAPI_API_KEY}"
# The key goes to curl through a config on stdin, not its arguments (visible in `ps`). An error
# answer's JSON message is printed before the script stops (inside $(...) it would be swallowed).
api() {
  local out
  if ! out=$(curl -sS --fail-with-body --config - "$@" <<< "header = \"X-Api-Key: $TASKAPI_API_KEY\""); then
    echo "${out:-request failed}" >&2
    return 1
  fi
  printf '%s\n' "$out"
}
# Without Preference-Applied the server did not hold the request (shutting down, too many waits,
# maintenance): pause before asking again instead of looping at full speed.
poll() {
  local headers out
  headers=$(mktemp)
  out=$(api -D "$headers" -H 'Prefer: wait=50' "$TASKAPI_BASE_URL/api/tasks/$1") || { rm -f "$headers"; return 1; }
  grep -qi '^preference-applied:' "$headers" || sleep 2
  rm -f "$headers"
  printf '%s\n' "$out"
}

# 1. Create the task. Idempotency-Key makes a retry safe: the same key and body return the same
#    task, charged once. Prefer: wait=50 answers as soon as it finishes (or after 50 s, queued;
#    below the 60 s idle timeout of common proxies, which would answer 504).
body=$(jq -n --arg callback "${TASKAPI_CALLBACK_URL:-}" \
  '{prompt: "a lighthouse at dawn", width: 256, height: 256, payload: {order_id: "A-1001"}}
   + if $callback == "" then {} else {callback_url: $callback} end')
task=$(api -X POST "$TASKAPI_BASE_URL/api/tasks/image-generation" \
  -H 'Content-Type: application/json' -H "Idempotency-Key: $(openssl rand -hex 16)" \
  -H 'Prefer: wait=50' -d "$body")
id=$(jq -r .public_id <<< "$task")
echo "created $id"

# 2. Wait: each request returns as soon as the task is terminal (20, 30, 40), or after 50 s.
#    (To watch its status and progress live instead: curl -N .../api/tasks/$id/events, see docs/api.md.)
while [ "$(jq .status <<< "$task")" -lt 20 ]; do
  task=$(poll "$id")
done
status=$(jq .status <<< "$task")
echo "finished $id with status $status"
if [ "$status" != 20 ]; then
  jq -r '"failed: \(.error_code): \(.error_message)"' <<< "$task" >&2
  exit 1
fi

# 3. Download the result through its signed URL (no API key needed, valid for an hour).
name=$(jq -r '.files[0].name' <<< "$task")
out="${TASKAPI_OUTPUT_DIR:-.}/$name"
curl -sS --fail -o "$out" "$(jq -r '.files[0].url' <<< "$task")"
echo "saved $out ($(wc -c < "$out" | tr -d ' ') bytes)"
