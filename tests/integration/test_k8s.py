#!/usr/bin/python3
"""images/k8s cannot drift from the code: the agent-sandbox manifests
(SandboxTemplate, SandboxWarmPool, SandboxClaim) and the plain Deployment
have the kinds and API groups agent-sandbox serves and name each other;
the Deployment runs the template's very pod; the container's arguments
are a command line berthd takes, and a real berthd started with them
(its port and the token's path moved to the test's) answers the probes'
paths, on the port the probes name, with the token read from where the
Secret is mounted and no warning about its mode; the config they name is
one the packages install; the grace period outlasts berthd's ordered
shutdown of that config; and the pod's resources hold the runtimes'
limits."""

import os
import re
import sys
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SRCDIR, Sandbox, case, expect, expect_eq, run, scratch, wait_for  # noqa: E402

K8S = os.path.join(SRCDIR, "images", "k8s")
EXTENSIONS = "extensions.agents.x-k8s.io/v1beta1"
KINDS = {
    "sandbox-template.yaml": (EXTENSIONS, "SandboxTemplate"),
    "warm-pool.yaml": (EXTENSIONS, "SandboxWarmPool"),
    "claim.yaml": (EXTENSIONS, "SandboxClaim"),
    "deployment.yaml": ("apps/v1", "Deployment"),
}
# What a service or runtime waits for its stop without a key of its own.
STOP_DEFAULT_MS = {"service": 5000, "runtime": 3000}


def manifest(name):
    with open(os.path.join(K8S, name)) as f:
        docs = list(yaml.safe_load_all(f))
    expect_eq(len(docs), 1, "documents in %s" % name)
    return docs[0]


def template_pod():
    return manifest("sandbox-template.yaml")["spec"]["podTemplate"]


def container():
    (c,) = template_pod()["spec"]["containers"]
    return c


def args_of(c):
    """The container's arguments as berthd's options: {--name: value}."""
    a = c["args"]
    expect(len(a) % 2 == 0 and all(x.startswith("--") for x in a[::2]), "args as --option value pairs: %r" % a)
    return dict(zip(a[::2], a[1::2]))


