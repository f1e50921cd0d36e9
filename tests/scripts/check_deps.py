#!/usr/bin/env python3
"""scripts.deps: the dependency sets stay what the docs and the scripts promise.

- scripts/deps.sh --list test is a superset of --list run; no package twice;
- run-daemon.sh installs only the run set, test.sh the test set;
- deps.sh never upgrades (no `apt-get upgrade`/`dist-upgrade`) and installs
  without recommends;
- every command the ```sh blocks of README.md and docs/*.md run is built
  here or comes with a package of the set the block needs (the run set for
  everything but the bench/test commands): a tool added to a document
  without its package fails.  The VMM (QEMU, virsh) is the operator's own:
  the document that runs it must name its package (so is the cloud's
  `openstack` client).

Usage: check_deps.py SOURCE_DIR"""
import glob
import os
import re
import subprocess
import sys

# Command -> Debian package providing it.  Project programs map to None.
PROVIDERS = {
    "hpwarm": None, "hpwarmd": None, "./scripts/run-daemon.sh": None, "./scripts/test.sh": None,
    "deploy/container/build-image.sh": None, "tests/real/guard.sh": None,
    "curl": "curl", "jq": "jq", "cmake": "cmake", "cpack": "cmake", "ctest": "cmake", "python3": "python3",
    "umount": "mount", "mount": "mount", "qemu-system-x86_64": "qemu-system-x86",
    "apt-get": "apt", "install": "coreutils", "systemctl": "systemd",
    "cc": "build-essential", "pkg-config": "pkg-config",
}
# Present on every host the documents' commands are for: Essential: yes in Debian
# (mount, coreutils), apt (priority required), and systemd, which the
# libvirt section's `systemctl restart libvirtd` assumes as libvirtd's init.
ESSENTIAL = {"mount", "coreutils", "apt", "systemd"}
SHELL_WORDS = {"...", "#", "cd", "export", "echo", "mapfile", "exec", "eval"}
# The VMM is the operator's own: a document may run it if it says which package
# gives it (the test set installs it for the QEMU tests).
VMM = {"qemu-system-x86_64": "qemu-system-x86", "virsh": "libvirt-clients", "openstack": "python3-openstackclient"}
TEST_ONLY = ("tests/",)  # commands running test tooling need the test set


def check_installs_only_missing(src):
    """Run deps.sh --run against stand-ins for dpkg-query, apt-get,
    apt-cache and id: every package is installed but jq and cmake, and an
    install of those would upgrade libfoo.  deps.sh must install exactly the
    two (no reinstall, no upgrade command, no recommends) and ask for libfoo
    at its installed version."""
    import tempfile
    errs = []
    with tempfile.TemporaryDirectory(prefix="hpwarm-deps-") as d:
        log = os.path.join(d, "apt.log")
        stubs = {
            "dpkg-query": """#!/bin/sh
# dpkg-query -W -f=FMT PKG
for a; do p=$a; done
case $p in jq|cmake) exit 1 ;; esac
case $2 in *Version*) echo 1.0-1 ;; *) echo "install ok installed" ;; esac
""",
            "apt-get": """#!/bin/sh
echo "apt-get $*" >> "%s"
case " $* " in
*" -s "*libfoo=*) exit 0 ;;
*" -s "*) echo "Inst libfoo [1.0-1] (1.0-2 Debian:12/stable [amd64])"; echo "Inst jq (1.6 Debian)" ;;
esac
exit 0
""" % log,
            "apt-cache": "#!/bin/sh\nexit 0\n",
            "id": "#!/bin/sh\necho 0\n",
        }
        for name, body in stubs.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(body)
            os.chmod(path, 0o755)
        env = dict(os.environ, PATH=d + ":" + os.environ.get("PATH", ""))
        r = subprocess.run(["bash", os.path.join(src, "scripts/deps.sh"), "--run"], env=env, capture_output=True,
                           text=True)
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        real = [c for c in calls if " install " in c and " -s " not in c]
        if r.returncode != 0:
            errs.append("deps.sh --run with stand-ins failed: %r" % r.stderr)
        if any(re.search(r"\b(dist-)?upgrade\b", c) for c in calls):
            errs.append("deps.sh ran an upgrade: %r" % calls)
        if len(real) != 1:
            errs.append("deps.sh should run one real install, ran: %r" % real)
        else:
            words = real[0].split()
            pk = [w for w in words if not w.startswith("-") and w not in ("apt-get", "install")
                  and "Lock" not in w]
            if sorted(pk) != ["cmake", "jq", "libfoo=1.0-1"]:
                errs.append("deps.sh installed %r, not exactly the missing cmake, jq (and libfoo kept at "
                            "its installed version)" % pk)
            if "--no-install-recommends" not in words:
                errs.append("deps.sh installs with recommends: %r" % real[0])
    return errs


