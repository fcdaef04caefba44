"""The drip attack on the model worker, run as a process of its own (no token):

    python drip_attack.py PORT CONNECTIONS EVERY_S SECONDS

keeps CONNECTIONS connections open to 127.0.0.1:PORT, each sending the start of a request one
byte every EVERY_S seconds; a connection the worker closes is opened again at once. Prints one
line `ready` once all are open, and after SECONDS (or SIGTERM) one JSON line: how many
connections were opened, how many the worker closed, and the longest any lived before the worker
closed it (seconds).
"""
from __future__ import annotations

import json
import signal
import socket
import sys
import time

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nX-Drip: " + b"a" * 4096


class Drip:
    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.opened = time.monotonic()
        self.sent = 0

    def step(self) -> bool:
        """Send one more byte; False when the worker has closed the connection."""
        try:
            if self.sock.recv(65536, socket.MSG_PEEK) == b"":
                return False
            return False                       # it answered (an error): it is done with us
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            self.sock.send(HEAD[self.sent % len(HEAD):][:1])
            self.sent += 1
            return True
        except OSError:
            return False


def main() -> int:
    port, count, every_s, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), \
        float(sys.argv[4])
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    drips = [Drip(port) for _ in range(count)]
    opened, closed, longest = count, 0, 0.0
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while not stop[0] and time.monotonic() < end:
        for i, drip in enumerate(drips):
            if not drip.step():
                closed += 1
                longest = max(longest, time.monotonic() - drip.opened)
                drip.sock.close()
                try:
                    drips[i] = Drip(port)
                except OSError:                # the worker is gone: nothing left to attack
                    stop[0] = True
                    break
                opened += 1
        time.sleep(every_s)
    for drip in drips:
        drip.sock.close()                      # (one may be closed already: closing is harmless)
    print(json.dumps({"opened": opened, "closed_by_worker": closed, "longest_s": round(longest, 2)}),
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
