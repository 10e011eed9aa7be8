"""This host's network interfaces: their IPv4 addresses, and which one holds an address.

A job across hosts needs both: node 0's certificate names every address it may be reached by,
and each node's gloo sockets (the checks' and the training's) must bind the interface the
other nodes reach it on; gloo otherwise binds the address its host name resolves to, which
on many hosts (Debian's `127.0.1.1`, a network namespace) no other node can reach.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct

_SIOCGIFADDR = 0x8915  # linux/sockios.h: an interface's IPv4 address


def interface_addresses() -> dict[str, str]:
    """Each interface that has an IPv4 address -> that address (Linux; {} elsewhere)."""
    out: dict[str, str] = {}
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return out
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, request)
            except OSError:
                continue  # no IPv4 address on it
            out[name] = socket.inet_ntoa(answer[20:24])
    return out


def interface_of(address: str) -> str | None:
    """The interface holding IPv4 `address` here (None: none does, or not an IPv4)."""
    try:
        wanted = str(ipaddress.IPv4Address(address))
    except ValueError:
        return None
    for name, held in interface_addresses().items():
        if held == wanted:
            return name
    return None


def resolve(host: str) -> str:
    """`host`'s IPv4 address (itself when it is one); OSError when it does not resolve."""
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    return str(infos[0][4][0])
