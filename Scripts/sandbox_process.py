"""For the benchmark scripts: a generated export in a fresh folder, idpipe-sandbox started on it, an apply timed."""
import json, os, re, shutil, subprocess, sys, time


def generated_export(folder, accounts, side_inputs=False):
    """FOLDER/ACCOUNTS emptied, with a generated export of ACCOUNTS accounts (accounts.json), and its side inputs when
    asked; its absolute path."""
    work = os.path.abspath(f"{folder}/{accounts}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([sys.executable, "Scripts/gen_samples.py", "--accounts", str(accounts), "--seed", "42", "--out-dir", work,
                    "--format", "json"] + (["--side-inputs"] if side_inputs else []), check=True, stdout=subprocess.DEVNULL)
    return work


def start(binaries, work, serve_arguments):
    """The serving sandbox process and its port; its output goes to WORK/sandbox.log."""
    subprocess.run([f"{binaries}/idpipe-sandbox", "init", "--dir", f"{work}/sandbox", "--port", "0"], check=True, stdout=subprocess.DEVNULL)
    log = open(f"{work}/sandbox.log", "w")
    process = subprocess.Popen([f"{binaries}/idpipe-sandbox", "serve", "--dir", f"{work}/sandbox", "--port", "0", *serve_arguments],
                               stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        m = re.search(r"127\.0\.0\.1:(\d+)", open(f"{work}/sandbox.log").read())
        if m:
            return process, m.group(1)
        time.sleep(0.1)
    process.terminate()
    sys.exit("the sandbox did not start: " + open(f"{work}/sandbox.log").read())


def apply(binaries, out, environment=None):
    """Runs `idpipe apply --yes` on OUT's state store: its output, wall seconds, exit code and own rusage (wait4: the
    figures of this child only)."""
    start = time.monotonic()
    child = subprocess.Popen([f"{binaries}/idpipe", "apply", "--state", f"{out}/state.sqlite", "--yes"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=environment)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    return output, time.monotonic() - start, os.waitstatus_to_exitcode(status), usage


def stats(port):
    """The sandbox's counts of requests and faults."""
    return json.loads(subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/__sandbox/stats"], capture_output=True, text=True).stdout)
