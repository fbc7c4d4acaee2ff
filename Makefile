# pybroker — developer entry points.
#
#   make run     install, then start ZooKeeper + one broker in the foreground (Ctrl-C stops both)
#   make test    install what the tests need on a fresh machine, then run them
#   make bench   run every benchmark under bench/
#
# Needs GNU make, Python >= 3.11 (with the venv module) and, for ZooKeeper and the Java
# client oracle, Java 17; a C compiler is optional (setup.py). Non-interactive throughout:
# safe under CI=true with no stdin (where a C extension that did not build fails the tests).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Re-installed whenever pyproject.toml, setup.py or a C extension's source is newer than
# this stamp (the install compiles protocol/*.c in place; see setup.py).
STAMP  := $(VENV)/.installed
C_SOURCES := $(wildcard protocol/*.c)
PIP_FLAGS := --no-input --disable-pip-version-check --progress-bar off
PYTEST_ARGS ?=

DATA_DIR := data
JAVA_CLIENT_INSTALLER := tests/oracle/install_java_client.py

.PHONY: help install bytecode run test test-fast test-stalls java-client bench clean distclean kcat chromium fault fault-process fault-txn fuzz bench-replication bench-groups

help:
	@echo "make run        install, then start ZooKeeper + one broker (data under $(DATA_DIR)/)"
	@echo "make test       install what the tests need, then run pytest over tests/"
	@echo "make test-fast  the unit tests only (tests/unit: every layer, the codec, layering; ~2 min)"
	@echo "make test-stalls  tests/unit with the event loop stalled at random (finds timing races; ~3 min)"
	@echo "make bench      run each bench/*.py and print its figures"
	@echo "make fault      the fault campaigns on virtual hosts (FAULT_SCHEDULES=100, FAULT_CLIENT_ROUNDS=5; root)"
	@echo "make fault-process  the process-fault campaign on loopback (FAULT_MINUTES=10)"
	@echo "make fault-txn  the transactional fault campaign (FAULT_TXN_RECORDS=100000, 10 kills of each of 3 kinds)"
	@echo "make fuzz       the structure-aware fuzzer against a real broker (FUZZ_FRAMES=1000000)"
	@echo "make bench-replication  the replication benchmarks (bench/replication.py)"
	@echo "make bench-groups  the consumer-group benchmarks, classic and KIP-848 (~15 min)"
	@echo "make install    create $(VENV) and pip install -e '.[test]'"
	@echo "make clean      remove caches and build artefacts"
	@echo "make distclean  clean + remove $(VENV), .cache/ and $(DATA_DIR)/"

# --- environment --------------------------------------------------------------------

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
		"pybroker needs Python >= 3.11; found " + sys.version.split()[0] + " (set PYTHON=...)")'
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { \
		echo "$(PYTHON) lacks the venv/ensurepip modules (Debian/Ubuntu: apt-get install python3-venv)" >&2; \
		exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml setup.py $(C_SOURCES) | $(PY)
	$(PY) -m pip install $(PIP_FLAGS) -e '.[test]'
	@touch $@

install: $(STAMP)

# The project's bytecode, compiled ahead: each broker, tool and client process the tests
# start imports ~1,000 of our modules, and where PYTHONDONTWRITEBYTECODE is set (as in this
# workplace's shells) no process keeps what it compiled, so every start compiled them all
# again (~0.5 s of CPU per process on a 2.2 GHz core; a broker imports in 0.5 s instead of
# 1.1). Python reads the .pyc files whatever that variable says, and recompiles in memory
# any whose source changed since; up-to-date files are skipped here.
SOURCE_DIRS := protocol storage broker coordinator controller client tools spark_jobs tests bench
bytecode: $(STAMP)
	$(PY) -m compileall -q -j 0 $(SOURCE_DIRS)

# --- entry points -------------------------------------------------------------------

run: $(STAMP) bytecode
	@command -v java >/dev/null 2>&1 || { echo "make run: ZooKeeper needs Java 17 ('java' is not on PATH)" >&2; exit 1; }
	@echo "Starting ZooKeeper (127.0.0.1:2181) and broker 0 (127.0.0.1:9092); data under $(DATA_DIR)/. Ctrl-C stops both."
	$(PY) -m broker.local_run --zookeeper-config config/zookeeper.properties --server-config config/server.properties

test: $(STAMP) bytecode java-client kcat chromium
	$(PY) -m pytest -q tests $(PYTEST_ARGS)

# The Java Kafka client's jars (the codec's cross-check and the Java client tests).
java-client: $(STAMP)
	@if [ -f $(JAVA_CLIENT_INSTALLER) ]; then \
		echo "$(PY) $(JAVA_CLIENT_INSTALLER)"; \
		$(PY) $(JAVA_CLIENT_INSTALLER); \
	fi

# The fast tier: tests/unit (each layer with fakes, the protocol codec and its Java
# cross-check, the layering, import-cycle and package-map checks). No ZooKeeper, no
# broker process, no browser; the Java cross-check needs the jars, fetched here as by
# `make test` (cached under .cache/).
test-fast: $(STAMP) bytecode java-client
	$(PY) -m pytest -q tests/unit $(PYTEST_ARGS)

# tests/unit with the asyncio loop stalled at random before some of its iterations
# (tests/unit/loop_stalls.py: LOOP_STALL_P, LOOP_STALL_MS, LOOP_STALL_SEED), as a loaded
# machine does: a test that fails here depends on timing. Not part of `make test`.
test-stalls: $(STAMP) bytecode java-client
	$(PY) -m pytest -q -p tests.unit.loop_stalls tests/unit $(PYTEST_ARGS)

# $(call apt_install,PACKAGE,WHAT SKIPS WITHOUT IT): install a Debian package with apt-get
# when we are root (or have passwordless sudo) and apt-get exists (an `apt-get update` and
# one retry if the first try fails); otherwise, or if it fails, a note and exit 0: the
# tests that need it skip, saying why.
apt_install = \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else echo "note: $(1) missing and no root/sudo for apt-get; $(2) will skip"; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "note: $(1) missing and no apt-get; $(2) will skip"; exit 0; fi; \
	echo "$$SUDO apt-get install -y $(1)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get install -y -q $(1) >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q $(1) >/dev/null; } || \
		echo "note: could not install $(1); $(2) will skip"

# kcat (old librdkafka 2.0.2 on Debian 12) for tests/integration/clients/test_kcat.py.
# The other clients the integration tests need install themselves on first use into
# .cache/: the Java jars (above), aiokafka 0.12's own venv and kafka-python's sdist for
# its integration suite (pytest fixtures).
kcat:
	@if command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1; then exit 0; fi; \
	$(call apt_install,kcat,its integration test)

# Headless Chromium (Debian's /usr/bin/chromium) for tests/integration/test_console.py,
# which loads the web console's pages in it.
chromium:
	@if [ -x /usr/bin/chromium ]; then exit 0; fi; \
	$(call apt_install,chromium,the console test)

# Every bench/*.py except private helpers (_*.py); each prints its figures and the command
# that reproduces them. A failing benchmark fails the target.
bench: $(STAMP) bytecode
	@shopt -s nullglob; \
	for f in bench/*.py; do \
		case "$$(basename "$$f")" in _*) continue ;; esac; \
		echo "== $(PY) $$f"; \
		$(PY) "$$f"; \
	done

# The fault campaign on virtual hosts (tests/fault/net_campaign.py): FAULT_SCHEDULES seeded
# schedules of network partitions, ZooKeeper faults (3-server ensemble), full and failing
# disks and process faults under a mixed acks=all queue load on 6 partitions at RF 3; the
# queue checker, the replicas on disk and availability figures. Needs root (network
# namespaces, loop-mounted ext4). Each schedule prints its seed: FAULT_ARGS="--replay SEED".
# Short version in `make test`: tests/fault/test_net_campaign.py.
# Then the client campaign (tests/fault/client_campaign.py): a leader, then the controller,
# cut from ZooKeeper and the other brokers (the clients still reach it) FAULT_CLIENT_ROUNDS
# times each, while librdkafka (idempotent and not), the Java client, kafka-python and
# aiokafka produce on their default settings; per fault kind and client, the seconds from
# the cut and from the heal to a write on every partition (targets: session timeout + 5 s,
# 5 s), no acknowledged write lost, none duplicated by the idempotent producers.
FAULT_SCHEDULES ?= 100
FAULT_SEED ?= 1
FAULT_ARGS ?=
FAULT_CLIENT_ROUNDS ?= 5
fault: $(STAMP) bytecode java-client
	$(PY) tests/fault/net_campaign.py --schedules $(FAULT_SCHEDULES) --seed $(FAULT_SEED) $(FAULT_ARGS)
	$(PY) tests/fault/client_campaign.py --rounds $(FAULT_CLIENT_ROUNDS) --seed $(FAULT_SEED)

# The process-fault campaign on loopback (tests/fault/campaign.py): random SIGKILL / SIGSTOP /
# SIGTERM faults on three brokers under an idempotent acks=all load for FAULT_MINUTES, then
# the checker. Its short versions are in tests/fault/test_failover.py.
FAULT_MINUTES ?= 10
fault-process: $(STAMP) bytecode
	$(PY) tests/fault/campaign.py --minutes $(FAULT_MINUTES) $(FAULT_ARGS)

# The transactional fault campaign (tests/fault/txn_campaign.py): consume-transform-produce
# over FAULT_TXN_RECORDS records at RF 3 while the transaction coordinator's broker, a
# partition leader and the controller are each killed -9 FAULT_TXN_KILLS times (30 kills);
# the checker reports loss, duplicates, G1a and uncommitted reads, and every kill must be
# followed by a commit within session timeout + 5 s. A killed broker starts again 0.5-2 s
# later (FAULT_ARGS=--restart-after-expiry: once ZooKeeper dropped its session);
# FAULT_ARGS=--stop makes every other fault a SIGSTOP past the session. Short version in
# `make test`: test_txn_failover.py.
FAULT_TXN_RECORDS ?= 100000
FAULT_TXN_KILLS ?= 10
fault-txn: $(STAMP) bytecode
	$(PY) tests/fault/txn_campaign.py --records $(FAULT_TXN_RECORDS) --kills $(FAULT_TXN_KILLS) $(FAULT_ARGS)

# The structure-aware fuzzer (tests/fuzz/fuzz_run.py): FUZZ_FRAMES mutated frames built from
# every API/version schema and the golden frames of stock clients, over many pipelined
# connections to a real broker, while well-behaved confluent-kafka clients produce and
# consume; then FUZZ_INPROC_FRAMES more straight to the decoders. Checks: no crash, no
# unhandled exception in the log, event-loop stalls (broker/loop_lag.py), RSS, client
# latency, every batch on disk valid. Seeded: FUZZ_SEED reproduces the same frames.
# Short version in `make test`: tests/fuzz/test_fuzz_short.py.
FUZZ_FRAMES ?= 1000000
FUZZ_INPROC_FRAMES ?= 1000000
FUZZ_SEED ?= 1
FUZZ_ARGS ?=
fuzz: $(STAMP) bytecode
	$(PY) -m tests.fuzz.fuzz_run --frames $(FUZZ_FRAMES) --inproc-frames $(FUZZ_INPROC_FRAMES) \
		--seed $(FUZZ_SEED) $(FUZZ_ARGS)

# Replication benchmarks alone (bench/replication.py; `make bench` runs it too).
BENCH_REPLICATION_ARGS ?=
bench-replication: $(STAMP) bytecode
	$(PY) bench/replication.py $(BENCH_REPLICATION_ARGS)

# Consumer-group benchmarks alone (`make bench` runs them too): the classic protocol's
# (bench/groups.py), then issue 19's: 100 members joining one group, consumer protocol vs
# classic (bench/consumer_protocol_join.py), and what a join does to the other members'
# consumption (bench/consumer_protocol_join_pause.py). BENCH_GROUPS_ARGS="--runs 5" goes to both.
BENCH_GROUPS_ARGS ?=
bench-groups: $(STAMP) bytecode
	$(PY) bench/groups.py
	$(PY) bench/consumer_protocol_join.py $(BENCH_GROUPS_ARGS)
	$(PY) bench/consumer_protocol_join_pause.py $(BENCH_GROUPS_ARGS)

# --- housekeeping -------------------------------------------------------------------

clean:
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -rf .pytest_cache .hypothesis build *.egg-info
	rm -f protocol/*.so $(STAMP)  # the next install builds the extension again

distclean: clean
	rm -rf $(VENV) .cache $(DATA_DIR)
