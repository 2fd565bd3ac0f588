# The two front-door commands: `make demo` and `make test`. Both create .venv and install first.
#
# On these CPU machines torch is installed as the CPU build torch==2.13.0 before anything that
# needs it; torchvision is never installed. On a GPU box, install your own CUDA torch into .venv
# first (`python3 -m venv .venv && .venv/bin/pip install torch`): an importable torch is kept.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
EXTRAS ?= hf,serve,analysis,ray,dev
# the tested versions of the direct dependencies (see the file); `make install CONSTRAINTS=` takes the newest
CONSTRAINTS ?= constraints.txt
STAMP  := $(VENV)/.tempcore-installed

.PHONY: install demo test lint docs bench clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -e ".[$(EXTRAS)]"
	@if $(BIN)/python -m pip show -q torchvision >/dev/null 2>&1; then \
	  echo "warning: torchvision is installed in $(VENV); on CPU machines it breaks transformers' image processors" >&2; fi
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tempcore demo

# The report's browser test drives Debian's headless Chromium.
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium (for the report browser test)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# The documentation site (mkdocs-material, mkdocs.yml) into site/; --strict: a broken link, a docstring the
# API pages cannot render or an unknown generated table fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint docs system-deps
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache
