"""A real SSH server for the remote tests: Debian's ``sshd`` on 127.0.0.1, in a temp folder.

:func:`start_sshd` writes a throwaway host key, a client key authorized for the current
user and a config (``UsePAM no``, ``StrictModes no``, ``Subsystem sftp internal-sftp``),
then starts ``sshd -D`` on a free port and waits until it answers.  ``benchmarks/bench_fetch.py``
starts one, and so does the tests' ``sshd`` fixture (``tests/conftest.py``, session scope).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: How a command runs: ``sh(*args, cwd=...)`` (stdout and stderr; fails on a non-zero exit).
Run = Callable[..., str]

#: A child's environment: this venv's bin first on PATH, a git identity, no DVC analytics.
ENV = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep
       + os.environ.get("PATH", ""),
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com",
       "DVC_NO_ANALYTICS": "1"}


def sh(*args: str | Path, cwd: Path) -> str:
    """Run a command in ``cwd`` with ``ENV``; its stdout and stderr (raises on failure, so a
    broken setup step stops the caller at once)."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout + proc.stderr

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


@dataclass
class Sshd:
    """A running server: where it listens, who may log in, and with which key."""

    host: str
    port: int
    user: str
    keyfile: Path
    known_hosts: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def url(self, path: Path | str) -> str:
        """The ``ssh://`` URL of an absolute folder on this server."""
        return f"ssh://{self.user}@{self.host}:{self.port}{Path(path).as_posix()}"

    def stop(self) -> None:
        """Stop the server (terminate, then kill if it lingers)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def find_sshd() -> str | None:
    """The sshd binary, or None."""
    found = shutil.which("sshd")
    if found:
        return found
    return next((c for c in SSHD_CANDIDATES if os.access(c, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dvc-cuvis-test",
                    "-f", str(path)], check=True, capture_output=True)


def start_sshd(folder: Path, sshd: str) -> Sshd:
    """Start ``sshd`` with a fresh host key and an authorized client key under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    host_key, client_key = folder / "host_ed25519", folder / "client_ed25519"
    _keygen(host_key)
    _keygen(client_key)
    authorized = folder / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text())
    authorized.chmod(0o600)
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation folder
    log = folder / "sshd.log"
    for _attempt in range(5):  # another process may take the free port first
        port = _free_port()
        config = folder / "sshd_config"
        config.write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
            f"AuthorizedKeysFile {authorized}", f"PidFile {folder / 'sshd.pid'}",
            "UsePAM no", "StrictModes no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", "Subsystem sftp internal-sftp",
            "MaxStartups 100:30:200", "MaxSessions 100", "LogLevel ERROR", ""]))
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)],
                                stdout=subprocess.DEVNULL, stderr=log.open("ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                    if conn.recv(4).startswith(b"SSH-"):
                        break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            known = folder / "known_hosts"
            pub = Path(f"{host_key}.pub").read_text().split()
            known.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
            return Sshd("127.0.0.1", port, getpass.getuser(), client_key, known, proc, log)
    raise RuntimeError(f"sshd did not start: {log.read_text(errors='replace')[-2000:]}")


# -- a dataset repository whose data lives on the SSH remote --------------------------------


def use_remote(repo: Path, server: Sshd, folder: Path, *, run: Run = sh) -> None:
    """``store`` = the SSH remote at ``folder`` (URL committed, the key in config.local)."""
    run("dvc", "remote", "add", "-f", "-d", "store", server.url(folder), cwd=repo)
    run("dvc", "remote", "modify", "--local", "store", "keyfile", server.keyfile, cwd=repo)


def make_dataset_repo(root: Path, server: Sshd, remote: Path, *, sessions: int = 10,
                      frames: int = 4, extra_sessions: int = 0, run: Run = sh) -> Path:
    """A git + DVC dataset repo (npz), data tracked, pipeline run, committed and pushed
    (each command through ``run``: the tests run ``dvc`` in their own process)."""
    from examples.generate import generate

    root.mkdir(parents=True)
    run("git", "init", "-q", "-b", "main", cwd=root)
    run("dvc", "init", "-q", cwd=root)
    generate(root / "data", sessions=sessions, frames=frames, size=(8, 8), bands=4, seed=3,
             extra_sessions=extra_sessions)
    shutil.rmtree(root / "data" / "tiff")
    run("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    run("dvc", "repro", cwd=root)
    use_remote(root, server, remote, run=run)
    run("git", "add", "-A", cwd=root)
    run("git", "commit", "-qm", "dataset v1", cwd=root)
    run("dvc", "push", cwd=root)
    return root


def clone(repo: Path, dest: Path, server: Sshd, *, run: Run = sh) -> Path:
    """A fresh ``git clone`` at another path, its key configured, nothing pulled."""
    run("git", "clone", "-q", repo, dest, cwd=repo.parent)
    run("dvc", "remote", "modify", "--local", "store", "keyfile", server.keyfile, cwd=dest)
    return dest
