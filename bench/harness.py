"""What the single-purpose benchmarks in bench/ share: building a handler from source and
waiting for a server to listen."""
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_handler(source, output):
    """Compiles one C handler source against the SDK in this tree."""
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-I", str(ROOT / "sdk/include"),
                    str(source), "-o", str(output), "-lpthread"], check=True)


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
