# Everything a fresh machine needs: Python 3.11+, Java 17, and the package registries
# (PyPI; Debian's packages for the Chromium the report tests open pages in, and the
# PostgreSQL server the tests apply plans to).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= out/example
AIRFLOW_VENV  := .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed

CHROMIUM ?= /usr/bin/chromium
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

CLASSES := $(VENV)/spark-classes.jsa

.PHONY: setup airflow system classes run postgres postgres-stop test check bench clean

setup: $(STAMP)

# Idempotent: re-installs only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# Spark's classes archived once for the JVMs the tests start (tests/class_archive.py): each maps them
# instead of loading them, seconds less per JVM. Rebuilt when the virtualenv is. Only a speed-up: without
# it (a JVM that cannot write one) the tests run as before.
classes: $(CLASSES)

$(CLASSES): $(STAMP)
	$(BIN)/python tests/class_archive.py $@ || echo "no class archive: the tests' JVMs load their classes as usual"

# Airflow in its own virtualenv (it pins much of what it needs), for examples/airflow/dirtiness_dag.py
# and the test that runs it.
airflow: $(AIRFLOW_STAMP)

$(AIRFLOW_STAMP): examples/airflow/requirements.txt
	test -x $(AIRFLOW_VENV)/bin/python || $(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet -r examples/airflow/requirements.txt
	touch $(AIRFLOW_STAMP)

# Debian's packages the tests use, installed when missing: Chromium (the HTML report in a real
# browser) and PostgreSQL (plans applied to a real server, which the tests start on a Unix socket
# in a temporary folder; the package's own cluster is not created).
PACKAGES := $(if $(wildcard $(CHROMIUM)),,chromium) $(if $(wildcard /usr/lib/postgresql/*/bin/pg_ctl),,postgresql)
system:
	@if [ -n "$(strip $(PACKAGES))" ]; then $(SUDO) sh -c 'mkdir -p /etc/postgresql-common/createcluster.d && \
		echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/dirtiness.conf && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PACKAGES) >/dev/null'; fi

# The main job on the bundled example: Delta tables and report.html under $(OUT).
run: setup
	$(BIN)/dirtiness run --old examples/old.yaml --new examples/new.yaml --out $(OUT) \
		--summary-json $(OUT)/summary.json --report $(OUT)/report.html

# A throwaway PostgreSQL for the README's apply tour: Debian's package (installed if missing), a Unix socket in
# $(PG_DIR), no TCP port; it prints the connection string. postgres-stop stops it and removes the folder.
PG_DIR ?= out/postgres-server
postgres: system
	$(PYTHON) examples/postgres/local_server.py start $(PG_DIR) --database flipper

postgres-stop:
	$(PYTHON) examples/postgres/local_server.py stop $(PG_DIR)

# Everything, with the real parts, in two workers, each with its own SparkSession: a module's tests
# in one worker (its runs computed once), the modules with the slowest tests handed out first.
test: setup airflow system classes
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder

# The fast tier for the inner loop: the pure-Python tests, no Spark session (seconds).
check: setup
	$(BIN)/python -m pytest -m "not spark"

# Synthetic catalogs at 10k, 100k and 1M objects; one JSON line of figures each.
bench: setup
	$(BIN)/python bench/run.py --objects 10000
	$(BIN)/python bench/run.py --objects 100000
	$(BIN)/python bench/run.py --objects 1000000
	$(BIN)/python bench/dbt_manifest.py --copies 30
	$(BIN)/python bench/chain.py --objects 2000 --steps 10

clean:
	rm -rf out .pytest_cache test-artifacts
