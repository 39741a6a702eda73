#!/bin/sh
# The whole cleanup, for real, against a local sandbox: starts idpipe-sandbox with the sample accounts and stored
# tokens, runs Pipelines/cleanup-deleted-accounts.yaml with its services pointed at the sandbox (`idpipe run --yes`),
# prints the report and the sandbox's ledger summary, and stops the sandbox. Usage: Scripts/sandbox_demo.sh BIN_DIR
set -eu
BIN=$1
DIR=out/sandbox-demo
PIPELINE=Pipelines/.sandbox-cleanup-deleted-accounts.yaml
rm -rf "$DIR"
mkdir -p "$DIR"
"$BIN/idpipe-sandbox" init --dir "$DIR/sandbox" --port 0 >/dev/null
"$BIN/idpipe-sandbox" serve --dir "$DIR/sandbox" --port 0 --accounts Samples/accounts.json \
  --stored-tokens Samples/stored-tokens.jsonl --data Samples/data.json --ledger "$DIR/sandbox-ledger.jsonl" >"$DIR/sandbox.log" 2>&1 &
SANDBOX=$!
trap 'kill $SANDBOX 2>/dev/null || true; wait $SANDBOX 2>/dev/null || true; rm -f "$PIPELINE"' EXIT INT TERM
i=0
until grep -q "listening on" "$DIR/sandbox.log"; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 $SANDBOX 2>/dev/null; then echo "the sandbox did not start:"; cat "$DIR/sandbox.log"; exit 1; fi
  sleep 0.1
done
PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$DIR/sandbox.log" | head -n 1)
echo "sandbox: http://127.0.0.1:$PORT (sample accounts and stored tokens loaded)"
# The sample pipeline, with the webhook and the services on the sandbox (the services section is written by the sandbox).
sed "s#data_webhook: .*#data_webhook: http://127.0.0.1:$PORT/hooks/delete-user-data#" Pipelines/cleanup-deleted-accounts.yaml >"$PIPELINE"
cat "$DIR/sandbox/idpipe-services.yaml" >>"$PIPELINE"
set +e
"$BIN/idpipe" run "$PIPELINE" --yes --out "$DIR/run" --as-of "${AS_OF:-2026-11-21T00:00:00Z}"
code=$?
set -e
echo
cat "$DIR/run/report.md"
echo
echo "sandbox ledger ($DIR/sandbox-ledger.jsonl): $(grep -c '"changed":true' "$DIR/sandbox-ledger.jsonl" || true) changes," \
  "$(grep -c '"changed":false' "$DIR/sandbox-ledger.jsonl" || true) repeats that changed nothing"
echo "exit code $code (1 = done, with quarantined sample rows or failed actions; the samples include broken rows on purpose)"
echo "Reports: $DIR/run/report.md, $DIR/run/report.json, $DIR/run/ledger.csv"
[ $code -le 1 ]
