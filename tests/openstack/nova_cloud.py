"""A real OpenStack compute cloud on this machine, for the openstack tests
and the Nova bench: Debian 12's RabbitMQ, Placement 8.0, Glance 25 (file
store), Nova 26 (api, conductor, scheduler) and two nova-compute services,
each with a private libvirtd that runs deploy/libvirt/hpwarm-libvirt-hook,
its own hpwarmd and its own `hpwarm placement sync --watch`.

Everything runs as plain processes (no systemd, no apache), each in a
session of its own with PR_SET_PDEATHSIG, stopped by pid (its session) on
every way out; databases are sqlite files and the message queue's state a
directory, all in one temporary directory that is removed at the end.

What is not the real component, and why (docs/OPENSTACK.md §4 says which of
these a cloud with Keystone and Neutron does not need):
- Neutron: NeutronStub answers every GET of /v2.0/* with an empty list.
  Servers are created with "networks": "none", yet Nova still lists the
  ports of a server for every GET /servers/{id} and on delete; a real
  Neutron needs Keystone, a database and an agent for nothing this test
  asks of it.
- Keystone: Nova's API runs with auth_strategy = noauth2, Placement and
  Glance without authentication.  noauth2 leaves the request context
  without a token, and Nova passes the context's token on to Glance and
  Neutron, so the API's pipeline carries token_filter.py, which copies
  X-Auth-Token into the context.
- Each nova-compute's libvirtd runs in its own mount and UTS namespace
  (tests/libvirt/test_libvirt.py's Env), with the hostname of its compute
  host: Nova names a compute node's resource provider after libvirt's
  hostname, and two on one machine must differ.
Nova's privileged helper runs as `privsep-helper` directly (the tests are
root; no rootwrap is installed).

The hosts share this machine's kernel and so its hugepages: both
nova-computes see the same node 0 totals, and the test gives each host its
own pool directory and stock."""
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "libvirt"))
import openstack  # noqa: E402
import test_libvirt as tl  # noqa: E402

PY = openstack.PY
# Nova's compute API microversion the tests speak: "networks": "none"
# (2.37), the server's host and instance name to an admin (always).
COMPUTE_VERSION = "2.74"
TOKEN = "admin:admin"          # noauth2: user admin, project admin
RABBIT_BIN = "/usr/lib/rabbitmq/bin/rabbitmq-server"
PACKAGES = "python3-nova python3-glance python3-libvirt rabbitmq-server"


