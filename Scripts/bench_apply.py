#!/usr/bin/env python3
"""Times the cleanup of N accounts against idpipe-sandbox at the real Identity Toolkit quotas.

Every generated account is selected (a deletion request each): revocations (Apple, Facebook) and the data webhook
run in parallel under their own rates, and the accounts go through accounts:batchDelete at 1 request/s of 1000 ids.
The quota-bound ideal is ceil(N / 1000) batch-delete slots at 1/s; the script prints the apply's wall time against it.
Usage: Scripts/bench_apply.py --accounts 100000 --bin .build/release
"""
import argparse, csv, json, math, subprocess, sys, time

import sandbox_process

parser = argparse.ArgumentParser()
parser.add_argument("--accounts", type=int, default=100_000)
parser.add_argument("--bin", required=True, help="folder with idpipe and idpipe-sandbox")
parser.add_argument("--dir", default="bench-data/apply")
parser.add_argument("--latency-ms", type=int, default=0, help="latency the sandbox adds to every answer")
args = parser.parse_args()

work = sandbox_process.generated_export(args.dir, args.accounts, side_inputs=True)
# A deletion request for every account: the whole export is cleaned up.
with open(f"{work}/accounts.json", encoding="utf-8") as f:
    uids = [u["localId"] for u in json.load(f)["users"] if u.get("localId")]
with open(f"{work}/all-deletion-requests.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["uid", "requested_at", "source"])
    for uid in uids:
        w.writerow([uid, "2026-11-01T00:00:00Z", "app"])

sandbox, port = sandbox_process.start(args.bin, work, ["--accounts", f"{work}/accounts.json", "--stored-tokens", f"{work}/stored-tokens.jsonl",
                                                     "--quota-batch-delete", "1", "--quota-update", "10", "--latency-ms", str(args.latency_ms)])
try:
    services = open(f"{work}/sandbox/idpipe-services.yaml").read()
    # The real Identity Toolkit quotas; Apple, Facebook and the app's own webhook publish none, so they go wide.
    services = (services.replace("  google:\n", "  google:\n    updates_per_second: 10\n    batch_deletes_per_second: 1\n    max_in_flight: 8\n")
                .replace("  apple:\n", "  apple:\n    requests_per_second: 2000\n    max_in_flight: 32\n")
                .replace("  facebook:\n", "  facebook:\n    requests_per_second: 2000\n    max_in_flight: 32\n"))
    services += "  webhook:\n    requests_per_second: 4000\n    max_in_flight: 64\n"
    pipeline = f"{work}/cleanup.yaml"
    with open(pipeline, "w") as f:
        f.write(f"""version: 1
name: bench-apply
source: {{path: accounts.json}}
inputs: {{deletion_requests: all-deletion-requests.csv, stored_tokens: stored-tokens.jsonl}}
select: {{deletion_requested: true}}
stages:
  revoke: {{apple: true, facebook: true, firebase_sessions: true}}
  delete:
    data_webhook: http://127.0.0.1:{port}/hooks/delete-user-data
    accounts: true
    when_not_revocable: delete
apply: {{accounts_in_flight: 256}}
{services}""")
    out = f"{work}/out"
    start = time.monotonic()
    plan = subprocess.run([f"{args.bin}/idpipe", "plan", pipeline, "--out", out, "--as-of", "2026-11-21T00:00:00Z"], capture_output=True, text=True)
    plan_seconds = time.monotonic() - start
    if plan.returncode != 0:
        sys.exit("plan failed: " + plan.stdout + plan.stderr)
    output, apply_seconds, code, _ = sandbox_process.apply(args.bin, out)
    summary = json.load(open(f"{out}/report.json"))["apply"]
    stats = sandbox_process.stats(port)
finally:
    sandbox.terminate()
    sandbox.wait()

outcomes = summary["outcomes"]
deleted = outcomes.get("delete-account", {}).get("done", 0)
ideal = math.ceil(len(uids) / 1000) - 1  # the first batch goes at once; each further one waits a second
print(output.strip().splitlines()[-2] if output.strip() else "")
print(f"accounts: {len(uids)}; plan {plan_seconds:.1f} s; apply {apply_seconds:.1f} s, exit {code}")
for kind, figures in outcomes.items():
    states = ", ".join(f"{v} {k}" for k, v in figures.items() if k in ("done", "failed", "not-possible", "blocked", "planned", "sent") and v)
    print(f"  {kind}: {states}; {figures.get('donePerSecond')} done/s")
print(f"  traffic: " + "; ".join(f"{t['service']} {t['requests']} requests, {t['retries']} retries, {t['throttled']} throttled" for t in summary["traffic"]))
print(f"  sandbox refusals: {stats.get('faults')}")
print(f"quota-bound ideal: {ideal} s ({math.ceil(len(uids) / 1000)} batch deletes at 1/s); apply took {apply_seconds:.1f} s "
      f"= {100 * ideal / apply_seconds:.1f} % of the ideal rate; {deleted / apply_seconds:.0f} accounts deleted per second")
