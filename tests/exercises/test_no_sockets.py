"""A submission opens no socket, from before its modules are imported. Its session talks to the
grader over the pipes it was started with; where there is no network namespace (a container
without unshare, as Gradescope's may be) a socket reaches the host and the internet, and an
oracle there can compute the answers with the released model. Python's sockets are refused by
an audit hook, and the socket syscall by a seccomp filter, so a foreign-function call the
submission resolves at import gets no socket either."""
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "exercises" / "ch05_idle" / "idle.py"

PY_SOCKET = '''
import socket
import encodings.idna            # loaded at import: connect() encodes host names with it


def _ask(msg):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect((b"127.0.0.1", PORT))
    s.sendall(msg.encode() + b"\\n")
    data = s.recv(4096).decode()
    s.close()
    return data
'''

LIBC_SOCKET = '''
import ctypes
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_socket, _connect, _send, _recv = _libc.socket, _libc.connect, _libc.send, _libc.recv
_BUF = ctypes.create_string_buffer(4096)          # everything ctypes needs, made at import


def _ask(msg):
    fd = _socket(2, 1, 0)
    if fd < 0:
        raise OSError("socket() refused")
    addr = struct.pack("=H", 2) + struct.pack("!H4s8x", PORT, bytes([127, 0, 0, 1]))
    if _connect(fd, addr, len(addr)) != 0:
        raise OSError("connect() failed")
    data = msg.encode() + b"\\n"
    _send(fd, data, len(data), 0)
    return _BUF.raw[:_recv(fd, _BUF, 4096, 0)].decode()
'''

ASKS = '''

def exposed_softmax(tensor, sfu, t0, t1):
    return float(_ask(repr((tensor, sfu, t0, t1))))
'''


@pytest.fixture
def oracle():
    """A TCP server on the host's loopback that answers exposed_softmax with the solution."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("oracle_idle", SOLUTION)
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    served = []

    def loop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                line = conn.makefile().readline()
                served.append(line)
                conn.sendall(repr(sol.exposed_softmax(*eval(line))).encode())  # noqa: S307
    threading.Thread(target=loop, daemon=True).start()
    yield srv.getsockname()[1], served
    srv.close()


@pytest.mark.parametrize("how", [PY_SOCKET, LIBC_SOCKET], ids=["python", "libc"])
def test_an_oracle_over_the_network_answers_nothing(tmp_path, oracle, how):
    port, served = oracle
    (tmp_path / "idle.py").write_text(how.replace("PORT", str(port)) + ASKS)
    # the host's network, as without unshare (graded even where the uid drop cannot happen)
    env = {**os.environ, "EXERCISES_NO_NAMESPACES": "1", "EXERCISES_ALLOW_UNISOLATED": "1"}
    out = subprocess.run([sys.executable, "-m", "exercises", "grade", str(tmp_path), "--only",
                          "ch05_idle", "--test", "test_exposed_softmax_synthetic", "-v"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert "score 0/1" in text, text[-3000:]
    assert not served, f"the oracle was asked {len(served)} question(s)"


IO_URING = '''
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_params = ctypes.create_string_buffer(120)
_RING = _libc.syscall(425, 8, _params)        # io_uring_setup: a ring opens and connects sockets
_ERR = ctypes.get_errno()


def exposed_softmax(tensor, sfu, t0, t1):
    raise RuntimeError(f"io_uring_setup answered {_RING} errno {_ERR}")
'''


def test_no_io_uring_either(tmp_path):
    """An io_uring ring opens and connects sockets without the socket syscall: refused too."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("io_uring_setup is 425 on x86_64 and aarch64")
    (tmp_path / "idle.py").write_text(IO_URING)
    out = subprocess.run([sys.executable, "-m", "exercises", "grade", str(tmp_path), "--only",
                          "ch05_idle", "--test", "test_exposed_softmax_synthetic", "-v"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert "io_uring_setup answered -1 errno 1" in text, text[-3000:]
