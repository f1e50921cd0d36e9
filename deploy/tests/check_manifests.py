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

Usage: check_manifests.py DEPLOY_DIR [SERVER_SRC_DIR]
"""
import glob
import os
import re
import shutil
import subprocess
import sys

ERRORS = []


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
        fail("DaemonSet: runs privileged; the README promises CAP_CHOWN only")


def exported_metrics(server_src):
    names = set()
    for path in glob.glob(os.path.join(server_src, "*.c")):
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
    if len(argv) not in (2, 3):
        print(__doc__)
        return 2
    deploy = argv[1]
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
        check_daemonset(parsed[ds_path])
    else:
        fail(f"{ds_path}: missing")

    prom = os.path.join(deploy, "prometheus")
    rules = os.path.join(prom, "alerts.yaml")
    if len(argv) == 3 and rules in parsed:
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
