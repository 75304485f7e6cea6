"""A throwaway PostgreSQL server for the apply tour (``make postgres``) and the tests.

Debian's ``postgresql`` package (``make postgres`` installs it when missing), a
data folder of its own, a Unix socket in that folder and no TCP port; trust
authentication for the superuser ``postgres``, so the connection string is
``host=<folder> dbname=<database> user=postgres``. As root, the server runs
as the package's ``postgres`` user (``initdb`` refuses root). Standard
library only: it runs before any virtualenv exists.

    python3 examples/postgres/local_server.py start FOLDER [--database NAME]
    python3 examples/postgres/local_server.py stop FOLDER
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys

SUPERUSER = "postgres"
SOCKET = ".s.PGSQL.5432"
SOCKET_PATH_LIMIT = 107  # bytes of a Unix socket's path (sun_path less its terminating byte)


def server_binaries() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (Debian's postgresql package): `make postgres` installs it")
    return os.path.dirname(found[-1])


class PostgresServer:
    """A server in ``folder`` (made if need be): data in ``folder/data``, its socket in ``folder``."""

    def __init__(self, folder: str) -> None:
        self.bin = server_binaries()
        self.folder = os.path.abspath(folder)
        self.data = os.path.join(self.folder, "data")
        if len(os.path.join(self.folder, SOCKET).encode()) > SOCKET_PATH_LIMIT:
            raise RuntimeError(f"{self.folder}: too long a path for a Unix socket; choose a shorter folder")

    def _as_owner(self, *argv: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else list(argv)

    def running(self) -> bool:
        if not os.path.isdir(self.data):
            return False
        status = subprocess.run(self._as_owner(f"{self.bin}/pg_ctl", "-D", self.data, "status"),
                                capture_output=True, cwd=self.folder)
        return status.returncode == 0

    def start(self) -> "PostgresServer":
        os.makedirs(self.folder, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, user="postgres")
        if not os.path.isdir(self.data):
            subprocess.run(self._as_owner(f"{self.bin}/initdb", "-D", self.data, "--auth=trust", "-U", SUPERUSER,
                                          "--no-sync"), check=True, capture_output=True, cwd=self.folder)
        if not self.running():
            options = f"-c listen_addresses='' -k {self.folder} -c fsync=off -c synchronous_commit=off " \
                      "-c full_page_writes=off -c max_connections=200"
            subprocess.run(self._as_owner(f"{self.bin}/pg_ctl", "-D", self.data, "-o", options, "-l",
                                          os.path.join(self.folder, "server.log"), "-w", "start"),
                           check=True, capture_output=True, cwd=self.folder)
        return self

    def stop(self) -> None:
        if os.path.isdir(self.data):
            subprocess.run(self._as_owner(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "immediate", "stop"),
                           capture_output=True, cwd=self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.folder} dbname={database} user={SUPERUSER}"

    def create_database(self, name: str, fresh: bool = False) -> str:
        """The database ``name`` (emptied first when ``fresh``); its connection string."""
        def sql(statement: str, check: bool = True) -> subprocess.CompletedProcess:
            return subprocess.run([f"{self.bin}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(),
                                   "-c", statement], capture_output=True, text=True, check=check)
        quoted = '"' + name.replace('"', '""') + '"'
        if fresh:
            sql(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        if fresh or name not in sql("SELECT datname FROM pg_database", check=True).stdout.split():
            sql(f"CREATE DATABASE {quoted}")
        return self.dsn(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A throwaway PostgreSQL server on a Unix socket in FOLDER.")
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("folder")
    parser.add_argument("--database", default="flipper", help="created on start if missing (default: flipper)")
    args = parser.parse_args(argv)
    try:
        server = PostgresServer(args.folder)
        if args.action == "stop":
            server.stop()
            print(f"stopped the server in {server.folder} and removed the folder")
            return 0
        dsn = server.start().create_database(args.database)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as error:
        detail = getattr(error, "stderr", None)
        detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else detail
        print(f"local_server: {error}" + (f": {detail.strip().splitlines()[-1]}" if detail else ""), file=sys.stderr)
        return 1
    print(f"PostgreSQL is running in {server.folder} (log: {server.folder}/server.log); for the tour:")
    print(f'export DIRTINESS_DSN="{dsn}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
