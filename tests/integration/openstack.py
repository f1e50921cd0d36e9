"""OpenStack's Placement (and Keystone) as Debian ships them, started by a
test as plain processes: sqlite databases in a temporary directory, the
WSGI applications served by wsgi_serve.py on 127.0.0.1 with a port the
kernel picks (read back from its first line), stopped by their pid on
every way out.  No systemd, no apache.

Placement runs with auth_strategy = noauth2 (any token; "admin" has the
admin role) or, given a Keystone, auth_strategy = keystone through
keystonemiddleware, validating tokens against that Keystone.

The packages (scripts/deps.sh --test): python3-placement,
python3-keystone, python3-keystonemiddleware.  They are Debian's Python
modules, so the services run under /usr/bin/python3 whatever python3 the
test itself runs under."""
import ctypes
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
SERVE = os.path.join(HERE, "wsgi_serve.py")
# Placement's microversion the tests speak: parents (1.14), POST answers
# the provider (1.20), reserved == total (1.26), allocations with project
# and user (1.8+) and consumer generations (1.28).
MICROVERSION = "placement 1.36"


def available():
    """Why Placement cannot run here, or None."""
    for f in ("/usr/bin/placement-manage", "/usr/bin/keystone-manage", PY):
        if not os.path.exists(f):
            return "%s is missing (scripts/deps.sh --test installs python3-placement, python3-keystone)" % f
    r = subprocess.run([PY, "-c", "import placement.wsgi, keystone.server.wsgi, keystonemiddleware"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return "Debian's placement/keystone modules do not import: " + r.stderr.strip()[-300:]
    return None


def _die_with_parent():
    """In the child before exec: SIGTERM when the test process dies, so a
    test killed by ctest's timeout (SIGKILL, no clean-up) leaves no
    service behind."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


class Process:
    """One service process in its own session, its output in TMP/NAME.log;
    a context manager.  ARGV is run with ENV; start() waits until READY()
    says the service answers (or it exits, or TIMEOUT passes)."""

    def __init__(self, tmp, name, argv, env):
        self.tmp, self.name, self.argv, self.env = tmp, name, argv, env
        self.proc = None
        self.log = os.path.join(tmp, name + ".log")

    def start(self, ready, timeout=90):
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(self.argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                                         env=self.env, start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if ready():
                return self
            time.sleep(0.1)
        why = "exit %s" % self.proc.returncode if self.proc.poll() is not None else "not ready in %d s" % timeout
        self.stop()
        raise RuntimeError("%s did not start (%s)\n%s" % (self.name, why, self.tail()))

    def tail(self, n=3000):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        """SIGTERM to the whole session (a service's children too), SIGKILL
        after 10 s."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)   # what outlived its leader
            except ProcessLookupError:
                pass
            if self.proc.poll() is None:
                self.proc.wait(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Service(Process):
    """One WSGI application served by wsgi_serve.py; its port is read back
    from the file the server writes once it listens."""

    def __init__(self, tmp, which, env):
        super().__init__(tmp, which, [PY, SERVE, which, os.path.join(tmp, which + ".port")], env)
        self.port_file = self.argv[-1]
        self.port = None

    def start(self, timeout=90):
        super().start(lambda: os.path.exists(self.port_file), timeout)
        with open(self.port_file) as f:
            self.port = int(f.read())
        return self

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port


def wal(db):
    """Put sqlite database DB in WAL mode (it stays so): a read left open
    by one request of a service then never makes another's write fail
    with "database is locked"."""
    c = sqlite3.connect(db)
    try:
        c.execute("PRAGMA journal_mode=WAL")
    finally:
        c.close()


def http(method, url, body=None, headers=None, timeout=30):
    """(status, parsed JSON or None, headers)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None), dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw.decode(errors="replace")
        return e.code, doc, dict(e.headers)


class Keystone:
    """Keystone 22 on sqlite with fernet tokens, bootstrapped with user
    admin (password ADMIN_PASSWORD) holding the admin role on project
    admin, and a catalog entry for Placement added by add_placement()."""
    ADMIN_PASSWORD = "hpwarm-test-admin"

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "keystone")
        os.makedirs(os.path.join(self.dir, "fernet-keys"))
        os.makedirs(os.path.join(self.dir, "credential-keys"))
        self.conf = os.path.join(self.dir, "keystone.conf")
        with open(self.conf, "w") as f:
            f.write("[DEFAULT]\n"
                    "[database]\nconnection = sqlite:///%s/keystone.db\n"
                    "[fernet_tokens]\nkey_repository = %s/fernet-keys\n"
                    "[credential]\nkey_repository = %s/credential-keys\n"
                    "[token]\nprovider = fernet\n"
                    # Fewer bcrypt rounds than the default 12: the test
                    # authenticates a few times, each a round of hashing.
                    "[identity]\npassword_hash_rounds = 4\n" % (self.dir, self.dir, self.dir))
        env = dict(os.environ, OS_KEYSTONE_CONFIG_DIR=self.dir)
        self.svc = Service(self.dir, "keystone-public", env)

    def start(self):
        # db_sync, fernet_setup, credential_setup and bootstrap in one
        # process (keystone_setup.py).  The identity endpoint it puts in the
        # catalog is a placeholder (the port is not known yet), set right
        # once Keystone listens: keystonemiddleware finds Keystone there.
        r = subprocess.run([PY, os.path.join(HERE, "keystone_setup.py"), self.conf, "-", "http://127.0.0.1:5000/v3"],
                           input=self.ADMIN_PASSWORD + "\n", capture_output=True, text=True, timeout=240)
        if r.returncode != 0:
            raise RuntimeError("keystone_setup.py: " + r.stderr[-3000:])
        wal(os.path.join(self.dir, "keystone.db"))
        self.svc.start()
        t = {"X-Auth-Token": self.token()}
        st, doc, _ = http("GET", self.url + "/v3/endpoints", headers=t)
        assert st == 200, (st, doc, self.svc.tail())
        for ep in doc["endpoints"]:
            st, doc2, _ = http("PATCH", self.url + "/v3/endpoints/" + ep["id"],
                               {"endpoint": {"url": self.url + "/v3"}}, headers=t)
            assert st == 200, (st, doc2, self.svc.tail())
        return self

    @property
    def url(self):
        return self.svc.url

    def token(self, user="admin", password=None, project="admin"):
        st, doc, hdrs = http("POST", self.url + "/v3/auth/tokens", {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"name": "Default"}, "password": password or self.ADMIN_PASSWORD}}},
            "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}})
        if st != 201:
            raise RuntimeError("keystone token: %d %s" % (st, doc))
        return hdrs.get("X-Subject-Token") or hdrs.get("x-subject-token")

    def add_placement(self, placement_url):
        t = {"X-Auth-Token": self.token()}
        st, doc, _ = http("POST", self.url + "/v3/services", {"service": {"type": "placement", "name": "placement"}},
                          headers=t)
        assert st == 201, (st, doc, self.svc.tail())
        st, doc, _ = http("POST", self.url + "/v3/endpoints", {"endpoint": {
            "service_id": doc["service"]["id"], "interface": "public", "region_id": "RegionOne",
            "url": placement_url}}, headers=t)
        assert st == 201, (st, doc, self.svc.tail())

    def os_env(self):
        """The OS_* variables of the admin user, as an openrc sets them."""
        return {"OS_AUTH_URL": self.url + "/v3", "OS_USERNAME": "admin", "OS_PASSWORD": self.ADMIN_PASSWORD,
                "OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default",
                "OS_PROJECT_DOMAIN_NAME": "Default"}

    def stop(self):
        self.svc.stop()


class Placement:
    """Placement 8.0 on sqlite.  KEYSTONE None: noauth2 (the token
    "admin"), else keystonemiddleware against that Keystone."""

    def __init__(self, tmp, keystone=None):
        self.dir = os.path.join(tmp, "placement")
        os.makedirs(self.dir)
        self.keystone = keystone
        conf = ["[DEFAULT]", "[placement_database]",
                "connection = sqlite:///%s/placement.db" % self.dir, "[api]"]
        if keystone:
            conf += ["auth_strategy = keystone", "[keystone_authtoken]",
                     "www_authenticate_uri = %s/v3" % keystone.url, "auth_url = %s/v3" % keystone.url,
                     "auth_type = password", "username = admin", "password = %s" % keystone.ADMIN_PASSWORD,
                     "project_name = admin", "user_domain_name = Default", "project_domain_name = Default",
                     # No memcached here: tokens are validated each time.
                     "service_token_roles_required = true", "interface = public",
                     "memcached_servers =", "token_cache_time = -1"]
        else:
            conf += ["auth_strategy = noauth2"]
        with open(os.path.join(self.dir, "placement.conf"), "w") as f:
            f.write("\n".join(conf) + "\n")
        self.env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.dir)
        self.svc = Service(self.dir, "placement", self.env)
        self.token = "admin"

    def start(self):
        r = subprocess.run([PY, "/usr/bin/placement-manage", "--config-file",
                            os.path.join(self.dir, "placement.conf"), "db", "sync"],
                           capture_output=True, text=True, timeout=180, env=self.env)
        if r.returncode != 0:
            raise RuntimeError("placement-manage db sync: " + r.stderr[-2000:])
        wal(os.path.join(self.dir, "placement.db"))
        self.svc.start()
        return self

    @property
    def url(self):
        return self.svc.url

    def req(self, method, path, body=None, version=MICROVERSION, token=None):
        return http(method, self.url + path, body,
                    {"X-Auth-Token": token or self.token, "OpenStack-API-Version": version})

    def ok(self, method, path, body=None, **kw):
        st, doc, _ = self.req(method, path, body, **kw)
        if st >= 300:
            raise AssertionError("%s %s: %d %s%s" % (method, path, st, doc,
                                                     "\n" + self.svc.tail() if st >= 500 else ""))
        return doc

    # What nova-compute does at start: its compute node's provider.
    def compute_node(self, name):
        return self.ok("POST", "/resource_providers", {"name": name})["uuid"]

    def provider(self, name):
        rps = self.ok("GET", "/resource_providers?name=" + name)["resource_providers"]
        return rps[0] if rps else None

    def inventories(self, uuid):
        return self.ok("GET", "/resource_providers/%s/inventories" % uuid)

    def candidates(self, resources):
        """Providers (by name) that GET /allocation_candidates offers for
        RESOURCES (e.g. "CUSTOM_HPWARM_2M:4")."""
        doc = self.ok("GET", "/allocation_candidates?resources=" + resources)
        names = {}
        for uuid, s in doc["provider_summaries"].items():
            names[uuid] = self.ok("GET", "/resource_providers/" + uuid)["name"]
        out = set()
        for a in doc["allocation_requests"]:
            for uuid in a["allocations"]:
                out.add(names[uuid])
        return out, doc

    def allocate(self, consumer, rp_uuid, rc, n):
        """PUT /allocations/CONSUMER as Nova's scheduler does: 204 or the error."""
        return self.req("PUT", "/allocations/" + consumer, {
            "allocations": {rp_uuid: {"resources": {rc: n}}},
            "project_id": "00000000-0000-0000-0000-0000000000aa",
            "user_id": "00000000-0000-0000-0000-0000000000bb",
            "consumer_generation": None})

    def stop(self):
        self.svc.stop()


class Stack:
    """Placement (noauth2) or Keystone + Placement, in one temp dir,
    stopped and removed however the test ends."""

    def __init__(self, keystone=False, prefix="hpwarm-placement-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.ks = None
        self.pl = None
        self.with_keystone = keystone

    def __enter__(self):
        try:
            if self.with_keystone:
                self.ks = Keystone(self.tmp).start()
            self.pl = Placement(self.tmp, self.ks).start()
            if self.ks:
                self.ks.add_placement(self.pl.url)
                self.pl.token = self.ks.token()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for s in (self.pl, self.ks):
            if s:
                s.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
