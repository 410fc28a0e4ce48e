#!/usr/bin/env python3
"""The users example both ways over a real PostgreSQL: users.so (a blocking handler, libpq's
synchronous API, one connection per pool thread) against users_async.so (deferred replies,
libpq's async API in pipeline mode, one connection per event loop), on GET /csp/<name>/<id>.

Starts a PostgreSQL of its own (a fresh cluster in a temporary folder, a Unix socket there
only, run as the cspd-test user when we are root) and a cspd serving both handlers, seeds
rows, checks both answer them, then runs wrk (-t2 -c64 --latency) against each. Prints a
markdown table. Loopback only; bounded by wrk's durations; stops everything it started.

    python3 bench/users.py [--build build] [--seconds 10]
"""
import argparse
import os
import pwd
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, wrk, work_folder

PORT = 18892
PG_PORT = 18893  # names the socket in our own folder only: nothing listens on it
OS_USER = "cspd-test"  # PostgreSQL refuses root; .ci/setup creates this user
ROWS = 1000


def pg_bin():
    out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
    candidates = [Path(out.stdout.strip())] if out.returncode == 0 else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    for bin_dir in candidates:
        if (bin_dir / "initdb").exists() and (bin_dir / "pg_ctl").exists():
            return bin_dir
    raise RuntimeError("no initdb/pg_ctl: apt-get install postgresql")


class Postgres:
    """A throwaway cluster in `work`, on a Unix socket there; `with` stops it."""

    def __init__(self, work):
        self.bin, self.dir, self.data = pg_bin(), work, work / "data"
        self.as_user = []
        if os.geteuid() == 0:
            user = pwd.getpwnam(OS_USER)  # KeyError: run .ci/setup
            os.chown(work, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", OS_USER, "--"]
        self.run("initdb", "-D", self.data, "-U", "cspd", "--auth=trust", "--no-sync", "--encoding=UTF8",
                 "--locale=C", "--no-instructions")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{work}'\nport = {PG_PORT}\n"
                       "max_connections = 200\nfsync = off\nsynchronous_commit = off\n")
        self.run("pg_ctl", "-D", self.data, "-l", work / "postgres.log", "-w", "-t", "60", "start")
        self.env = {"PGHOST": str(work), "PGPORT": str(PG_PORT), "PGUSER": "cspd", "PGDATABASE": "postgres"}

    def run(self, program, *args):
        subprocess.run([*self.as_user, str(self.bin / program), *map(str, args)], cwd=self.dir, check=True,
                       stdout=subprocess.DEVNULL)

    def sql(self, text):
        subprocess.run([str(self.bin / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-c", text],
                       env={**os.environ, **self.env}, check=True, stdout=subprocess.DEVNULL)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")


def handler(build, name, out):
    """The in-tree build's copy of examples/NAME.c, or one compiled now."""
    built = build / "test-handlers/examples" / f"{name}.so"
    if built.exists():
        shutil.copy(built, out)
        return
    include = subprocess.run(["pg_config", "--includedir"], capture_output=True, text=True).stdout.strip()
    build_handler(ROOT / "examples" / f"{name}.c", out, ["-I", include or "/usr/include/postgresql", "-lpq"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="a build folder with cspd")
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    names = ["users", "users_async"]

    work = work_folder("cspd-users-bench-")
    handlers = work / "handlers"
    handlers.mkdir()
    for name in names:
        handler(args.build, name, handlers / f"{name}.so")
    results = {}
    try:
        with Postgres(work) as pg:
            pg.sql("CREATE TABLE IF NOT EXISTS users(id bigserial primary key, name text not null, email text not null);"
                   f"INSERT INTO users(name, email) SELECT 'user' || i, 'user' || i || '@example.org'"
                   f" FROM generate_series(1, {ROWS}) i")
            server = subprocess.Popen([str((args.build / "cspd").resolve()), "--port", str(PORT), "--bind",
                                       "127.0.0.1", "--workers", "1", "--handlers", str(handlers), "--www",
                                       str(ROOT / "www"), "--log-level", "warn"], env={**os.environ, **pg.env})
            try:  # cspd stops first: the database going away under it would be logged
                wait_for_port(PORT)
                target = ROWS // 2
                for name in names:
                    url = f"http://127.0.0.1:{PORT}/csp/{name}/{target}"
                    body = urllib.request.urlopen(url, timeout=5).read().decode()
                    expected = f'{{"id":{target},"name":"user{target}","email":"user{target}@example.org"}}'
                    if body != expected:
                        raise RuntimeError(f"{url} answered {body!r}, not {expected!r}")
                    wrk(url, seconds=2)  # warm-up: connections opened, plans cached
                    results[name] = wrk(url, seconds=args.seconds)
            finally:
                server.terminate()
                server.wait(15)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    sync, asynchronous = results["users"], results["users_async"]
    print(f"GET /csp/<name>/{ROWS // 2}, wrk -t2 -c64 -d{args.seconds}s --latency, cspd --workers 1 "
          f"(default threads), {os.cpu_count()} CPUs shared by wrk, cspd and PostgreSQL\n")
    print("| handler | req/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---:|---:|---:|---:|")
    for name, label in (("users", "users (blocking, libpq sync)"), ("users_async", "users_async (deferred, pipeline)")):
        r = results[name]
        print(f"| {label} | {r['rps']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['non_2xx']} |")
    print(f"\nasync/sync: req/s {asynchronous['rps'] / sync['rps']:.2f}x, p50 {asynchronous['p50'] / sync['p50']:.2f}x, "
          f"p99 {asynchronous['p99'] / sync['p99']:.2f}x")


if __name__ == "__main__":
    main()
