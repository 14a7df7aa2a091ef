#!/usr/bin/env python3
"""Checks the deployment files that cannot run on the development machine (Docker, Kubernetes,
systemd) for structure, and the RabbitMQ definitions against the services' sources.

    python3 deploy/check/validate.py      (from anywhere; exit 0 = every check passed)

Run by `make test` through Tests/GrocerAMQPTests/DeployDefinitionsTests.swift. It never needs a
Docker daemon or a cluster. Tools used when present, reported as skipped otherwise:
`systemd-analyze verify`, `nginx -t`, `docker compose config`.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVICES = {  # binary: (port, systemd/volume short name)
    "stock-service": (8081, "stock"),
    "cart-service": (8082, "cart"),
    "order-service": (8083, "order"),
    "tracking-service": (8084, "tracking"),
    "notify-gateway": (8085, "notify"),
}

failures = []
notes = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def rel(path):
    return str(Path(path).relative_to(ROOT))


# ---------------------------------------------------------------- RabbitMQ definitions


def swift_constants():
    """`Type.name` -> string value, from `static let name = "..."` in Shared/GrocerContracts,
    and aliases such as `static let confirmed = StockEventType.orderConfirmed`."""
    constants, aliases = {}, {}
    for path in (ROOT / "Shared" / "GrocerContracts").glob("*.swift"):
        current = None
        for line in path.read_text().splitlines():
            match = re.match(r"\s*public enum (\w+)", line)
            if match:
                current = match.group(1)
            match = re.match(r'\s*public static let (\w+)(?:: String)? = "([^"]*)"', line)
            if match and current:
                constants[f"{current}.{match.group(1)}"] = match.group(2)
            match = re.match(r"\s*public static let (\w+) = (\w+\.\w+)\s*$", line)
            if match and current:
                aliases[f"{current}.{match.group(1)}"] = match.group(2)
    for alias, target in aliases.items():
        if target in constants:
            constants[alias] = constants[target]
    return constants


def resolve_keys(expression, constants, lists, scope=None):
    """The routing keys of a Swift array literal or a `Type.list` constant (unqualified names
    inside the literal are looked up in the enum `scope`)."""
    expression = expression.strip()
    if expression in lists:
        return lists[expression]
    if expression.startswith("["):
        names = [part.strip() for part in expression.strip("[]").split(",") if part.strip()]
        keys = []
        for name in names:
            if name.startswith('"'):
                keys.append(name.strip('"'))
                continue
            if "." not in name and scope:
                name = f"{scope}.{name}"
            if check(name in constants, f"cannot resolve the binding key {name}"):
                keys.append(constants[name])
        return keys
    check(False, f"cannot resolve binding keys {expression!r}")
    return []


def queues_declared_by_services():
    """{queue: set(binding keys)} for every durable QueueSpec the services declare (name =
    configuration.serviceName, i.e. the service's own name by default)."""
    constants = swift_constants()
    lists = {}
    for path in (ROOT / "Shared" / "GrocerContracts").glob("*.swift"):
        text = path.read_text()
        for enum, body in re.findall(r"public enum (\w+) \{(.*?)\n\}", text, re.S):
            for name, literal in re.findall(r"public static let (\w+): \[String\] = (\[[^\]]*\])", body):
                lists[f"{enum}.{name}"] = resolve_keys(literal, constants, lists, scope=enum)
    for path in (ROOT / "Services").glob("*/Sources/*/**/*.swift"):
        text = path.read_text()
        for match in re.finditer(r"struct (\w+)[^{]*\{(.*?)\n\}", text, re.S):
            found = re.search(r"static let bindingKeys = (\[[^\]]*\])", match.group(2), re.S)
            if found:
                literal = re.sub(r"\s+", " ", found.group(1))
                lists[f"{match.group(1)}.bindingKeys"] = resolve_keys(literal, constants, lists)
    declared = {}
    for service_dir in sorted((ROOT / "Services").iterdir()):
        for path in service_dir.glob("Sources/*/*.swift"):
            text = path.read_text()
            for match in re.finditer(
                r"QueueSpec\(\s*name: configuration\.serviceName, bindingKeys: ([\w.]+|\[[^\]]*\])", text
            ):
                binary = re.search(r'serviceName(?:: String)? = "([^"]+)"', read_configuration(service_dir))
                name = binary.group(1) if binary else service_dir.name
                declared[name] = set(resolve_keys(match.group(1), constants, lists))
    return declared


def read_configuration(service_dir):
    return "\n".join(p.read_text() for p in service_dir.glob("Sources/*/*Configuration.swift"))


def check_definitions():
    path = DEPLOY / "rabbitmq" / "definitions.json"
    definitions = json.loads(path.read_text())
    exchanges = {e["name"]: e for e in definitions.get("exchanges", [])}
    queues = {q["name"]: q for q in definitions.get("queues", [])}
    vhosts = {v["name"] for v in definitions.get("vhosts", [])}
    for kind in ("exchanges", "queues", "bindings", "policies"):
        for item in definitions.get(kind, []):
            check(item.get("vhost") in vhosts, f"{rel(path)}: {kind} item in undeclared vhost: {item}")
    check(exchanges.get("grocer.events", {}).get("type") == "topic", f"{rel(path)}: no topic exchange grocer.events")
    check(exchanges.get("grocer.parking", {}).get("type") == "headers", f"{rel(path)}: no headers exchange grocer.parking")
    for binding in definitions.get("bindings", []):
        check(binding["source"] in exchanges, f"{rel(path)}: binding from undeclared exchange {binding}")
        target = exchanges if binding["destination_type"] == "exchange" else queues
        check(binding["destination"] in target, f"{rel(path)}: binding to undeclared {binding['destination']}")
    for queue in queues.values():
        arguments = queue.get("arguments", {})
        dlx = arguments.get("x-dead-letter-exchange")
        if dlx:
            check(dlx in exchanges, f"{rel(path)}: {queue['name']} dead-letters to undeclared {dlx}")
    for policy in definitions.get("policies", []):
        matched = [q for q in queues if re.search(policy["pattern"], q)]
        check(matched, f"{rel(path)}: policy {policy['name']} matches no queue")
        dlx = policy["definition"].get("dead-letter-exchange")
        check(dlx is None or dlx in exchanges, f"{rel(path)}: policy {policy['name']}: undeclared {dlx}")
    # Against the code: every durable queue a service declares, its bindings, arguments, policy.
    declared = queues_declared_by_services()
    check(len(declared) >= 4, f"found only {sorted(declared)} as service queues in Services/")
    bindings = {(b["source"], b["destination"], b["routing_key"]) for b in definitions.get("bindings", [])}
    for name, keys in declared.items():
        queue = queues.get(name)
        if not check(queue is not None, f"{rel(path)}: no queue {name} (declared by Services/)"):
            continue
        arguments = queue.get("arguments", {})
        expected = {"x-queue-type": "quorum"}
        check(arguments == expected, f"{rel(path)}: {name} arguments {arguments} differ from the code's {expected}")
        parking = queues.get(f"{name}.parking")
        if check(parking is not None, f"{rel(path)}: no parking queue {name}.parking"):
            # Quorum like the queue it serves: a classic one is lost while its node is down.
            check(parking.get("arguments", {}) == expected, f"{rel(path)}: {name}.parking must be a quorum queue")
        parking_bindings = [
            b for b in definitions.get("bindings", [])
            if b["source"] == "grocer.parking" and b["destination"] == f"{name}.parking"
        ]
        check(
            [b.get("arguments") for b in parking_bindings] == [{"x-match": "all-with-x", "x-first-death-queue": name}],
            f"{rel(path)}: {name}.parking must bind to grocer.parking on x-first-death-queue = {name}",
        )
        for key in keys:
            check(("grocer.events", name, key) in bindings, f"{rel(path)}: {name} lacks binding {key}")
        extra = {k for (s, d, k) in bindings if s == "grocer.events" and d == name} - keys
        check(not extra, f"{rel(path)}: {name} has bindings the code does not declare: {extra}")
        policies = [p for p in definitions.get("policies", []) if re.search(p["pattern"], name)]
        check(
            len(policies) == 1
            and policies[0]["definition"] == {"dead-letter-exchange": "grocer.parking", "delivery-limit": 5},
            f"{rel(path)}: {name} needs exactly one dead-letter policy (grocer.parking, delivery limit 5)",
        )
        parking_policies = [p["name"] for p in definitions.get("policies", []) if re.search(p["pattern"], f"{name}.parking")]
        check(not parking_policies, f"{rel(path)}: {name}.parking must not dead-letter itself: {parking_policies}")
    notes.append(f"definitions: {len(declared)} service queues found in Services/ match {rel(path)}")
    return definitions


# ---------------------------------------------------------------- systemd


def check_systemd():
    directory = DEPLOY / "systemd"
    units = []
    for binary, (port, short) in SERVICES.items():
        unit = directory / f"grocer-{short}.service"
        units.append(unit)
        if not check(unit.exists(), f"missing {rel(unit)}"):
            continue
        text = unit.read_text()
        required = {
            "User": "grocer",
            "EnvironmentFile": f"/etc/grocer/{binary}.env",
            "ExecStart": f"/usr/local/bin/{binary} serve",
            "Restart": "on-failure",
            "NoNewPrivileges": "yes",
            "ProtectSystem": "strict",
            "ReadWritePaths": f"/var/lib/grocer/{short}",
            "PrivateTmp": "yes",
            "WantedBy": "grocer.target",
        }
        values = {}
        for line in text.splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.split("=", 1)
                values.setdefault(key.strip(), []).append(value.strip())
        for key, value in required.items():
            check(value in values.get(key, []), f"{rel(unit)}: needs {key}={value}")
        for key in ("After", "Wants"):
            check(any("rabbitmq-server.service" in v for v in values.get(key, [])), f"{rel(unit)}: {key} rabbitmq")
        env = directory / "env" / f"{binary}.env"
        if check(env.exists(), f"missing {rel(env)}"):
            check(f"GROCER_HTTP_PORT={port}" in env.read_text(), f"{rel(env)}: GROCER_HTTP_PORT={port}")
    target = directory / "grocer.target"
    if check(target.exists(), f"missing {rel(target)}"):
        for unit in units:
            check(unit.name in target.read_text(), f"{rel(target)} does not want {unit.name}")
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        notes.append("systemd: `systemd-analyze verify` skipped (not installed); keys checked")
        return
    result = subprocess.run(
        [analyze, "verify", "--man=no", *[str(u) for u in units], str(target)],
        capture_output=True, text=True, timeout=60, cwd=directory,
    )
    problems = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        # The binaries are not installed on the development machine.
        if line.strip() and not re.search(r"Command /usr/local/bin/[\w-]+ is not executable", line)
    ]
    check(not problems, "systemd-analyze verify:\n  " + "\n  ".join(problems))
    notes.append("systemd: `systemd-analyze verify` passed (only the missing /usr/local/bin binaries ignored)")