def config_sections(path):
    """[(section, {key: [values]})] of a berth.conf."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                out.append((line[1:-1], {}))
            elif "=" in line and out:
                k, v = (x.strip() for x in line.split("=", 1))
                out[-1][1].setdefault(k, []).append(v)
    return out


def size(v):
    """A berth.conf size or a Kubernetes quantity, in bytes."""
    m = re.fullmatch(r"(\d+)([KMG]i?)?", v)
    expect(m is not None, "a size: %r" % v)
    return int(m.group(1)) * {None: 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "Ki": 1 << 10, "Mi": 1 << 20,
                              "Gi": 1 << 30}[m.group(2)]


def shipped_config(path):
    """The source of a config path the packages install (/etc/berth/NAME.conf)."""
    m = re.fullmatch(r"/etc/berth/(\w+)\.conf", path)
    expect(m is not None, "the config is one of /etc/berth: %r" % path)
    with open(os.path.join(SRCDIR, "debian", "berth-desktop.install")) as f, \
            open(os.path.join(SRCDIR, "debian", "berth.install")) as g:
        installed = f.read() + g.read()
    expect(path.lstrip("/") in installed.split(), "%s is not installed by a package" % path)
    return os.path.join(SRCDIR, "images", m.group(1), "berth.conf")


@case("the manifests: agent-sandbox's kinds and groups, each naming the next; the Deployment runs the template's pod")
def t_structure():
    docs = {name: manifest(name) for name in KINDS}
    for name, (api, kind) in KINDS.items():
        expect_eq((docs[name]["apiVersion"], docs[name]["kind"]), (api, kind), name)
    template = docs["sandbox-template.yaml"]["metadata"]["name"]
    pool = docs["warm-pool.yaml"]
    expect_eq(pool["spec"]["sandboxTemplateRef"]["name"], template, "the warm pool's template")
    expect(pool["spec"]["replicas"] >= 1, "the warm pool keeps some ready")
    expect_eq(docs["claim.yaml"]["spec"]["warmPoolRef"]["name"], pool["metadata"]["name"], "the claim's warm pool")
    dep = docs["deployment.yaml"]["spec"]
    expect_eq(dep["template"], template_pod(), "the Deployment's pod against the template's")
    labels = template_pod()["metadata"]["labels"]
    expect_eq(dep["selector"]["matchLabels"], labels, "the Deployment selects its pods by the template's labels")
    expect("berth/image" in labels, "the pods carry the label claims and backends match on: %r" % labels)
    expect_eq(template_pod()["spec"].get("automountServiceAccountToken"), False, "no service account token")


@case("a real berthd started with the container's arguments answers the probes' paths on the probes' port, the "
      "token read from the Secret's mount without a warning", 120)
def t_probes():
    c = container()
    args = args_of(c)
    expect_eq(sorted(args), ["--config", "--listen", "--token-file"], "the options given to berthd")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    host, port = args["--listen"].rsplit(":", 1)
    expect_eq(host, "0.0.0.0", "the gateway listens for the cluster")
    probes = {k: c[k]["httpGet"] for k in ("startupProbe", "readinessProbe", "livenessProbe")}
    for k, get in probes.items():
        expect_eq(ports.get(get["port"], get["port"]), int(port), "%s's port against --listen" % k)
    expect_eq((probes["startupProbe"]["path"], probes["readinessProbe"]["path"], probes["livenessProbe"]["path"]),
              ("/readyz", "/readyz", "/healthz"), "the probes: strict readiness to start and serve, liveness")
    start = c["startupProbe"]
    expect(start["periodSeconds"] * start["failureThreshold"] >= 60, "a cold desktop gets a minute to be ready")

    (mount,) = c["volumeMounts"]
    (vol,) = [v for v in template_pod()["spec"]["volumes"] if v["name"] == mount["name"]]
    (item,) = vol["secret"]["items"]
    expect_eq(os.path.join(mount["mountPath"], item["path"]), args["--token-file"], "--token-file: the Secret's file")
    expect_eq((vol["secret"]["defaultMode"], mount.get("readOnly")), (0o400, True), "the token's mount")
    shipped_config(args["--config"])

    # The token where the Secret puts it, as the kubelet makes it: a link
    # into a ..data directory, mode 0400.
    d = scratch(0o755)
    data = os.path.join(d, "..data")
    os.mkdir(data)
    with open(os.path.join(data, "token"), "w") as f:
        f.write("a" * 40 + "\n")
    os.chmod(os.path.join(data, "token"), vol["secret"]["defaultMode"])
    os.symlink("..data/token", os.path.join(d, item["path"]))
    with Sandbox(token=None, args=("--token-file", os.path.join(d, item["path"]))) as sb:
        for k, get in probes.items():
            url = "http://127.0.0.1:%d%s" % (sb.port, get["path"])
            wait_for(lambda: urllib.request.urlopen(url, timeout=5).status == 200, 30, "%s on %s" % (k, url))
        log = sb.log()
        expect("readable by others" not in log, "berthd warned about the token's mode: %r" % log[-500:])


@case("the grace period outlasts berthd's ordered shutdown of the config; resources hold the runtimes' limits")
def t_shutdown_and_resources():
    pod = template_pod()["spec"]
    conf = config_sections(shipped_config(args_of(container())["--config"]))
    stops = [int(keys.get("stop_timeout_ms", [STOP_DEFAULT_MS[sec.split()[0]]])[0])
             for sec, keys in conf if sec.split()[0] in STOP_DEFAULT_MS]
    expect(len(stops) >= 5, "the config's services and runtimes were read: %r" % stops)
    expect(pod["terminationGracePeriodSeconds"] * 1000 > sum(stops),
           "terminationGracePeriodSeconds %s against the stop timeouts' sum %d ms"
           % (pod["terminationGracePeriodSeconds"], sum(stops)))
    runtimes = [keys for sec, keys in conf if sec.startswith("runtime ")]
    expect(runtimes and all("memory_bytes" in r and "cpu_millis" in r for r in runtimes),
           "every runtime of the config has its CPU and memory limits")
    res = container()["resources"]
    cpu = sum(int(r["cpu_millis"][0]) for r in runtimes)
    mem = sum(size(r["memory_bytes"][0]) for r in runtimes)
    expect(int(res["limits"]["cpu"]) * 1000 >= cpu, "limits.cpu %s against the runtimes' %d millis"
           % (res["limits"]["cpu"], cpu))
    # The desktop beside them: Xvnc, XFCE, Chromium, berth's own.
    expect(size(res["limits"]["memory"]) >= mem + (2 << 30), "limits.memory %s against the runtimes' %d bytes and "
           "the desktop's 2 GiB" % (res["limits"]["memory"], mem))
    expect(int(res["requests"]["cpu"]) <= int(res["limits"]["cpu"]) and
           size(res["requests"]["memory"]) <= size(res["limits"]["memory"]), "requests within limits: %r" % res)


run()