def available():
    """Why this cloud cannot run here, or None."""
    why = openstack.available()
    if why:
        return why
    for f in (RABBIT_BIN, "/usr/bin/epmd", "/usr/bin/privsep-helper", "/usr/bin/qemu-img", "/usr/bin/virsh"):
        if not os.path.exists(f):
            return "%s is missing (scripts/deps.sh --test installs %s)" % (f, PACKAGES)
    # One process each: Nova and Glance both set up oslo.config's global
    # configuration when imported.
    for mod in ("nova.cmd.compute", "glance.common.wsgi_app", "libvirt"):
        r = subprocess.run([PY, "-c", "import " + mod], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return "Debian's %s does not import: %s" % (mod, r.stderr.strip()[-300:])
    return None


def nova_version():
    """The installed Nova's version, as its package says."""
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "python3-nova"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now (RabbitMQ takes its
    ports from its settings, not from the kernel)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def ini(sections):
    """An oslo.config / paste file from {section: {key: value}}."""
    out = []
    for sec, kv in sections.items():
        out.append("[%s]" % sec)
        out += ["%s = %s" % (k, v) for k, v in kv.items()]
        out.append("")
    return "\n".join(out)


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class Rabbit:
    """rabbitmq-server with its own epmd, node name, ports and directories."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "rabbitmq")
        os.makedirs(self.dir)
        self.port = free_port()
        epmd_port = free_port()
        env = dict(os.environ, HOME=self.dir, RABBITMQ_NODENAME="hpwarm-test@localhost",
                   RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(self.port),
                   RABBITMQ_DIST_PORT=str(free_port()), ERL_EPMD_PORT=str(epmd_port),
                   RABBITMQ_MNESIA_BASE=self.dir + "/mnesia", RABBITMQ_LOG_BASE=self.dir + "/log",
                   RABBITMQ_LOGS="-", RABBITMQ_PID_FILE=self.dir + "/pid",
                   RABBITMQ_ENABLED_PLUGINS_FILE=self.dir + "/enabled_plugins",
                   RABBITMQ_CONFIG_FILE=self.dir + "/rabbitmq", RABBITMQ_CONF_ENV_FILE=self.dir + "/env.conf",
                   RABBITMQ_ADVANCED_CONFIG_FILE=self.dir + "/advanced.config")
        write(self.dir + "/enabled_plugins", "[].\n")
        write(self.dir + "/env.conf", "")
        # The Erlang port mapper, ours, in the foreground: the one Erlang
        # would start for itself is a daemon no pid of ours names.
        self.epmd = openstack.Process(self.dir, "epmd", ["/usr/bin/epmd", "-port", str(epmd_port),
                                                         "-address", "127.0.0.1"], env)
        self.epmd_port = epmd_port
        self.server = openstack.Process(self.dir, "rabbitmq", [RABBIT_BIN], env)

    def start(self):
        self.epmd.start(lambda: listens(self.epmd_port), 20)
        self.server.start(lambda: listens(self.port), 120)
        return self

    @property
    def url(self):
        return "rabbit://guest:guest@127.0.0.1:%d/" % self.port

    def stop(self):
        self.server.stop()
        self.epmd.stop()


class NeutronStub:
    """GET /v2.0/<anything> answers {"<last path part>": []}; the rest 404.
    In a thread of the test process."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urllib.parse.urlparse(self.path).path.rstrip("/")
            parts = path.split("/")
            if len(parts) >= 3 and parts[1] == "v2.0":
                self.server.calls.append(path)
                what = parts[-1].replace(".json", "")
                body = json.dumps({what.replace("-", "_"): []}).encode()
                self.send_response(200)
            else:
                body = b'{"NeutronError": {"type": "HTTPNotFound", "message": "not here", "detail": ""}}'
                self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def __init__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.Handler)
        self.httpd.daemon_threads = True
        self.httpd.calls = []
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Glance:
    """glance-api (WSGI) with a file store, sqlite and no authentication."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "glance")
        os.makedirs(os.path.join(self.dir, "images"))
        os.makedirs(os.path.join(self.dir, "staging"))
        self.conf = os.path.join(self.dir, "glance-api.conf")
        write(self.conf, ini({
            "DEFAULT": {"enabled_backends": "files:file", "bind_host": "127.0.0.1",
                        "worker_self_reference_url": "http://127.0.0.1:9292"},
            "database": {"connection": "sqlite:///%s/glance.db" % self.dir},
            "glance_store": {"default_backend": "files"},
            "files": {"filesystem_store_datadir": self.dir + "/images"},
            "os_glance_staging_store": {"filesystem_store_datadir": self.dir + "/staging"},
            "os_glance_tasks_store": {"filesystem_store_datadir": self.dir + "/staging"},
            "paste_deploy": {"flavor": ""},
            "oslo_policy": {"enforce_new_defaults": "false", "enforce_scope": "false"},
        }))
        # No authentication: every request is an admin context.
        write(os.path.join(self.dir, "glance-api-paste.ini"), ini({
            "pipeline:glance-api": {"pipeline": "unauthenticated-context rootapp"},
            "composite:rootapp": {"paste.composite_factory": "glance.api:root_app_factory",
                                  "/": "apiversions", "/v2": "apiv2app"},
            "app:apiversions": {"paste.app_factory": "glance.api.versions:create_resource"},
            "app:apiv2app": {"paste.app_factory": "glance.api.v2.router:API.factory"},
            "filter:unauthenticated-context": {
                "paste.filter_factory": "glance.api.middleware.context:UnauthenticatedContextMiddleware.factory"},
        }))
        self.env = dict(os.environ, OS_GLANCE_CONFIG_DIR=self.dir)
        self.svc = openstack.Service(self.dir, "glance-api", self.env)

    def start(self):
        r = subprocess.run([PY, "-c", "import sys; from glance.cmd.manage import main; sys.exit(main())",
                            "--config-file", self.conf, "db_sync"], capture_output=True, text=True,
                           timeout=300, env=self.env)
        if r.returncode != 0:
            raise RuntimeError("glance-manage db_sync: " + (r.stdout + r.stderr)[-2000:])
        openstack.wal(os.path.join(self.dir, "glance.db"))
        self.svc.start()
        return self

    @property
    def url(self):
        return self.svc.url

    def upload(self, name, path, **props):
        """An image of the file at PATH (raw, bare), its id."""
        body = dict(name=name, disk_format="raw", container_format="bare", **props)
        st, doc, _ = openstack.http("POST", self.url + "/v2/images", body)
        if st != 201:
            raise RuntimeError("glance create image: %d %s\n%s" % (st, doc, self.svc.tail()))
        with open(path, "rb") as f:
            data = f.read()
        req = openstack.urllib.request.Request(self.url + "/v2/images/%s/file" % doc["id"], data=data, method="PUT")
        req.add_header("Content-Type", "application/octet-stream")
        with openstack.urllib.request.urlopen(req, timeout=120) as r:
            if r.status != 204:
                raise RuntimeError("glance upload: %d" % r.status)
        return doc["id"]

    def stop(self):
        self.svc.stop()


class Controller:
    """Nova's api (WSGI), conductor and scheduler on one nova.conf."""

    def __init__(self, tmp, rabbit, placement, glance, neutron):
        self.tmp = tmp
        self.dir = os.path.join(tmp, "nova")
        os.makedirs(os.path.join(self.dir, "locks"))
        self.conf = os.path.join(self.dir, "nova.conf")
        self.settings = {
            "DEFAULT": {"transport_url": rabbit.url, "state_path": self.dir, "my_ip": "127.0.0.1",
                        "compute_driver": "libvirt.LibvirtDriver", "debug": "false",
                        # Fewer writes to the sqlite files: oslo.db begins
                        # each transaction before its reads, and sqlite
                        # refuses at once ("database is locked", whatever
                        # the wait) a write after another writer's commit,
                        # so every periodic write risks failing someone's
                        # request.  Heartbeats every 30 s (up for 180 s),
                        # no network info cache healing (there is no
                        # network).
                        "report_interval": "30", "service_down_time": "180",
                        "heal_instance_info_cache_interval": "-1"},
            "api": {"auth_strategy": "noauth2"},
            "conductor": {"workers": "1"},
            # Hosts are mapped by the fixture (discover_hosts) once their
            # nova-compute registered, not by a periodic task.
            "scheduler": {"workers": "1", "discover_hosts_in_cells_interval": "-1"},
            # A hugepage flavor needs NUMATopologyFilter, as any cloud that
            # offers hw:mem_page_size enables it.
            "filter_scheduler": {"enabled_filters": "ComputeFilter,ComputeCapabilitiesFilter,"
                                                    "ImagePropertiesFilter,NUMATopologyFilter"},
            # Placement, Glance and the Neutron stand-in without Keystone:
            # a fixed token and endpoint (keystoneauth's admin_token plugin).
            "placement": {"auth_type": "admin_token", "endpoint": placement.url, "token": "admin"},
            "glance": {"endpoint_override": glance.url, "num_retries": "0"},
            "neutron": {"auth_type": "admin_token", "endpoint": neutron.url, "token": "admin",
                        "endpoint_override": neutron.url},
            "oslo_concurrency": {"lock_path": self.dir + "/locks"},
            "oslo_messaging_rabbit": {"heartbeat_timeout_threshold": "0"},
            "oslo_policy": {"enforce_new_defaults": "false", "enforce_scope": "false"},
            "vnc": {"enabled": "false"},
            "spice": {"enabled": "false"},
            "serial_console": {"enabled": "false"},
            "libvirt": {"virt_type": "qemu"},
            # Root runs the privileged helper itself: no sudo, no rootwrap.
            "nova_sys_admin": {"helper_command": "privsep-helper --config-file %s" % self.conf},
        }
        write(self.conf, ini(self.settings))
        # The databases, for the control plane only: nova-compute reaches
        # them through the conductor and refuses direct access.
        self.db_conf = os.path.join(self.dir, "nova-db.conf")
        write(self.db_conf, ini({
            "api_database": {"connection": self.db_url("nova_api")},
            "database": {"connection": self.db_url("nova_cell1")}}))
        # The compute API's paste pipeline: noauth2, then token_filter.py.
        write(os.path.join(self.dir, "api-paste.ini"), ini({
            "composite:osapi_compute": {"use": "call:nova.api.openstack.urlmap:urlmap_factory",
                                        "/v2.1": "openstack_compute_api_v21"},
            "composite:openstack_compute_api_v21": {"use": "call:nova.api.auth:pipeline_factory_v21",
                                                    "noauth2": "compute_req_id faultwrap noauth2 hpwtoken "
                                                               "osapi_compute_app_v21"},
            "filter:compute_req_id": {"paste.filter_factory": "nova.api.compute_req_id:ComputeReqIdMiddleware.factory"},
            "filter:faultwrap": {"paste.filter_factory": "nova.api.openstack:FaultWrapper.factory"},
            "filter:noauth2": {"paste.filter_factory": "nova.api.openstack.auth:NoAuthMiddleware.factory"},
            "filter:hpwtoken": {"paste.filter_factory": "token_filter:factory"},
            "app:osapi_compute_app_v21": {"paste.app_factory": "nova.api.openstack.compute:APIRouterV21.factory"},
        }))
        self.env = dict(os.environ, OS_NOVA_CONFIG_DIR=self.dir,
                        OS_NOVA_CONFIG_FILES="api-paste.ini;nova.conf;nova-db.conf",
                        PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.api = openstack.Service(self.dir, "nova-api", self.env)
        self.procs = [self.api]

    def db_url(self, name):
        """sqlite database NAME.  Several Nova processes write each one;
        a writer waits up to 60 s for another's lock (pysqlite's default,
        5 s, is not enough on a loaded 2-core machine: DELETE /servers
        answered 500 "database is locked")."""
        return "sqlite:///%s/%s.db?timeout=60" % (self.dir, name)

    def manage(self, *args, timeout=300):
        r = subprocess.run([PY, "-c", "import sys; from nova.cmd.manage import main; sys.exit(main())",
                            "--config-file", self.conf, "--config-file", self.db_conf] + list(args),
                           capture_output=True, text=True, timeout=timeout, env=self.env)
        if r.returncode != 0:
            raise RuntimeError("nova-manage %s: %s" % (" ".join(args), (r.stdout + r.stderr)[-2000:]))
        return r.stdout

    def service(self, binary, conf_files, name):
        """A nova-BINARY process (conductor, scheduler, compute)."""
        argv = [PY, "-c", "import sys; from nova.cmd.%s import main; sys.exit(main())" % binary]
        for c in conf_files:
            argv += ["--config-file", c]
        p = openstack.Process(self.dir, name, argv, self.env)
        self.procs.append(p)
        return p

    def start(self):
        self.manage("api_db", "sync")
        self.manage("cell_v2", "map_cell0", "--database_connection", self.db_url("nova_cell0"))
        self.manage("cell_v2", "create_cell", "--name", "cell1")
        self.manage("db", "sync")
        for db in ("nova_api", "nova_cell0", "nova_cell1"):
            openstack.wal(os.path.join(self.dir, db + ".db"))
        self.api.start(timeout=180)
        for binary in ("conductor", "scheduler"):
            p = self.service(binary, [self.conf, self.db_conf], "nova-" + binary)
            # Up once it reports itself: its service row in the cell.
            p.start(lambda b=binary: self.service_up("nova-" + b), 180)
        return self

    def service_up(self, binary, host=None):
        st, doc, _ = self.req("GET", "/os-services?binary=" + binary + ("&host=" + host if host else ""))
        return st == 200 and any(s["state"] == "up" for s in doc["services"])

    @property
    def url(self):
        return self.api.url + "/v2.1"

    def req(self, method, path, body=None, version=COMPUTE_VERSION, timeout=60):
        return openstack.http(method, self.url + path, body, {
            "X-Auth-Token": TOKEN, "OpenStack-API-Version": "compute " + version}, timeout=timeout)

    def ok(self, method, path, body=None, **kw):
        st, doc, _ = self.req(method, path, body, **kw)
        if st >= 300:
            raise AssertionError("nova %s %s: %d %s" % (method, path, st, doc))
        return doc

    def stop(self):
        for p in reversed(self.procs):
            p.stop()


class Host:
    """One compute host: a private libvirtd with the hook (policy
    `hugepages`), its hpwarmd (--fixed-hugepages), nova-compute named
    NAME, and `hpwarm placement sync --watch` for it."""

    def __init__(self, cloud, name):
        self.cloud = cloud
        self.name = name
        self.env = tl.Env(name, pool_dir=os.path.join(tl.MNT, "hpwarm-" + name), hostname=name)
        self.dir = os.path.join(cloud.tmp, name)
        os.makedirs(os.path.join(self.dir, "instances"))
        os.chmod(self.dir, 0o755)
        self.conf = os.path.join(self.dir, "nova-compute.conf")
        self.nova_lines = ""
        self.compute = None
        self.sync = None

    def write_conf(self):
        compute = {
            "DEFAULT": {"host": self.name, "instances_path": self.dir + "/instances",
                        # oslo.log's quiet defaults, and the resource
                        # tracker's debug lines: start_compute waits for
                        # its "Final resource view".
                        "default_log_levels": "amqp=WARN,amqplib=WARN,sqlalchemy=WARN,oslo.messaging=INFO,"
                                              "oslo_messaging=INFO,urllib3.connectionpool=WARN,stevedore=WARN,"
                                              "keystoneauth=WARN,glanceclient=WARN,oslo.privsep.daemon=INFO,"
                                              "nova.compute.resource_tracker=DEBUG"},
            "libvirt": {"connection_uri": self.env.uri, "virt_type": "qemu"},
        }
        # What `hpwarm stock nova-config` printed for this host's stock: a
        # [DEFAULT] reserved_huge_pages line, after the settings above (a
        # later line of the same option in the same file wins).
        write(self.conf, ini(compute) + self.nova_lines)

    def cli(self, *args, timeout=120):
        return tl.run([tl.CLI, "--url", "unix://" + self.env.sock] + list(args), timeout=timeout)

    def start_services(self):
        """hpwarmd and libvirtd with the hook (policy `hugepages` unless
        the cloud says otherwise for this host)."""
        # A Nova host's hugepages are Nova's totals: hpwarmd never changes
        # them (docs/OPENSTACK.md section 4, step 1).
        self.env.start_daemon(["--fixed-hugepages"])
        self.env.start_libvirt()
        self.env.write_hook_config(policy=self.cloud.policy.get(self.name, "hugepages"))

    def set_stock(self, targets):
        """Set the stock TARGETS, wait until they are ready, and keep the
        lines `hpwarm stock nova-config` prints for them."""
        for t in targets:
            r = self.cli("stock", "set", t)
            if r.returncode != 0:
                raise RuntimeError("hpwarm stock set %s: %s" % (t, r.stderr))
        deadline = time.monotonic() + 120
        while True:
            st = self.env.daemon.get("/v1/stock").json
            if all(t["ready"] == t["count"] for t in st["targets"]):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("stock not ready in 120 s: %s" % st)
            time.sleep(0.2)
        r = self.cli("stock", "nova-config")
        if r.returncode != 0:
            raise RuntimeError("hpwarm stock nova-config: %s" % r.stderr)
        self.nova_lines = r.stdout

    def start_compute(self):
        """nova-compute; up once its service row says so and Placement
        holds its compute node's provider."""
        self.write_conf()
        self.compute = self.cloud.nova.service("compute", [self.cloud.nova.conf, self.conf],
                                               "nova-compute-" + self.name)
        # Ready once its resource tracker wrote the host's resources (the
        # NUMA topology with the hugepages it read from libvirt) this life:
        # a restarted service's row says "up" from its last life for a
        # minute, and it is updated before the resources are.
        log = self.compute.log
        start = os.path.getsize(log) if os.path.exists(log) else 0

        def ready():
            with open(log, "rb") as f:
                f.seek(start)
                wrote = b"Final resource view" in f.read()
            return wrote and self.cloud.nova.service_up("nova-compute", self.name) \
                and self.cloud.placement.provider(self.name) is not None
        self.compute.start(ready, 240)

    def stop_compute(self):
        if self.compute:
            self.compute.stop()
            self.cloud.nova.procs.remove(self.compute)
            self.compute = None

    def start_sync(self):
        """`hpwarm placement sync --watch` for this host; up once the child
        provider of node 0 exists."""
        token = os.path.join(self.dir, "placement.token")
        write(token, "admin\n", 0o600)
        argv = [tl.CLI, "--url", "unix://" + self.env.sock, "placement", "sync", "--placement",
                self.cloud.placement.url, "--compute-node", self.name, "--token-file", token, "--watch"]
        self.sync = openstack.Process(self.dir, "placement-sync", argv, dict(os.environ))
        self.sync.start(lambda: self.cloud.placement.provider(self.name + "_hpwarm_numa0") is not None, 60)

    def stop(self):
        for p in (self.sync, self.compute):
            if p:
                p.stop()
        self.env.close()


class Cloud:
    """The whole cloud; a context manager that stops and removes all of it
    however the test ends.  HOSTS: names of the compute hosts; STOCK:
    {host: [stock target, ...]} ("0:2M:128M:1", as `hpwarm stock set`
    takes them), set and warmed before that host's nova-compute starts, and
    left out of Nova's hugepages by reserved_huge_pages, as
    docs/OPENSTACK.md §4 says; POLICY: {host: the hook's policy} where it
    is not `hugepages` (`metadata`: the hook leaves Nova's domains
    alone)."""

    def __init__(self, hosts, stock=None, policy=None, prefix="hpwarm-nova-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.tmp, 0o755)   # QEMU (libvirt-qemu) reads instance files below it
        self.rabbit = self.placement = self.glance = self.neutron = self.nova = None
        self.host_names = hosts
        self.stock = stock or {}
        self.policy = policy or {}
        self.hosts = {}

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self):
        self.rabbit = Rabbit(self.tmp).start()
        self.placement = openstack.Placement(self.tmp).start()
        self.glance = Glance(self.tmp).start()
        self.neutron = NeutronStub().start()
        self.nova = Controller(self.tmp, self.rabbit, self.placement, self.glance, self.neutron).start()
        for name in self.host_names:
            self.hosts[name] = Host(self, name)
        for h in self.hosts.values():
            h.start_services()
            h.set_stock(self.stock.get(h.name, []))
        for h in self.hosts.values():
            h.start_compute()
        self.nova.manage("cell_v2", "discover_hosts")
        for h in self.hosts.values():
            h.start_sync()

    def __exit__(self, *exc):
        # Servers first (their QEMUs hold pools), then the hosts, then the
        # control plane.
        for h in self.hosts.values():
            try:
                h.stop()
            except Exception as e:   # keep stopping the rest
                print("stopping host %s: %s" % (h.name, e), file=sys.stderr)
        for s in (self.nova, self.neutron, self.glance, self.placement, self.rabbit):
            if s:
                s.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- what a cloud user does --
    def guest_image(self, kernel, initrd):
        """The guest as Glance images: the kernel and the initramfs, and a
        1 MiB raw disk whose properties name them (Nova boots the kernel
        directly, console on the serial port it logs to console.log).
        All raw: Nova's image format checks pass on them as they are."""
        disk = os.path.join(self.tmp, "disk.raw")
        with open(disk, "wb") as f:
            f.truncate(1 << 20)
        kid = self.glance.upload("hpwarm-guest-kernel", kernel)
        rid = self.glance.upload("hpwarm-guest-initrd", initrd)
        return self.glance.upload("hpwarm-guest", disk, kernel_id=kid, ramdisk_id=rid,
                                  os_command_line="console=ttyS0 panic=-1 quiet")

    def flavor(self, name, ram_mib, extra_specs):
        f = self.nova.ok("POST", "/flavors", {"flavor": {"name": name, "ram": ram_mib, "vcpus": 1, "disk": 1}})
        self.nova.ok("POST", "/flavors/%s/os-extra_specs" % f["flavor"]["id"], {"extra_specs": extra_specs})
        return f["flavor"]["id"]

    def create(self, name, image, flavor, host=None):
        """POST /servers as a user does (no network); the server's id."""
        server = {"name": name, "imageRef": image, "flavorRef": flavor, "networks": "none"}
        if host:
            server["host"] = host   # an admin's choice of host (2.74); the filters still run
        return self.nova.ok("POST", "/servers", {"server": server})["server"]["id"]

    def server(self, sid):
        st, doc, _ = self.nova.req("GET", "/servers/" + sid)
        return doc["server"] if st == 200 else None

    def wait_settled(self, sid, timeout=240):
        """The server once it is ACTIVE or ERROR."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.server(sid)
            if s and s["status"] in ("ACTIVE", "ERROR"):
                return s
            time.sleep(0.2)
        raise AssertionError("server %s neither ACTIVE nor ERROR within %d s: %s" % (sid, timeout, self.server(sid)))

    def delete(self, sid, timeout=60):
        """DELETE the server and wait until it is gone.  A server still
        there after TIMEOUT is deleted once more, as an operator would (a
        delete that lost a sqlite write race in Nova leaves the server in
        ERROR), and said so on stderr; still there after that fails."""
        for attempt in (1, 2):
            st, doc, _ = self.nova.req("DELETE", "/servers/" + sid)
            if st not in (204, 404):
                raise AssertionError("delete %s: %d %s" % (sid, st, doc))
            deadline = time.monotonic() + timeout
            while self.server(sid) is not None:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            else:
                return
            s = self.server(sid) or {}
            print("server %s still there %d s after DELETE (%s, task %s, fault %s)%s" % (
                sid, timeout, s.get("status"), s.get("OS-EXT-STS:task_state"), (s.get("fault") or {}).get("message"),
                ": deleting again" if attempt == 1 else ""), file=sys.stderr)
        raise AssertionError("server %s still there after two DELETEs" % sid)

    def console(self, server):
        """What the guest wrote to its serial console so far."""
        path = os.path.join(self.hosts[server["OS-EXT-SRV-ATTR:host"]].dir, "instances", server["id"], "console.log")
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def logs(self, n=4000):
        """The tails of every service's log, for a failure's message."""
        out = []
        for root, _, files in os.walk(self.tmp):
            for f in files:
                if f.endswith((".log", ".out")) and "instances" not in root:
                    try:
                        with open(os.path.join(root, f), "rb") as fh:
                            fh.seek(0, 2)
                            fh.seek(max(0, fh.tell() - n))
                            out.append("--- %s\n%s" % (os.path.join(root, f), fh.read().decode(errors="replace")))
                    except OSError:
                        pass
        return "\n".join(out)