# ---------------------------------------------------------------- Docker


def check_dockerfile(path):
    text = path.read_text()
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M | re.I)
    check(any(alias.lower() == "builder" for _, alias in froms), f"{rel(path)}: no `FROM … AS builder`")
    check(len(froms) >= 2, f"{rel(path)}: not multi-stage")
    if froms:
        check(froms[-1][0].startswith("debian:bookworm-slim"), f"{rel(path)}: runtime stage is not debian:bookworm-slim")
    check(re.search(r"ARG SWIFT_IMAGE=swift:6\.\d+-bookworm", text), f"{rel(path)}: builder is not swift:6.x-bookworm")
    check(re.search(r"^USER\s+(?!root)", text, re.M), f"{rel(path)}: runs as root")
    check(re.search(r"^HEALTHCHECK .*", text, re.M) and "/health/live" in text, f"{rel(path)}: no HEALTHCHECK on /health/live")
    check(re.search(r"^EXPOSE\s+", text, re.M), f"{rel(path)}: no EXPOSE")
    for library in ("librabbitmq4", "libmicrohttpd12", "libsqlite3-0", "libssl3", "libcurl4"):
        check(library in text.split("AS runtime", 1)[-1], f"{rel(path)}: runtime lacks {library}")
    for dev in ("librabbitmq-dev", "libmicrohttpd-dev", "libsqlite3-dev", "libssl-dev"):
        check(dev in text.split("AS runtime", 1)[0], f"{rel(path)}: builder lacks {dev}")
    # Everything the build copies exists in the repository.
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        check((ROOT / source).exists(), f"{rel(path)}: COPY {source} does not exist")


