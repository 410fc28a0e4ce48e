"""What the single-purpose benchmarks in bench/ share: building a handler from source,
waiting for a server to listen, and reading wrk's figures."""
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def work_folder(prefix):
    """A fresh temporary folder for a run, open to other accounts: started as root, cspd runs its
    workers as nobody, who must reach the handlers and www folders made inside it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o755)
    return path


def build_handler(source, output, flags=()):
    """Compiles one C handler source against the SDK in this tree (`flags`: more, e.g. -lpq)."""
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-I", str(ROOT / "sdk/include"),
                    str(source), "-o", str(output), "-lpthread", *flags], check=True)


def wait_for_port(port, seconds=10):
    """Returns once 127.0.0.1:port accepts connections (and half a second more, for the workers)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise RuntimeError(f"nothing listens on port {port}")
    time.sleep(0.5)


def wrk(url, threads=2, connections=64, seconds=10, cpu=None):
    """Runs wrk --latency against url (pinned to `cpu` if given): requests/s, p50 and p99 in ms, and
    the non-2xx/3xx count."""
    pin = ["taskset", "-c", cpu] if cpu else []
    out = subprocess.run([*pin, "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout

    def ms(percent):
        m = re.search(rf"^\s*{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": ms(50), "p99": ms(99),
            "non_2xx": int(bad.group(1)) if bad else 0}
