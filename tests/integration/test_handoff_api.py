"""GET /v1/handoff against the fixture daemon: every refusal the route has
before it reaches a pool (bad or missing vmm, empty, malformed, duplicate or
too many names: 422 invalid-field; an unknown pool: 404 pool-not-found;
another method: 405).  The 200 answers and 409 pool-not-ready need real
pools and are checked on the real kernel by tests/qemu/handoff_boot.py."""
from hpwtest import Daemon, TestCase, main


class HandoffApi(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon().start()

    @classmethod
    def tearDownClass(cls):
        cls.d.__exit__()

    def get(self, query):
        return self.d.get("/v1/handoff" + query)

    def test_vmm_must_be_known(self):
        for q in ("?pools=a", "?vmm=&pools=a", "?vmm=xen&pools=a", "?vmm=QEMU&pools=a", "?vmm=ch&pools=a",
                  "?vmm=qemu%20&pools=a"):
            r = self.get(q)
            self.assertProblem(r, 422, "invalid-field")
            self.assertIn("vmm", r.json["detail"], q)

    def test_pools_must_be_given(self):
        for q in ("?vmm=qemu", "?vmm=qemu&pools=", ""):
            self.assertProblem(self.get(q), 422, "invalid-field")

    def test_names_must_be_pool_names(self):
        for q in ("pools=a,,b", "pools=,a", "pools=a,", "pools=.a", "pools=a/b", "pools=a%2Fb",
                  "pools=a%20b", "pools=" + "x" * 65, "pools=-a"):
            r = self.get("?vmm=qemu&" + q)
            self.assertProblem(r, 422, "invalid-field")

    def test_duplicate_names(self):
        r = self.get("?vmm=libvirt&pools=a,b,a")
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn('"a" is named twice', r.json["detail"])

    def test_at_most_64_pools(self):
        names = ["p%d" % i for i in range(65)]
        r = self.get("?vmm=qemu&pools=" + ",".join(names))
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn("at most 64", r.json["detail"])
        # 64 distinct names pass the list checks and reach the registry.
        self.assertProblem(self.get("?vmm=qemu&pools=" + ",".join(names[:64])), 404, "pool-not-found")

    def test_unknown_pool_is_404(self):
        for vmm in ("qemu", "cloud-hypervisor", "libvirt"):
            r = self.get("?vmm=%s&pools=vm-none" % vmm)
            self.assertProblem(r, 404, "pool-not-found")
            self.assertIn('"vm-none"', r.json["detail"])
        # A form encoder's %2C separates like a comma.
        r = self.get("?vmm=qemu&pools=vm-x%2Cvm-y")
        self.assertProblem(r, 404, "pool-not-found")
        self.assertIn('"vm-x"', r.json["detail"])

    def test_as_lists_are_checked_like_pools(self):
        # as= follows the pools= grammar; the pools are looked up first, so
        # a well-formed as= over unknown pools answers 404.
        for q in ("as=", "as=a,,b", "as=.a", "as=a/b", "as=" + "x" * 65):
            r = self.get("?vmm=qemu&pools=a,b&" + q)
            self.assertProblem(r, 422, "invalid-field")
            self.assertIn("as", r.json["detail"], q)
        r = self.get("?vmm=qemu&pools=a,b&as=s,s")
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn('"s" is named twice', r.json["detail"])
        self.assertProblem(self.get("?vmm=qemu&pools=a,b&as=s-a,s-b"), 404, "pool-not-found")

    def test_as_needs_one_source_per_pool(self):
        for q in ("pools=a,b&as=s", "pools=a&as=s,t"):
            r = self.get("?vmm=libvirt&" + q)
            self.assertProblem(r, 422, "invalid-field")
            self.assertIn("one source per pool", r.json["detail"])

    def test_as_is_refused_for_cloud_hypervisor(self):
        r = self.get("?vmm=cloud-hypervisor&pools=a&as=s")
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn("take every memory zone", r.json["detail"])

    def test_other_methods_405(self):
        r = self.d.request("POST", "/v1/handoff?vmm=qemu&pools=a")
        self.assertProblem(r, 405, "method-not-allowed")
        self.assertEqual(r.headers.get("allow"), "GET, HEAD")

    def test_changes_nothing(self):
        before = self.d.get("/v1/pools").json
        self.get("?vmm=qemu&pools=a,a")
        self.get("?vmm=qemu&pools=a")
        self.assertEqual(self.d.get("/v1/pools").json, before)


if __name__ == "__main__":
    main()
