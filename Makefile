# Every target installs what it needs first: a fresh clone needs only `make test` or `make serve`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROTOS := $(wildcard proto/rami/v1/*.proto)
GEN    := proto/rami/v1/.generated
BUF    := tools/node_modules/.bin/buf

.PHONY: install test lint buf serve bench load clean

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

serve: install
	$(VENV)/bin/rami-server --port 50051

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(GEN) .pytest_cache .mypy_cache .ruff_cache .hypothesis tools/node_modules
	rm -f proto/rami/v1/*_pb2*.py proto/rami/v1/*_pb2*.pyi