def check_compose():
    path = DEPLOY / "docker" / "compose.yaml"
    compose = yaml.safe_load(path.read_text())
    services = compose.get("services", {})
    nodes = ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]
    for name in list(SERVICES) + nodes + ["gateway"]:
        check(name in services, f"{rel(path)}: no service {name}")
    # A three-node cluster (issue 24): every service is given every node and waits for them all.
    for name in SERVICES:
        urls = str(services.get(name, {}).get("environment", {}).get("GROCER_AMQP_URLS", ""))
        check(all(f"@{node}:5672/" in urls for node in nodes), f"{rel(path)}: {name} is not given every broker node")
        check(set(nodes) <= set(services.get(name, {}).get("depends_on") or {}), f"{rel(path)}: {name} does not wait for every node")
    for node in nodes:
        check(services.get(node, {}).get("hostname") == node, f"{rel(path)}: {node}'s hostname is not its name")
    for name, service in services.items():
        build = service.get("build")
        if build:
            context = (path.parent / build["context"]).resolve()
            dockerfile = context / build.get("dockerfile", "Dockerfile")
            if check(dockerfile.exists(), f"{rel(path)}: {name} builds missing {dockerfile}"):
                check_dockerfile(dockerfile)
            check(build.get("args", {}).get("SERVICE") == name, f"{rel(path)}: {name} builds another SERVICE")
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                check((path.parent / source).exists(), f"{rel(path)}: {name} mounts missing {source}")
            else:
                check(source in (compose.get("volumes") or {}), f"{rel(path)}: {name} uses undeclared volume {source}")
        for dependency, condition in (service.get("depends_on") or {}).items():
            check(dependency in services, f"{rel(path)}: {name} depends on unknown {dependency}")
            if condition.get("condition") == "service_healthy":
                check("healthcheck" in services.get(dependency, {}), f"{rel(path)}: {dependency} has no healthcheck")
        if name in SERVICES:
            port = str(SERVICES[name][0])
            check(service["environment"].get("GROCER_HTTP_PORT") == port, f"{rel(path)}: {name} port")
            check("/health/" in " ".join(service["healthcheck"]["test"]), f"{rel(path)}: {name} healthcheck")
    check("8080:8080" in " ".join(services.get("gateway", {}).get("ports", [])), f"{rel(path)}: gateway not on 8080")
    # StockService on PostgreSQL as two replicas (issue 23).
    check("healthcheck" in services.get("postgres", {}), f"{rel(path)}: no PostgreSQL service with a healthcheck")
    stock = services.get("stock-service", {})
    check((stock.get("deploy") or {}).get("replicas", 1) >= 2, f"{rel(path)}: stock-service not two replicas")
    check(
        str(stock.get("environment", {}).get("GROCER_DATABASE_URL", "")).startswith("postgresql://")
        and "postgres" in (stock.get("depends_on") or {}),
        f"{rel(path)}: stock-service not on the postgres service",
    )
    conf = (DEPLOY / "docker" / "rabbitmq" / "rabbitmq.conf").read_text()
    check("load_definitions = /etc/rabbitmq/definitions.d" in conf, "rabbitmq.conf: no load_definitions")
    for index, node in enumerate(nodes, start=1):
        check(f"cluster_formation.classic_config.nodes.{index} = rabbit@{node}" in conf, f"rabbitmq.conf: {node} not in the cluster")
    check("cluster_partition_handling = pause_minority" in conf, "rabbitmq.conf: no pause_minority")
    users = json.loads((DEPLOY / "docker" / "rabbitmq" / "users.json").read_text())
    user = users["users"][0]["name"]
    check(f"amqp://{user}:" in json.dumps(compose), f"{rel(path)}: services do not use the {user} user")
    docker = shutil.which("docker")
    compose_ok = docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    if compose_ok:
        result = subprocess.run([docker, "compose", "-f", str(path), "config", "-q"], capture_output=True, text=True)
        check(result.returncode == 0, f"docker compose config: {result.stderr}")
        notes.append("docker: `docker compose config` passed")
    else:
        notes.append("docker: `docker compose config` SKIPPED (no docker compose plugin here); structure checked")


