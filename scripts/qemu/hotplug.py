#!/usr/bin/python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""Drives QEMU's hot-plug from the host for scripts/qemu-test.sh's unplug line.

    hotplug.py SERIAL_LOG QMP_SOCKET DEVICE_ID BUS

Follows the guest's console log; on "@@VREX UNPLUG-REQUEST" it sends QMP device_del for DEVICE_ID
and waits for QEMU's DEVICE_DELETED event, on "@@VREX REPLUG-REQUEST" it sends device_add of a
vrex-pci with that id on BUS. Stops at "@@VREX DONE", when QEMU goes away, or after 20 minutes.
Every step and every QMP event is logged on stdout with its time.

The unplug is the PCIe native one: device_del presses the slot's attention button, the guest's
pciehp waits its 5 s, unbinds vrex.ko, removes the function and powers the slot off; QEMU then
unrealizes the device and emits DEVICE_DELETED when the object is finalized. A reference the
device model keeps on itself delays that forever (qemu/hw/vrex/vrex-pci.c drops its BAR2
subregion at exit for this reason): the symptom is a guest that removed the function and an event
that never comes, until QEMU exits at the guest's poweroff and closes this socket.
"""
from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any


class Qmp:
    def __init__(self, path: str, wait_s: float = 60.0) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.buf = b""
        self.events: list[dict[str, Any]] = []
        self.recv()  # greeting
        self.execute("qmp_capabilities")

    def recv(self, timeout: float = 60.0) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QMP socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, cmd: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"execute": cmd}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self.recv()
            if "event" in reply:
                self.on_event(reply)
                continue
            if "error" in reply:
                raise RuntimeError(f"{cmd}: {reply['error']}")
            return reply

    def on_event(self, ev: dict[str, Any]) -> None:
        print(f"event {ev.get('event')} {ev.get('data', {})}", flush=True)
        self.events.append(ev)

    def wait_event(self, name: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev["event"] == name:
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {name} event within {timeout} s")
            self.on_event(self.recv(left))


def log(t0: float, msg: str) -> None:
    print(f"[{time.monotonic() - t0:7.2f}] {msg}", flush=True)


def main() -> int:
    serial, sock_path, dev_id, bus = sys.argv[1:5]
    t0 = time.monotonic()
    qmp = Qmp(sock_path)
    log(t0, "QMP connected")
    pos = 0
    pending = ""
    while time.monotonic() - t0 < 1200:
        try:
            with open(serial, "rb") as f:
                f.seek(pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        pos += len(data)
        pending += data.decode(errors="replace")
        *lines, pending = pending.split("\n")
        for line in lines:
            if "@@VREX UNPLUG-REQUEST" in line:
                log(t0, f"device_del {dev_id}")
                qmp.execute("device_del", {"id": dev_id})
                ev = qmp.wait_event("DEVICE_DELETED", 90)
                log(t0, f"DEVICE_DELETED {ev.get('data', {})}")
            elif "@@VREX REPLUG-REQUEST" in line:
                log(t0, f"device_add vrex-pci id={dev_id} bus={bus}")
                qmp.execute("device_add", {"driver": "vrex-pci", "id": dev_id, "bus": bus})
            elif "@@VREX DONE" in line:
                log(t0, "guest done")
                return 0
        time.sleep(0.1)
    log(t0, "timed out")
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, TimeoutError, ConnectionError) as e:
        print(f"hotplug: {e}", flush=True)
        sys.exit(1)
