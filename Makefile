# Set-up is two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
# The viewer's browser test drives Debian's chromium (tests/view).
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: test demo bench clean

$(STAMP): setup.py
	test -x $(CHROMIUM) || ($(SUDO) apt-get update -q && \
	  $(SUDO) apt-get install -y -q chromium)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/rlds-lite demo

bench: $(STAMP)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[bench]'
	$(BIN)/python benchmarks/bench_fast_path.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_shuffle.py
	$(BIN)/python benchmarks/bench_dataset_stats.py --scales 1,4,16
	$(BIN)/python benchmarks/bench_convert_minari.py
	$(BIN)/python benchmarks/bench_convert_formats.py
	$(BIN)/python benchmarks/bench_validate.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
