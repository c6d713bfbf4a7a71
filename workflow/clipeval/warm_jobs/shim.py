"""The `python` first on a warm run's job PATH: a clipeval job goes to the server its manager names, anything
else (and any job when no server answers) to the real interpreter. It starts with -I -S and imports only what
Python's own start has loaded, so that it costs milliseconds."""

from pathlib import Path

TEMPLATE = r"""#!{python} -IS
import json, os, socket, sys

args = sys.argv[1:]


def server_for_job():
    if args[:2] != ["-m", "clipeval"]:
        return None
    job = {{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as manager:
            manager.connect({manager!r})
            manager.send(json.dumps(job).encode())
            server = manager.recv(4096).decode()
        if not server:
            return None
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.connect(server)
        socket.send_fds(connection, [json.dumps(job).encode()], [0, 1, 2])
        return connection if connection.recv(16) == b"started" else None
    except OSError:
        return None


connection = server_for_job()
if connection is None:
    os.execv({python!r}, [{python!r}, *args])
status = connection.recv(16)
sys.exit(int(status) if status else 128 + 9)
"""


def write_shim(folder: Path, python: str, manager_socket: str) -> Path:
    """folder/python, the shim for this interpreter and manager."""
    shim = folder / "python"
    shim.write_text(TEMPLATE.format(python=python, manager=manager_socket))
    shim.chmod(0o755)
    return shim
