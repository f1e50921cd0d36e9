#!/usr/bin/env python3
"""deploy.manifests: the deployment YAML is sound.

- every *.yaml under deploy/ parses (multi-document files too);
- the DaemonSet keeps the settings its README promises (host /sys at
  /host/sys + --sysfs-root, HostToContainer hugetlbfs, state on the host, a
  hugepage limit, a liveness probe on /v1/health, no privileged mode);
- the alert rules use only metric names the daemon exports, as listed in
  the daemon's metrics module (when SERVER_SRC is given);
- with promtool: `check rules`, `test rules`, and `check config
  --syntax-only` on the static scrape config.  Without promtool those checks
  are reported as skipped, and the test still passes on the rest.

With HPWARMD (the built daemon) also: every --flag in the DaemonSet's args
appears in `hpwarmd --help`.  Schema-ish checks of every Kubernetes object
(apiVersion, kind, metadata.name; the DaemonSet's selector matches its pod
labels, every volumeMount names a volume, every container has an image),
the image is a real-looking reference with the project's version as tag,
TCP is served with TLS and tokens or client certificates, the seccomp
profile is not Unconfined, and hpwarmd.socket sets SocketGroup=.

Usage: check_manifests.py DEPLOY_DIR [SERVER_SRC_DIR [HPWARMD]]
"""
import glob
import os
import re
import shutil
import subprocess
import sys

ERRORS = []
HPWARMD = None
PROJECT_VERSION = None


def fail(msg):
    ERRORS.append(msg)


def load_all(path):
    import yaml
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def check_daemonset(docs):
    ds = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(ds) != 1:
        fail(f"kubernetes: expected one DaemonSet, found {len(ds)}")
        return
    spec = ds[0]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    args = c.get("args", [])
    if "--sysfs-root=/host/sys" not in args:
        fail("DaemonSet: --sysfs-root=/host/sys missing from args")
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    sysm = mounts.get("/host/sys")
    if not sysm or vols.get(sysm["name"], {}).get("hostPath", {}).get("path") != "/sys":
        fail("DaemonSet: host /sys is not mounted at /host/sys")
    hp = mounts.get("/dev/hugepages")
    if not hp or hp.get("mountPropagation") != "HostToContainer":
        fail("DaemonSet: /dev/hugepages must be a hostPath with mountPropagation HostToContainer")
    state = mounts.get("/var/lib/hpwarmd")
    if not state or "hostPath" not in vols.get(state["name"], {}):
        fail("DaemonSet: the state dir must be a hostPath (pools outlive the pod)")
    limits = c.get("resources", {}).get("limits", {})
    if not any(k.startswith("hugepages-") for k in limits):
        fail("DaemonSet: no hugepages-* limit (prefaulted pages are charged to this pod)")
    probe = c.get("livenessProbe", {}).get("httpGet", {})
    if probe.get("path") != "/v1/health":
        fail("DaemonSet: liveness probe must GET /v1/health")
    if c.get("securityContext", {}).get("privileged"):
        fail("DaemonSet: runs privileged; the README promises CAP_CHOWN and CAP_SYS_NICE only")
    check_daemonset_schema(ds[0], spec, c, args, vols)


def flag_value(args, flag):
    for a in args:
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def check_daemonset_schema(ds, spec, c, args, vols):
    sel = ds["spec"].get("selector", {}).get("matchLabels", {})
    labels = ds["spec"]["template"].get("metadata", {}).get("labels", {})
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        fail(f"DaemonSet: selector {sel} does not match the pod labels {labels}")
    for cont in spec.get("containers", []):
        if not cont.get("name") or not cont.get("image"):
            fail("DaemonSet: a container lacks name or image")
        for m in cont.get("volumeMounts", []):
            if m.get("name") not in vols:
                fail(f"DaemonSet: volumeMount {m.get('mountPath')} names no volume ({m.get('name')})")
    image = c.get("image", "")
    m = re.fullmatch(r"([a-z0-9.-]+(?::\d+)?)/([A-Za-z0-9._/-]+):([A-Za-z0-9._-]+)", image)
    if not m:
        fail(f"DaemonSet: image {image!r} is not REGISTRY/PATH:TAG")
    else:
        if m.group(1).endswith("example.com"):
            fail(f"DaemonSet: image {image!r} names a registry that does not exist; use the documented placeholder")
        if PROJECT_VERSION and m.group(3) != PROJECT_VERSION:
            fail(f"DaemonSet: image tag {m.group(3)} is not the project version {PROJECT_VERSION}")
    sc = c.get("securityContext", {})
    prof = (sc.get("seccompProfile") or spec.get("securityContext", {}).get("seccompProfile") or {}).get("type")
    if prof not in ("RuntimeDefault", "Localhost"):
        fail(f"DaemonSet: seccompProfile {prof!r}: use RuntimeDefault or a Localhost profile")
    caps = set(sc.get("capabilities", {}).get("add", []))
    if caps - {"CHOWN", "SYS_NICE"}:
        fail(f"DaemonSet: capabilities beyond CHOWN and SYS_NICE: {sorted(caps)}")
    listen = flag_value(args, "--listen")
    if listen and not listen.startswith(("127.", "[::1]", "localhost")):
        if not (flag_value(args, "--tls-cert") and flag_value(args, "--tls-key")):
            fail(f"DaemonSet: --listen={listen} without --tls-cert/--tls-key: tokens would cross the network in clear")
        if not (flag_value(args, "--token-file") or flag_value(args, "--tls-client-ca")):
            fail(f"DaemonSet: --listen={listen} requires neither tokens nor client certificates")
        for probe in ("livenessProbe", "readinessProbe"):
            if c.get(probe, {}).get("httpGet", {}).get("scheme") != "HTTPS":
                fail(f"DaemonSet: {probe} must use scheme HTTPS (the listener is TLS-only)")
    mounts = [m["mountPath"] for m in c.get("volumeMounts", [])]
    for flag in ("--tls-cert", "--tls-key", "--token-file", "--read-token-file", "--tls-client-ca"):
        path = flag_value(args, flag)
        if path and not any(path.startswith(mp.rstrip("/") + "/") for mp in mounts):
            fail(f"DaemonSet: {flag}={path} is not under a mounted volume")
    if HPWARMD:
        r = subprocess.run([HPWARMD, "--help"], capture_output=True, text=True)
        helptext = r.stdout + r.stderr
        known = set(re.findall(r"(--[a-z][a-z0-9-]*)", helptext))
        if not known:
            fail(f"{HPWARMD} --help lists no flags")
        for a in args:
            if a.startswith("--"):
                flag = a.split("=", 1)[0]
                if flag not in known:
                    fail(f"DaemonSet: {flag} is not an hpwarmd flag (not in hpwarmd --help)")


