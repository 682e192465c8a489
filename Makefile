# Every target installs what it needs first: a fresh clone needs only `make test` or `make serve`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROTOS := $(wildcard proto/rami/v1/*.proto)
GEN    := proto/rami/v1/.generated
BUF    := tools/node_modules/.bin/buf

.PHONY: install test lint buf serve bench bench-cluster load fuzz go-example clean

install: $(STAMP) $(GEN)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The Python code of the contract, generated from the .proto files (not committed).
$(GEN): $(STAMP) $(PROTOS)
	$(PY) -m grpc_tools.protoc -Iproto --python_out=proto --pyi_out=proto \
		--grpc_python_out=proto $(PROTOS)
	touch $(GEN)

test: install
	$(PY) -m pytest

$(BUF): tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --silent
	touch $(BUF)

# The contract: lint, format, and no breaking change against the last released contract
# (proto/released/rami-v1.binpb, a buf image made with `buf build -o` at release).
buf: $(BUF)
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(BUF) breaking --against proto/released/rami-v1.binpb

lint: install buf
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy engine/rami/engine

# The port: make serve PORT=50052
PORT ?= 50051
serve: install
	$(VENV)/bin/rami-server --port $(PORT)

# The Go example bot, built offline in GOPATH mode against Debian's Go packages, its code
# generated from the .proto files (examples/go/README.md): examples/go/build/bin/rami-go-bot.
go-example:
	examples/go/build.sh

# The peers `make bench` compares the engine with: bench-only extras, never runtime
# dependencies. One that cannot be installed here (no wheel for this Python) is left out, and
# the bench says why in its figures.
BENCH_PEERS := $(VENV)/.bench-peers
$(BENCH_PEERS): $(STAMP)
	-$(PY) -m pip install --quiet open-spiel
	-$(PY) -m pip install --quiet rlcard
	touch $(BENCH_PEERS)

# Every figure against what bounds it, in one run (bench/results.json, docs/performance.md).
bench: install $(BENCH_PEERS)
	$(PY) -m bench
	@# Several servers on PostgreSQL (skipped, saying why, where PostgreSQL cannot be had).
	-$(PY) -m bench.cluster --seconds 10 --tables 12 --kills 10

# Several servers on one (throwaway) PostgreSQL: commands/s and CPU per command with 1, 2 and 3
# servers, and the takeover time after SIGKILL (docs/operations.md).
bench-cluster: install
	$(PY) -m bench.cluster

# Reliability under load and hostile input (docs/operations.md); neither is part of `make test`.
# load: 200 tables of 4 remote bots on one rami-server process, every game to its end.
load: install
	$(PY) tests/load/run_load.py --tables 200 --clients 2

# fuzz: 10,000 hostile commands through the real API (CI runs a fixed-seed 500).
fuzz: install
	RAMI_FUZZ_EXAMPLES=$${RAMI_FUZZ_EXAMPLES:-10000} $(PY) -m pytest -q -s \
		tests/reliability/test_reliability_fuzz.py

clean:
	rm -rf $(VENV) $(GEN) .pytest_cache .mypy_cache .ruff_cache .hypothesis tools/node_modules
	rm -f proto/rami/v1/*_pb2*.py proto/rami/v1/*_pb2*.pyi
