# Grocer: the two set-up commands are `make run` and `make test` (see README.md).
# Everything the local system writes lives under var/ (data, logs, pid files, nginx, RabbitMQ).

SWIFT ?= swift
SWIFT_FORMAT ?= swift-format
# Extra flags for every swift build/test, e.g. SWIFT_FLAGS="-Xswiftc -warnings-as-errors".
SWIFT_FLAGS ?=
# The local system runs the release build (one configuration for `run` and `bench`).
CONFIGURATION ?= release
BIN_DIR ?= $(CURDIR)/.build/$(CONFIGURATION)
DEPLOY := deploy/local
RABBITMQ ?= $(DEPLOY)/rabbitmq.sh
# Where the services keep their data: sqlite (files under var/data, the default) or postgres
# (a local PostgreSQL under var/postgres, one database per service): `make run DB=postgres`.
DB ?= sqlite
export GROCER_DB := $(DB)
# The broker: single (one node on 5672, the default) or cluster (three nodes on 5672-5674 in one
# cluster, deploy/local/rabbitmq.sh cluster): `make run BROKER=cluster`, with DB=postgres too.
BROKER ?= single
export GROCER_BROKER := $(BROKER)
# Processes per service behind the gateway (more than one needs DB=postgres).
REPLICAS ?= 1
export GROCER_REPLICAS := $(REPLICAS)
SOURCES := Package.swift Shared Services Tools Tests Benchmarks

# If swift is not on PATH, use the toolchain at /opt/swift (fresh machines of our kind).
ifeq ($(shell command -v $(SWIFT) 2>/dev/null),)
  export PATH := /opt/swift/usr/bin:$(PATH)
endif

.PHONY: help run down status test build build-tests deps broker services gateway bench \
	format lint clean-data clean-broker faults fuzz

help:
	@echo "make run         install what is missing, build, start RabbitMQ, the five services and the nginx gateway"
	@echo "make run DB=postgres  the same with every service on a local PostgreSQL (var/postgres)"
	@echo "make run DB=postgres REPLICAS=2  two processes of every service behind the gateway"
	@echo "make run BROKER=cluster  the same on a local three-node RabbitMQ cluster (5672-5674)"
	@echo "make down        stop the gateway, the services, RabbitMQ and PostgreSQL"
	@echo "make status      what is running"
	@echo "make test        run every test (starts RabbitMQ, which stays up)"
	@echo "make bench       run the benchmarks in Benchmarks/"
	@echo "make faults      the fault suite's long run (kill -9, broker restarts, disk full; report in var/faults/)"
	@echo "make faults FAULTS_BROKER=cluster  the same on three RabbitMQ nodes, each killed in turn"
	@echo "make fuzz        schemathesis against every service's OpenAPI document (FUZZ_FLAGS=--quick: CI's short run)"
	@echo "make format      format the Swift sources in place;  make lint  checks them"
	@echo "make clean-data  delete var/data (all local service data)"
	@echo "make clean-broker  empty the local RabbitMQ node (queues keep events while services are down)"
	@echo "Operators' tool (after make run): $(BIN_DIR)/grocer help  (token, demo load, queues, dead-letters, republish, simulate, load)"

deps:
	@bash $(DEPLOY)/install-deps.sh

# SwiftPM does not rebuild a module two hops away from a change that only touches private stored
# properties (the layout moves, the interface does not): an executable built against the old
# layout crashes at start. Executables are one thin main.swift each, so they are always rebuilt.
EXECUTABLE_MAINS := $(wildcard Services/*/Sources/*/main.swift Tools/*/main.swift Benchmarks/*/Sources/main.swift)

build: deps
	@touch $(EXECUTABLE_MAINS)
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_FLAGS)

broker: deps
	@bash $(RABBITMQ) start

