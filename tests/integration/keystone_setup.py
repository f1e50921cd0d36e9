"""What keystone-manage does to a fresh Keystone, in one process: db_sync,
fernet_setup, credential_setup and bootstrap (admin user, project, role,
region and identity endpoint).  Four keystone-manage runs import
Keystone four times, seconds each on a loaded machine; one process
imports it once.  Usage (openstack.py): keystone_setup.py CONFIG PASSWORD
PUBLIC_URL; the password comes on stdin instead when PASSWORD is "-"."""
import sys

from keystone.cmd import cli


def main():
    conf, password, url = sys.argv[1:4]
    if password == "-":
        password = sys.stdin.readline().strip()
    base = ["keystone-manage", "--config-file", conf]
    for step in (["db_sync"],
                 ["fernet_setup", "--keystone-user", "root", "--keystone-group", "root"],
                 ["credential_setup", "--keystone-user", "root", "--keystone-group", "root"],
                 ["bootstrap", "--bootstrap-password", password, "--bootstrap-public-url", url,
                  "--bootstrap-region-id", "RegionOne"]):
        # Each run parses its own command line: forget the last one's.
        cli.CONF.clear()
        cli.main(argv=base + step)


if __name__ == "__main__":
    main()
