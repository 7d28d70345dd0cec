# Set-up is two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
# The viewer's and the recorder's browser tests drive Debian's chromium (tests/view, tests/record).
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: test test-lerobot demo bench bench-replay clean

$(STAMP): setup.py
	test -x $(CHROMIUM) || ($(SUDO) apt-get update -q && \
	  $(SUDO) apt-get install -y -q chromium)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# Two workers (both cores of the CI machine), each taking whole test files
# (module fixtures are built once): ~16 min instead of ~25 on a slow 2-core VM.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile

# Opt-in: lerobot's own reader and writer against rlds_lite.convert.lerobot.
# lerobot pulls torch (several GB), so it gets a venv of its own.
LEROBOT_VENV := .venv-lerobot
test-lerobot: $(STAMP)
	test -x $(LEROBOT_VENV)/bin/python || $(PYTHON) -m venv $(LEROBOT_VENV)
	$(LEROBOT_VENV)/bin/python -m pip install -q --disable-pip-version-check 'lerobot==0.4.4'
	RLDS_LITE_LEROBOT_PYTHON=$(LEROBOT_VENV)/bin/python $(BIN)/python -m pytest tests/convert/test_convert_lerobot_compat.py

# Opt-in: rlds_lite.replay against TorchRL 0.14 and flashbax (benchmarks/bench_replay.py).
# Each contender gets a venv of its own. torchrl 0.14.1's C++ sum trees are built against
# torch 2.14 (the 2.13 CPU wheel fails on an undefined symbol), and PyPI's torch 2.14.1 is
# the CUDA build (several GB; it runs on the CPU here).
TORCHRL_VENV := .venv-torchrl
FLASHBAX_VENV := .venv-flashbax
bench-replay: $(STAMP)
	test -x $(TORCHRL_VENV)/bin/python || $(PYTHON) -m venv $(TORCHRL_VENV)
	$(TORCHRL_VENV)/bin/python -m pip install -q --disable-pip-version-check 'torch==2.14.1' 'torchrl==0.14.1'
	test -x $(FLASHBAX_VENV)/bin/python || $(PYTHON) -m venv $(FLASHBAX_VENV)
	$(FLASHBAX_VENV)/bin/python -m pip install -q --disable-pip-version-check 'flashbax==0.1.3'
	$(BIN)/python benchmarks/bench_replay.py --torchrl-python $(TORCHRL_VENV)/bin/python \
	  --flashbax-python $(FLASHBAX_VENV)/bin/python --write-results

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
	$(BIN)/python benchmarks/bench_convert_lerobot.py
	$(BIN)/python benchmarks/bench_validate.py

clean:
	rm -rf $(VENV) $(LEROBOT_VENV) $(TORCHRL_VENV) $(FLASHBAX_VENV) build *.egg-info .pytest_cache .hypothesis
