#!/usr/bin/env python3
"""Times a migration's import of N generated accounts into idpipe-sandbox (apply's accounts:batchCreate).

The sandbox's project holds a share of the accounts already (--existing, by uid), so that
`stages.import.existing_accounts: keep` has something to keep; `--existing-accounts overwrite` sends them all.
The paces are raised (--creates-per-second, --reads-per-second: the lookups of `keep`), so the figure is idpipe's
and the sandbox's, not a quota's. Prints the apply's wall time, CPU time and peak RSS, and the requests made.
Usage: Scripts/bench_import.py --accounts 100000 --bin .build/release [--existing-accounts keep|overwrite]
"""
import argparse, json, os, subprocess, sys

import sandbox_process

parser = argparse.ArgumentParser()
parser.add_argument("--accounts", type=int, default=100_000)
parser.add_argument("--bin", required=True, help="folder with idpipe and idpipe-sandbox")
parser.add_argument("--dir", default="bench-data/import")
parser.add_argument("--existing", type=float, default=0.01, help="share of the accounts the project holds before the import")
parser.add_argument("--existing-accounts", choices=["keep", "overwrite"], default="keep")
parser.add_argument("--creates-per-second", type=float, default=1000)
parser.add_argument("--reads-per-second", type=float, default=10000)
args = parser.parse_args()

work = sandbox_process.generated_export(args.dir, args.accounts)
# Every n-th account is in the project already, under its uid, with other values. Written by a child process: this
# one, holding the export's accounts, gave the apply it starts its own size as peak RSS (the child is forked from it).
SEED = """
import json, sys
work, existing = sys.argv[1], float(sys.argv[2])
users = [u for u in json.load(open(f"{work}/accounts.json", encoding="utf-8"))["users"] if u.get("localId")]
step = max(1, round(1 / existing)) if existing > 0 else 0
seeded = [{"localId": u["localId"], "email": f"there-{i}@example.org"} for i, u in enumerate(users) if step and i % step == 0]
json.dump({"users": seeded}, open(f"{work}/project.json", "w"))
print(len(seeded))
"""
seeded = int(subprocess.run([sys.executable, "-c", SEED, work, str(args.existing)], check=True, capture_output=True, text=True).stdout)

sandbox, port = sandbox_process.start(args.bin, work, ["--accounts", f"{work}/project.json", "--quota-batch-create", "0"])
try:
    services = open(f"{work}/sandbox/idpipe-services.yaml").read().split("\n  apple:")[0]
    services = services.replace("  google:\n", f"  google:\n    batch_creates_per_second: {args.creates_per_second}\n"
                                f"    reads_per_second: {args.reads_per_second}\n    max_in_flight: 16\n")
    pipeline = f"{work}/migration.yaml"
    with open(pipeline, "w") as f:
        f.write(f"""version: 1
name: bench-import
source: {{path: accounts.json}}
stages:
  normalize: true
  import:
    existing_accounts: {args.existing_accounts}
    password_hash: {{algorithm: SCRYPT, salt_separator: Bw==, rounds: 8, memory_cost: 14}}
output: {{import_json: cleaned.json}}
{services}
""")
    out = f"{work}/out"
    plan = subprocess.run([f"{args.bin}/idpipe", "plan", pipeline, "--out", out, "--as-of", "2026-11-21T00:00:00Z"], capture_output=True, text=True)
    if plan.returncode not in (0, 1):
        sys.exit("plan failed: " + plan.stdout + plan.stderr)
    environment = dict(os.environ, IDPIPE_PASSWORD_HASH_KEY="c2FuZGJveC1zaWduZXIta2V5")
    output, seconds, code, usage = sandbox_process.apply(args.bin, out, environment)
    imported = json.load(open(f"{out}/report.json"))["import"]
    stats = sandbox_process.stats(port)
finally:
    sandbox.terminate()
    sandbox.wait()

requests = stats.get("requests", {})
line = next((l for l in output.splitlines() if l.startswith("import: ")), "")
print(line)
print(f"accounts in the file: {imported['accounts']}; in the project before: {seeded}; existing_accounts: {args.existing_accounts}")
print(f"imported {imported['imported']}, kept {imported.get('keptExisting', {}).get('count', 0)}, "
      f"left out for a shared identity {imported.get('clashing', {}).get('count', 0)}, refused {len(imported['refused'])}; "
      f"apply {seconds:.2f} s wall, {usage.ru_utime + usage.ru_stime:.2f} s CPU, peak RSS {usage.ru_maxrss / 1024:.0f} MB, "
      f"exit {code}")
print(f"requests: accounts:batchCreate {requests.get('accounts:batchCreate', 0)}, accounts:lookup {requests.get('accounts:lookup', 0)}")
