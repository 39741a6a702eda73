#!/usr/bin/env python3
"""Plans a generated N-account export (JSON, then CSV) with the release idpipe; prints wall time, peak RSS, accounts/s."""
import argparse, os, statistics, subprocess, sys, time

parser = argparse.ArgumentParser()
parser.add_argument("--accounts", type=int, default=1_000_000)
parser.add_argument("--binary", required=True)
parser.add_argument("--dir", default="bench-data")
parser.add_argument("--runs", type=int, default=1,
                    help="plans of each format, alternating; with more than one, also prints the median and the spread "
                         "(wall times on a shared 2-core machine vary by 15 %% or more from run to run)")
args = parser.parse_args()
os.makedirs(args.dir, exist_ok=True)
prefix = f"bench-{args.accounts}"
# Each size has its own side inputs: a run at another size must not change those of the exports already there.
sides = {role: f"{prefix}-{name}" for role, name in
         (("legacy_names", "legacy-names.csv"), ("deletion_requests", "deletion-requests.csv"), ("stored_tokens", "stored-tokens.jsonl"))}
if not all(os.path.exists(f"{args.dir}/{name}") for name in [f"{prefix}.json", f"{prefix}.csv", *sides.values()]):
    subprocess.run([sys.executable, "Scripts/gen_samples.py", "--accounts", str(args.accounts), "--seed", "42",
                    "--out-dir", args.dir, "--prefix", prefix, "--format", "both", "--side-inputs", "--side-prefix", f"{prefix}-"],
                   check=True)
pipelines = {}
for fmt in ("json", "csv"):
    pipeline = f"{args.dir}/{prefix}-{fmt}.yaml"
    with open(pipeline, "w") as f:
        f.write(f"version: 1\nname: bench-{fmt}\nsource: {{path: {prefix}.{fmt}}}\n"
                "inputs: {" + ", ".join(f"{role}: {name}" for role, name in sides.items()) + "}\n"
                "select: {deletion_requested: true}\n"
                "stages: {backfill_names: {sources: [legacy, provider:facebook.com]}, revoke: true, delete: {when_not_revocable: delete}}\n")
    pipelines[fmt] = pipeline


def warm(paths):
    """Reads the inputs once, so the timed plan reads them from the page cache: this machine drops cached pages of
    idle files (a few MB of the 509 MB export in 20 s), and the runs that met a half-evicted input were the outliers."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(8 << 20):
                pass


def plan(fmt):
    out = f"{args.dir}/out-{fmt}"
    subprocess.run(["rm", "-rf", out])
    warm([f"{args.dir}/{prefix}.{fmt}"] + [f"{args.dir}/{name}" for name in sides.values()])
    start = time.monotonic()
    # wait4 gives this child's own rusage; RUSAGE_CHILDREN would be the maximum over every child so far.
    child = subprocess.Popen([args.binary, "plan", pipelines[fmt], "--out", out, "--as-of", "2026-11-21T00:00:00Z"],
                             stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    size = os.path.getsize(f"{args.dir}/{prefix}.{fmt}")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"{fmt}: {args.accounts} accounts, {size / 1e6:.0f} MB, wall {wall:.2f} s, CPU {cpu:.2f} s, "
          f"peak RSS {usage.ru_maxrss / 1024:.0f} MB, {args.accounts / wall:,.0f} accounts/s, exit {code}", flush=True)
    return wall, usage.ru_maxrss / 1024, code, cpu


results = {"json": [], "csv": []}
for _ in range(max(1, args.runs)):
    for fmt in ("json", "csv"):
        results[fmt].append(plan(fmt))
if args.runs > 1:
    for fmt, runs in results.items():
        walls = [run[0] for run in runs]
        median = statistics.median(walls)
        print(f"{fmt}: median of {len(walls)} runs {median:.2f} s ({args.accounts / median:,.0f} accounts/s), "
              f"fastest {min(walls):.2f} s, slowest {max(walls):.2f} s, median CPU {statistics.median(run[3] for run in runs):.2f} s, "
              f"peak RSS at most {max(run[1] for run in runs):.0f} MB")
codes = [run[2] for runs in results.values() for run in runs]
sys.exit(next((code for code in codes if code != 0), 0))