# The running system gets our topology and dead-letter policies first, after replacing an older
# build's classic parking queues (a node kept in var/ from before). (The tests and benchmarks
# share the node but use queues of their own, so they do not import it: the service queues
# would fill with their events).
services: build broker
	@GROCER_RABBITMQ_SCRIPT=$(RABBITMQ) $(BIN_DIR)/grocer parking migrate
	@bash $(RABBITMQ) definitions
	@GROCER_BIN_DIR="$(BIN_DIR)" bash $(DEPLOY)/services.sh start

gateway: deps
	@bash $(DEPLOY)/gateway.sh start

run: services gateway
	@echo
	@echo "Grocer is running (make status, make down):"
	@echo "  gateway       http://127.0.0.1:$${GROCER_GATEWAY_PORT:-8080}/v1/..."
	@echo "  StockService  http://127.0.0.1:$${GROCER_STOCK_PORT:-8081}  (/health/ready, /metrics)"
	@echo "  CartService   http://127.0.0.1:$${GROCER_CART_PORT:-8082}  (/health/ready, /metrics)"
	@echo "  OrderService  http://127.0.0.1:$${GROCER_ORDER_PORT:-8083}  (/health/ready, /metrics)"
	@echo "  TrackingService http://127.0.0.1:$${GROCER_TRACKING_PORT:-8084}  (/health/ready, /metrics)"
	@echo "  NotifyGateway http://127.0.0.1:$${GROCER_NOTIFY_PORT:-8085}  (/health/ready, /metrics; the APNs simulator's record: GET /v1/sim/devices/{token} as staff)"
	@echo "  RabbitMQ      amqp://guest:guest@127.0.0.1:$${GROCER_AMQP_PORT:-5672}/$(if $(filter cluster,$(BROKER)), (and 5673, 5674: three nodes))"
	@echo "  logs          $${GROCER_VAR_DIR:-var}/log/    data  $${GROCER_VAR_DIR:-var}/data/"
	@echo "Try it:"
	@echo "  TOKEN=\$$($(BIN_DIR)/grocer-token alice)"
	@echo "  curl -H \"Authorization: Bearer \$$TOKEN\" 'http://127.0.0.1:$${GROCER_GATEWAY_PORT:-8080}/v1/hubs/h1/stock?ids=p00001,p00002'"
	@echo "  curl -X PUT -H \"Authorization: Bearer \$$TOKEN\" -H 'Content-Type: application/json' -d '{\"quantity\":2}' 'http://127.0.0.1:$${GROCER_GATEWAY_PORT:-8080}/v1/hubs/h1/cart/items/p00001'"

down:
	@bash $(DEPLOY)/gateway.sh stop || true
	@bash $(DEPLOY)/services.sh stop || true
	@bash $(RABBITMQ) stop || true
	@if [ "$(BROKER)" != cluster ] && [ -d "$${GROCER_VAR_DIR:-var}/rabbitmq/grocer-1" ]; then \
	  GROCER_BROKER=cluster bash $(RABBITMQ) stop || true; fi
	@bash $(DEPLOY)/postgres.sh stop || true

status:
	@bash $(DEPLOY)/gateway.sh status || true
	@bash $(DEPLOY)/services.sh status || true
	@bash $(RABBITMQ) status || true

build-tests: deps
	@touch $(EXECUTABLE_MAINS)
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)

# swift-testing records a backtrace for every error thrown anywhere in the test process (for
# the report of a test that fails with one); half the test process's CPU went to it, mostly on
# errors caught at once (try?). SWT_SWIFT_ERROR_BACKTRACING_ENABLED=1 brings the backtraces back.
export SWT_SWIFT_ERROR_BACKTRACING_ENABLED ?= 0