# ---------------------------------------------------------------- nginx gateway


def locations(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("location", "proxy_pass", "return"))]


def check_gateway():
    local = (DEPLOY / "local" / "nginx-gateway.conf").read_text()
    container = (DEPLOY / "docker" / "nginx-gateway.conf").read_text()
    check(locations(local) == locations(container), "deploy/docker/nginx-gateway.conf routes differently from deploy/local's")
    for binary, (port, _) in SERVICES.items():
        check(f"server {binary}:{port}" in container, f"docker nginx-gateway.conf: no upstream {binary}:{port}")
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        notes.append("gateway: `nginx -t` skipped (nginx not installed); routes compared")
        return
    with tempfile.TemporaryDirectory(prefix="grocer-nginx-check-") as prefix:
        # The service host names do not resolve here: point them at loopback, on a free-form port.
        text = re.sub(r"server ([\w-]+):(\d+)", r"server 127.0.0.1:\2", container)
        text = text.replace("listen 8080 reuseport", "listen 127.0.0.1:18080")
        text = text.replace("/tmp/", f"{prefix}/").replace("pid /tmp/nginx.pid", f"pid {prefix}/nginx.pid")
        conf = Path(prefix) / "nginx.conf"
        conf.write_text(text)
        result = subprocess.run([nginx, "-t", "-q", "-p", prefix, "-c", str(conf)], capture_output=True, text=True)
        check(result.returncode == 0, f"nginx -t on deploy/docker/nginx-gateway.conf: {result.stderr}")
    notes.append("gateway: routes equal deploy/local's, `nginx -t` passed")