def check_objects(path, docs):
    for d in docs:
        for key in ("apiVersion", "kind"):
            if not d.get(key):
                fail(f"{path}: an object lacks {key}")
        if not d.get("metadata", {}).get("name"):
            fail(f"{path}: a {d.get('kind')} lacks metadata.name")


def check_socket_unit(deploy):
    path = os.path.join(deploy, "systemd", "hpwarmd.socket")
    with open(path, encoding="utf-8") as f:
        if not re.search(r"^SocketGroup=\S+", f.read(), re.M):
            fail(f"{path}: SocketGroup= is not set (who may use the API socket)")


def exported_metrics(server_src):
    names = set()
    for path in glob.glob(os.path.join(server_src, "**", "*.c"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        names.update(re.findall(r'"(hpwarmd_[a-z0-9_]+)"', text))
        # Histogram families are exposed as NAME_bucket, NAME_sum, NAME_count.
        for h in re.findall(r'(?:histogram_vec_new|prom_histogram)\(\s*(?:p,\s*)?"(hpwarmd_[a-z0-9_]+)"', text):
            names.update(h + s for s in ("_bucket", "_sum", "_count"))
    return names


def check_rule_metrics(rules_docs, server_src):
    exported = exported_metrics(server_src)
    if not exported:
        fail(f"no hpwarmd_* metric names found in {server_src}/*.c")
        return
    for doc in rules_docs:
        for group in doc.get("groups", []):
            for rule in group.get("rules", []):
                expr = rule.get("expr", "")
                for name in re.findall(r"\b(hpwarmd_[a-z0-9_]+)", expr):
                    if name not in exported:
                        fail(f"alert {rule.get('alert')}: metric {name} is not exported by the daemon")


def promtool(args, cwd):
    r = subprocess.run(["promtool"] + args, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"promtool {' '.join(args)}:\n{r.stdout}{r.stderr}")
    else:
        print(f"ok: promtool {' '.join(args)}")


def main(argv):
    global HPWARMD, PROJECT_VERSION
    if len(argv) not in (2, 3, 4):
        print(__doc__)
        return 2
    deploy = argv[1]
    if len(argv) == 4:
        HPWARMD = argv[3]
    try:
        with open(os.path.join(deploy, "..", "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(r"project\(hpwarm VERSION ([0-9.]+)", f.read())
            PROJECT_VERSION = m.group(1) if m else None
    except OSError:
        pass
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("FAIL: python3-yaml is not installed (apt-get install -y python3-yaml)")
        return 1

    files = sorted(glob.glob(os.path.join(deploy, "**", "*.yaml"), recursive=True))
    if not files:
        print(f"FAIL: no YAML files under {deploy}")
        return 1
    parsed = {}
    for path in files:
        try:
            parsed[path] = load_all(path)
        except Exception as e:  # yaml.YAMLError, OSError
            fail(f"{path}: does not parse: {e}")
    print(f"ok: {len(parsed)}/{len(files)} YAML files parse")

    ds_path = os.path.join(deploy, "kubernetes", "hpwarmd-daemonset.yaml")
    if ds_path in parsed:
        check_objects(ds_path, parsed[ds_path])
        check_daemonset(parsed[ds_path])
    else:
        fail(f"{ds_path}: missing")

    check_socket_unit(deploy)

    prom = os.path.join(deploy, "prometheus")
    rules = os.path.join(prom, "alerts.yaml")
    if len(argv) >= 3 and rules in parsed:
        check_rule_metrics(parsed[rules], argv[2])

    if shutil.which("promtool"):
        promtool(["check", "rules", "alerts.yaml"], prom)
        promtool(["test", "rules", "alerts_test.yaml"], prom)
        promtool(["check", "config", "--syntax-only", "scrape.yaml"], prom)
    else:
        print("skipped: promtool not installed (apt-get install prometheus): rules not checked by promtool")

    for e in ERRORS:
        print("FAIL:", e)
    return 1 if ERRORS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
