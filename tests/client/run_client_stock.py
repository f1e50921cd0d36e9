#!/usr/bin/env python3
"""client.lib_stock: start the fake daemons test_client_stock.c needs (one
with stock, one without, four whose /v1/stock answer is hostile or fixed, and a dead
port), pass their URLs in the environment and run it.

Usage: run_client_stock.py PATH/TO/test_client_stock"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server as fs  # noqa: E402

HOSTILE = {
    "FAKE_MALFORMED": b'{"targets":[{"node":0',
    "FAKE_MISSING": b'{"targets":[{"node":0,"page_size_bytes":2097152,"count":1,"ready":1}]}',
    "FAKE_HUGE": b'{"targets":[{"node":0,"page_size_bytes":2097152,"size_bytes":8388608,"count":1e300,'
                 b'"ready":1}]}',
    "FAKE_BADGEN": b'{"generation":-1,"targets":[]}',
    "FAKE_GEN": b'{"generation":42,"targets":[]}',
}


def main():
    servers = {"FAKE_GOOD": fs.start_tcp(), "FAKE_OLD": fs.start_tcp(stock=None)}
    for var, body in HOSTILE.items():
        servers[var] = fs.start_tcp()
        servers[var].state.raw["/v1/stock"] = body
    env = dict(os.environ, FAKE_DEAD="http://127.0.0.1:%d" % fs.dead_port(),
               **{var: s.url for var, s in servers.items()})
    try:
        return subprocess.run([sys.argv[1]], env=env, timeout=120).returncode
    finally:
        for s in servers.values():
            s.shutdown()
            s.server_close()


if __name__ == "__main__":
    sys.exit(main())
