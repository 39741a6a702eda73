# idpipe — the two commands a new machine needs: `make demo` and `make test`.
SWIFT ?= swift
APT_PACKAGES = libcsv-dev libssl-dev libsqlite3-dev
N ?= 1000000
SEED ?= 42
AS_OF ?= 2026-11-21T00:00:00Z

.PHONY: deps build demo test samples bench clean

# Installs the C libraries when one is missing (needs root, as on the build machines).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

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

test: deps
	$(SWIFT) build
	$(SWIFT) test

# Large synthetic exports for the benchmark (not committed): make samples N=1000000
samples:
	mkdir -p bench-data
	python3 Scripts/gen_samples.py --accounts $(N) --seed $(SEED) --out-dir bench-data --format both --side-inputs

# Plans a generated N-account export (JSON and CSV) in release mode; prints wall time, peak RSS and accounts/s.
bench: deps
	$(SWIFT) build -c release --product idpipe
	python3 Scripts/bench.py --accounts $(N) --binary $$($(SWIFT) build -c release --show-bin-path)/idpipe

clean:
	rm -rf .build out bench-data
