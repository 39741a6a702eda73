# idpipe — the two commands a new machine needs: `make demo` and `make test`.
SWIFT ?= swift
APT_PACKAGES = libcsv-dev libssl-dev libsqlite3-dev libjemalloc-dev
N ?= 1000000
SEED ?= 42
AS_OF ?= 2026-11-21T00:00:00Z

VENV = .build-venv
PY_PACKAGES = firebase-admin==7.7.0 PyJWT==2.10.1 cryptography cmarkgfm==2025.10.22

.PHONY: deps venv build demo demo-sandbox test samples bench bench-delete bench-apply bench-import sandbox clean

# Installs the C libraries when one is missing (needs root, as on the build machines).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The Python the tests use as an independent implementation: the official firebase-admin SDK (run against
# the sandbox), PyJWT on cryptography (verifies idpipe's ES256/RS256 JWTs) and cmarkgfm (GitHub's Markdown
# renderer, for what a reviewer sees of report.md). Made from PyPI once for each list of packages: the stamp is
# named for the list, so a package added here is installed into an older environment too.
VENV_STAMP = $(VENV)/.installed-$(shell echo '$(PY_PACKAGES)' | sha256sum | cut -c1-12)
venv: $(VENV_STAMP)
$(VENV_STAMP):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check $(PY_PACKAGES)
	touch $@

build: deps
	$(SWIFT) build

# A dry run of the cleanup pipeline on the sample accounts; prints where the report is.
demo: build
	@$(SWIFT) build --show-bin-path >/dev/null
	@BIN=$$($(SWIFT) build --show-bin-path); \
	$$BIN/idpipe validate Pipelines/cleanup-deleted-accounts.yaml && \
	rm -rf out/cleanup-deleted-accounts && \
	{ $$BIN/idpipe plan Pipelines/cleanup-deleted-accounts.yaml --as-of $(AS_OF); code=$$?; \
	  echo; echo "exit code $$code (1 = done, with quarantined sample rows — the samples include broken rows on purpose)"; \
	  echo "Open out/cleanup-deleted-accounts/plan.md to read the report."; \
	  [ $$code -le 1 ]; }

# The cleanup for real, on a local sandbox: starts it, runs the cleanup pipeline on the sample accounts with
# `idpipe run --yes`, prints the report and the sandbox's ledger summary, stops the sandbox.
demo-sandbox: build
	@Scripts/sandbox_demo.sh $$($(SWIFT) build --show-bin-path)

test: deps venv
	$(SWIFT) build
	$(SWIFT) test

# Large synthetic exports with their side inputs, to try idpipe at scale (not committed; make bench generates its
# own): make samples N=1000000
samples:
	mkdir -p bench-data
	python3 Scripts/gen_samples.py --accounts $(N) --seed $(SEED) --out-dir bench-data --format both --side-inputs

# Plans a generated N-account export (JSON and CSV) in release mode; prints wall time, peak RSS and accounts/s.
# RUNS=3 plans each format three times, alternating, and prints the median (timings here vary from run to run).
bench: deps
	$(SWIFT) build -c release --product idpipe
	python3 Scripts/bench.py --accounts $(N) --runs $(or $(RUNS),1) --binary $$($(SWIFT) build -c release --show-bin-path)/idpipe

# Starts the sandbox in the foreground on port 8790 with the sample accounts (keys in out/sandbox, made once).
sandbox: build
	@BIN=$$($(SWIFT) build --show-bin-path); \
	[ -f out/sandbox/sandbox.json ] || $$BIN/idpipe-sandbox init --dir out/sandbox --port 8790; \
	$$BIN/idpipe-sandbox serve --dir out/sandbox --accounts Samples/accounts.json --stored-tokens Samples/stored-tokens.jsonl

# Deletes N accounts through idpipe's Identity Toolkit client against the sandbox at the real quota
# (batch delete 1 request/s); prints accounts/s as a share of the quota-bound ideal.
bench-delete: deps
	$(SWIFT) build -c release --product idpipe-bench
	$$($(SWIFT) build -c release --show-bin-path)/idpipe-bench delete --accounts $(or $(DELETE_N),20000)

# Cleans up APPLY_N accounts (default 100000) against the sandbox at the real quotas, release build; prints the
# apply's wall time against the quota-bound ideal (APPLY_N / 1000 batch deletes at 1 request/s).
bench-apply: deps
	$(SWIFT) build -c release --product idpipe
	$(SWIFT) build -c release --product idpipe-sandbox
	python3 Scripts/bench_apply.py --accounts $(or $(APPLY_N),100000) --bin $$($(SWIFT) build -c release --show-bin-path)

# Imports a migration of IMPORT_N accounts (default 100000) into the sandbox, whose project holds 1 % of them already,
# at raised paces, release build; prints the apply's wall time, CPU time and peak RSS, and the requests it made.
# EXISTING=overwrite sends every account, without the lookups of the default (keep).
bench-import: deps
	$(SWIFT) build -c release --product idpipe
	$(SWIFT) build -c release --product idpipe-sandbox
	python3 Scripts/bench_import.py --accounts $(or $(IMPORT_N),100000) --existing-accounts $(or $(EXISTING),keep) \
		--bin $$($(SWIFT) build -c release --show-bin-path)

clean:
	rm -rf .build out bench-data $(VENV)