# The broker-backed tests need RabbitMQ on 127.0.0.1:5672; it stays up afterwards.
# Suites run one after another: a few live-socket and SQLite tests block threads on purpose,
# and on 2 cores they would starve the cooperative pool of suites running beside them.
# Whatever a crashed test process left running is killed afterwards (deploy/check/reap-orphans.sh).
# `make test DB=postgres` runs only the test targets whose stores and services take the engine
# from GROCER_DB (TestEngine.selected): the others never open a database, or open SQLite or
# PostgreSQL by name, so the SQLite pass has already run all they do (the cluster tests alone
# take minutes). ENGINE_TESTS= runs every target again.
ENGINE_TESTS ?= CartServiceTests|NotifyGatewayTests|OrderServiceTests|StockServiceTests|SystemTests|TrackingServiceTests
TEST_FILTER := $(if $(and $(filter postgres,$(DB)),$(ENGINE_TESTS)),--filter '^($(ENGINE_TESTS))\.')
test: build-tests broker
	@status=0; $(SWIFT) test --skip-build --no-parallel $(SWIFT_FLAGS) $(TEST_FILTER) || status=$$?; \
	  bash deploy/check/reap-orphans.sh; exit $$status

# The fault suite's long run (Tests/SystemTests/FaultTests.swift; make test runs the short one):
# every service killed with SIGKILL three times, two restarts of the whole RabbitMQ node, two
# disk-full episodes, four minutes of mixed load, then the invariants. Root is needed (the
# disk-full tmpfs). It stops the shared broker node: run it alone. FAULTS_BROKER=cluster runs it
# on a three-node cluster of the tests' own (5682-5684) and kills each node once instead.
FAULTS_SECONDS ?= 240
FAULTS_BROKER ?= single
faults: build-tests broker
	GROCER_FAULTS_SECONDS=$(FAULTS_SECONDS) GROCER_FAULTS_KILLS=$${GROCER_FAULTS_KILLS:-3} \
	  GROCER_FAULTS_BROKER=$(FAULTS_BROKER) \
	  GROCER_FAULTS_BROKER_RESTARTS=$${GROCER_FAULTS_BROKER_RESTARTS:-$(if $(filter cluster,$(FAULTS_BROKER)),3,2)} \
	  GROCER_FAULTS_BROKER_RESTART=$${GROCER_FAULTS_BROKER_RESTART:-node} \
	  GROCER_FAULTS_DB_RESTARTS=$${GROCER_FAULTS_DB_RESTARTS:-1} GROCER_FAULTS_DISK_FULL=$${GROCER_FAULTS_DISK_FULL:-2} GROCER_FAULTS_DISK_FULL_SECONDS=$${GROCER_FAULTS_DISK_FULL_SECONDS:-10} \
	  GROCER_FAULTS_REPORT=$${GROCER_FAULTS_REPORT:-$(CURDIR)/var/faults/report.json} \
	  $(SWIFT) test --skip-build --no-parallel $(SWIFT_FLAGS) --filter FaultTests || status=$$?; \
	  bash deploy/check/reap-orphans.sh; exit $${status:-0}

bench: build broker
	@GROCER_BIN_DIR="$(BIN_DIR)" GROCER_RABBITMQ_SCRIPT="$(RABBITMQ)" bash Benchmarks/run-all.sh

format:
	$(SWIFT_FORMAT) format --in-place --recursive $(SOURCES)

lint:
	$(SWIFT_FORMAT) lint --strict --recursive $(SOURCES)

# schemathesis against every service's OpenAPI document (deploy/check/schemathesis.sh): the debug
# build's services on ports, data and a broker vhost of their own. FUZZ_FLAGS=--quick for CI.
fuzz: build-tests broker
	@GROCER_BIN_DIR="$(CURDIR)/.build/debug" bash deploy/check/schemathesis.sh $(FUZZ_FLAGS)

# Every queue and message of the running local node; services re-declare theirs on reconnect.
clean-broker:
	@bash $(RABBITMQ) reset

# Stop first (make down): a running service keeps its deleted database open.
clean-data:
	rm -rf "$${GROCER_VAR_DIR:-var}/data"
