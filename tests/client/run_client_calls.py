#!/usr/bin/env python3
"""client.lib_calls: start a fake hpwarmd for test_client_calls.c, pass its
URL (FAKE_URL) and the file it logs every request to before answering it
(FAKE_LOG: one "METHOD PATH" line each, so a count read after an answer is
exact), and run it.

Usage: run_client_calls.py COMMAND [ARG...]  (test_client_calls; client.install
runs install_check.sh through it too)"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server as fs  # noqa: E402


def main():
    srv = fs.start_tcp()
    with tempfile.TemporaryDirectory(prefix="hpw-calls-") as tmp:
        srv.state.log_file = os.path.join(tmp, "log")
        open(srv.state.log_file, "w").close()
        env = dict(os.environ, FAKE_URL=srv.url, FAKE_LOG=srv.state.log_file)
        try:
            return subprocess.run(sys.argv[1:], env=env, timeout=240).returncode
        finally:
            srv.shutdown()
            srv.server_close()


if __name__ == "__main__":
    sys.exit(main())