# ---------------------------------------------------------------- Kubernetes


def check_kubernetes(definitions):
    documents = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is None:
                continue
            documents.append((path, document))
            for key in ("apiVersion", "kind"):
                check(key in document, f"{rel(path)}: a document without {key}")
            check(document.get("metadata", {}).get("name"), f"{rel(path)}: a document without metadata.name")
    by_kind = {}
    for path, document in documents:
        by_kind.setdefault(document.get("kind"), {})[document["metadata"]["name"]] = (path, document)
    deployments = by_kind.get("Deployment", {})
    for binary, (port, short) in SERVICES.items():
        if not check(binary in deployments, f"kubernetes: no Deployment {binary}"):
            continue
        path, deployment = deployments[binary]
        check(binary in by_kind.get("Service", {}), f"kubernetes: no Service {binary}")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        check(container.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/health/ready", f"{rel(path)}: readiness probe")
        check(container.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/health/live", f"{rel(path)}: liveness probe")
        resources = container.get("resources", {})
        check("requests" in resources and "limits" in resources, f"{rel(path)}: resources")
        env = {e["name"]: e for e in container.get("env", [])}
        check(env.get("GROCER_HTTP_PORT", {}).get("value") == str(port), f"{rel(path)}: GROCER_HTTP_PORT")
        sources = [next(iter(s.values()))["name"] for s in container.get("envFrom", [])]
        check("grocer-jwt" in sources and "grocer-jwt" in by_kind.get("Secret", {}), f"{rel(path)}: JWT secret not from a Secret")
        # On PostgreSQL (issue 23): several replicas, no volume claim or node pinning, the
        # connection string built from the database cluster's secret.
        spec = deployment["spec"]["template"]["spec"]
        check(deployment["spec"].get("replicas", 1) >= 2, f"{rel(path)}: fewer than two replicas")
        check(not any("persistentVolumeClaim" in v for v in spec.get("volumes", [])), f"{rel(path)}: a volume claim")
        check("affinity" not in spec, f"{rel(path)}: pinned by affinity")
        url = env.get("GROCER_DATABASE_URL", {}).get("value", "")
        check(url.startswith("postgresql://") and url.split("?")[0].endswith(f"/grocer_{short}"), f"{rel(path)}: GROCER_DATABASE_URL")
        check(
            env.get("PGPASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {}).get("name") == "grocer-postgres-app",
            f"{rel(path)}: the database password not from the cluster's secret",
        )
    for path, document in documents:
        if document.get("kind") == "Deployment":
            for container in document["spec"]["template"]["spec"]["containers"]:
                for probe in ("readinessProbe", "livenessProbe"):
                    check(probe in container, f"{rel(path)}: {document['metadata']['name']} lacks {probe}")
    autoscalers = by_kind.get("HorizontalPodAutoscaler", {})
    check(
        any(
            d["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "stock-service"}
            and d["spec"]["metrics"][0]["resource"]["name"] == "cpu"
            for _, d in autoscalers.values()
        ),
        "kubernetes: no CPU HorizontalPodAutoscaler targeting the stock-service Deployment",
    )
    databases = by_kind.get("Cluster", {})
    if check("grocer-postgres" in databases, "kubernetes: no CloudNativePG Cluster grocer-postgres"):
        spec = databases["grocer-postgres"][1]["spec"]
        check(spec.get("instances", 1) >= 2, "kubernetes: the PostgreSQL cluster has no standby")
        initdb = spec.get("bootstrap", {}).get("initdb", {})
        made = [initdb.get("database")] + [sql.split()[2] for sql in initdb.get("postInitSQL", []) if sql.startswith("CREATE DATABASE")]
        for short in [s for _, s in SERVICES.values()] + ["payments"]:
            check(f"grocer_{short}" in made, f"kubernetes: the PostgreSQL cluster does not create grocer_{short}")
    clusters = by_kind.get("RabbitmqCluster", {})
    check(any(d["spec"].get("replicas") == 3 for _, d in clusters.values()), "kubernetes: no 3-node RabbitmqCluster")
    maps = by_kind.get("ConfigMap", {})
    if check("grocer-rabbitmq-definitions" in maps, "kubernetes: no definitions ConfigMap"):
        copy = json.loads(maps["grocer-rabbitmq-definitions"][1]["data"]["definitions.json"])
        check(copy == definitions, "kubernetes: the definitions ConfigMap differs from deploy/rabbitmq/definitions.json")
    if check("grocer-gateway" in maps, "kubernetes: no gateway ConfigMap"):
        gateway = maps["grocer-gateway"][1]["data"]["nginx.conf"]
        check(gateway == (DEPLOY / "docker" / "nginx-gateway.conf").read_text(), "kubernetes: gateway nginx.conf differs from deploy/docker's")
    notes.append(f"kubernetes: {len(documents)} documents checked (no cluster: structure only)")


def main():
    definitions = check_definitions()
    check_systemd()
    check_compose()
    check_gateway()
    check_kubernetes(definitions)
    for note in notes:
        print(f"validate: {note}")
    if failures:
        for failure in failures:
            print(f"validate: FAILED: {failure}", file=sys.stderr)
        return 1
    print("validate: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