def check_commands(doc, text, run, test):
    """Every command DOC's ```sh blocks run comes with a package of the set it needs."""
    errors = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            line = re.sub(r"'[^']*'", "ARG", line)  # a | or ; inside quotes separates nothing
            for cmd in re.split(r"\s*(?:\||&&|;)\s*", line):
                # var=$(cmd ...) runs cmd; eval "exec cmd ..." runs cmd.
                cmd = re.sub(r"^[A-Za-z_][A-Za-z0-9_]*=\$\(", "", cmd).replace('"', " ")
                words = cmd.split()
                while words and (words[0] in ("sudo", "eval", "exec") or re.match(r"^[A-Z_]+=", words[0])
                                 or words[0] == "<" or words[0].startswith("<(")):
                    words = words[1:]
                if not words or words[0] in SHELL_WORDS:
                    continue
                w = words[0]
                if w in VMM:
                    if not re.search(r"install[^`]*\b%s(?![\w-])" % re.escape(VMM[w]), text):
                        errors.append("%s runs %s but does not say to install %s" % (doc, w, VMM[w]))
                    continue
                if w not in PROVIDERS:
                    errors.append("%s runs %r, which no package of deps.sh is known to provide "
                                  "(add its package to deps.sh and to PROVIDERS here)" % (doc, w))
                    continue
                pkg = PROVIDERS[w]
                need = test if any(a.startswith(TEST_ONLY) for a in words[1:]) else run
                if pkg and pkg not in need and pkg not in ESSENTIAL:
                    errors.append("%s runs %s, but package %s is not in the %s set" %
                                  (doc, w, pkg, "test" if need is test else "run"))
    return errors


def main(src):
    errors = []

    def pkgs(which):
        out = subprocess.run([os.path.join(src, "scripts/deps.sh"), "--list", which], capture_output=True,
                             text=True, check=True).stdout.split()
        if len(out) != len(set(out)):
            errors.append("deps.sh --list %s names a package twice: %s" % (which, out))
        return set(out)

    run, test = pkgs("run"), pkgs("test")
    if not run <= test:
        errors.append("the test set lacks run packages: %s" % sorted(run - test))

    def text(rel):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            return f.read()

    if not re.search(r"^\./scripts/deps\.sh --run$", text("scripts/run-daemon.sh"), re.M):
        errors.append("run-daemon.sh does not install exactly the run set (./scripts/deps.sh --run)")
    if not re.search(r"^\./scripts/deps\.sh --test$", text("scripts/test.sh"), re.M):
        errors.append("test.sh does not install the test set (./scripts/deps.sh --test)")
    deps = text("scripts/deps.sh")
    code = "\n".join(l for l in deps.splitlines() if not l.lstrip().startswith("#"))
    if re.search(r"\b(dist-)?upgrade\b", code):
        errors.append("deps.sh runs an upgrade")
    for m in re.finditer(r"apt_get (-s )?install[^\n]*", code):
        if "--no-install-recommends" not in m.group(0):
            errors.append("apt install without --no-install-recommends: " + m.group(0))

    errors.extend(check_installs_only_missing(src))

    docs = ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    for doc in docs:
        errors.extend(check_commands(doc, text(doc), run, test))
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("ok: run set %d packages, test set %d" % (len(run), len(test)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
